package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoDaemonFromATestBinary: the in-process serve of a test is a test
// binary; starting a "daemon" from it would run the tests again, each
// starting another. It refuses, and a process started as a daemon never
// starts one either.
func TestNoDaemonFromATestBinary(t *testing.T) {
	cfg := config.Config{DBPath: t.TempDir() + "/accords.db"}
	err := startDaemon(context.Background(), cfg, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "test binary")

	t.Setenv("OPENAI_API_KEY", "sk-launcher-only")
	t.Setenv("TEAM_CATALOG_TOKEN", "team-token")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg.RemoteTokenEnvAllow = []string{"TEAM_CATALOG_TOKEN"}
	env := daemonEnv(cfg)
	assert.Contains(t, env, spawnedMarker+"=1", "a daemon is marked as started by a launch")
	assert.Contains(t, env, "TEAM_CATALOG_TOKEN=team-token", "an allowed source token goes with it")
	assert.Contains(t, env, "XDG_CONFIG_HOME="+os.Getenv("XDG_CONFIG_HOME"), "what the runtime reads goes with it")
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		assert.NotContains(t, []string{"VC_AGENT_TOKEN", "ACCORDS_MCP_READ_ONLY", "ACCORDS_MCP_TOOLSETS"}, k, "the launch's own settings stay with it")
		assert.NotEqual(t, "OPENAI_API_KEY", k, "other programs' credentials stay with the launch")
	}
}

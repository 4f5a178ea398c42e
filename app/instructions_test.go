package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The instructions an agent gets on connecting, by initialize (clients of
// 2025-11-25 and before) and by server/discover (2026-07-28), are the safe
// order of work from the routing registry, the one the skill has too.
func TestInstructionsGiveTheSafeOrderOfWork(t *testing.T) {
	t.Parallel()
	reg, err := routing.Default()
	require.NoError(t, err)
	for _, dynamic := range []bool{false, true} {
		cfg := testenv.Config(t)
		cfg.DynamicToolsets = dynamic
		a := testenv.Open(t, cfg)
		for _, version := range []string{"2025-11-25", ""} { // "": the SDK's latest, which discovers
			st, ct := mcp.NewInMemoryTransports()
			ss, err := a.MCPServer().Connect(context.Background(), st, nil)
			require.NoError(t, err)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
				Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err)
			got := cs.InitializeResult().Instructions
			assert.Equal(t, reg.Instructions(dynamic), got, "protocol %q", version)
			if version == "" {
				assert.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "server/discover answered")
			}
			_ = cs.Close()
			_ = ss.Wait()
		}
	}
	ins := reg.Instructions(true)
	assert.Less(t, len(ins), 1500, "a few lines")
	order := []string{"vaultclaw_route_resolve", "vaultclaw_template_render", "vaultclaw_connector_validate", "vaultclaw_connector_execute_job", "vaultclaw_approval_wait"}
	last := -1
	for _, tool := range order {
		i := strings.Index(ins, tool)
		require.Greater(t, i, last, "%s comes after the step before it", tool)
		last = i
	}
	assert.Contains(t, ins, "vaultclaw_toolset_enable")
	assert.NotContains(t, reg.Instructions(false), "vaultclaw_toolset_enable")
	files, err := reg.SkillFiles()
	require.NoError(t, err)
	for _, s := range reg.WorkOrder() {
		assert.Contains(t, string(files[routing.SkillFile]), s.What, "the skill has the same step")
	}
}

package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The composed server resolves registry routes against the seeded built-in
// catalog and falls back to its bleve index for everything else.
func TestRouteResolveWiredToCatalog(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	tool, ok := a.Registry.Lookup("vaultclaw_route_resolve")
	require.True(t, ok)
	resolve := func(text string) map[string]any {
		args, _ := json.Marshal(map[string]any{"request_text": text})
		env := tool.Invoke(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: args}}, nil)
		require.True(t, env.OK)
		raw, _ := json.Marshal(env.Data)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		return m
	}
	m := resolve("send email to a@b.com about the launch")
	assert.Equal(t, routing.StatusExecutable, m["status"])
	// The route's cookbook version is one the catalog actually holds.
	route := m["route"].(map[string]any)
	st, err := a.Catalog.Get(context.Background(), route["cookbook_id"].(string), route["version"].(string))
	require.NoError(t, err)
	assert.Equal(t, route["version"], st.Bundle.Version)

	// No registry route matches; the built-in entry is found in the index.
	m = resolve("untrash please")
	assert.Equal(t, routing.StatusMissingInputs, m["status"], m["reasons"])
	route = m["route"].(map[string]any)
	assert.Equal(t, "search", route["source"])
	assert.Equal(t, "gmail_tpl_plan_untrash_message_v1", route["entry_id"])
	assert.Equal(t, []any{"message_id"}, m["missing_inputs"])
}

package transport_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestSessionToolsInMemory(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	cs := mcptest.Connect(t, a.MCPServer(), nil)

	env := mcptest.Call(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, map[string]any{"configured": false}, mcptest.RequireOK(t, env))
	require.Equal(t, map[string]any{"request_id": "", "vault_http_status": 0.0, "vault_code": ""}, env.Meta)

	env = mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{"token": "tok_live_abcdef", "base_url": "http://127.0.0.1:8787", "timeout_ms": 5000})
	d := mcptest.RequireOK(t, env)
	require.Equal(t, "tok***def", d["token"])
	require.Equal(t, true, d["configured"])
	require.Equal(t, 5000.0, d["timeout_ms"])

	env = mcptest.Call(t, cs, "vaultclaw_session_status", nil)
	d = mcptest.RequireOK(t, env)
	require.Equal(t, "tok***def", d["token"])
	require.Equal(t, "http://127.0.0.1:8787", d["base_url"])

	env = mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{"token": 42})
	require.False(t, env.OK)
	require.Equal(t, "MCP_VALIDATION_ERROR", env.Error.Code)
	require.Equal(t, "token", env.Error.Details["field"])
	require.Nil(t, env.Data)

	env = mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{})
	require.Equal(t, "token is required", env.Error.Message)

	env = mcptest.Call(t, cs, "vaultclaw_session_clear", nil)
	require.Equal(t, map[string]any{"cleared": true}, mcptest.RequireOK(t, env))
	env = mcptest.Call(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, map[string]any{"configured": false}, mcptest.RequireOK(t, env))
}

func TestToolsListSortedWithSchemas(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_TOOLSETS=all"))
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, len(a.Gateway.Visible().Tools()))
	for i, tool := range res.Tools {
		if i > 0 {
			require.Less(t, res.Tools[i-1].Name, tool.Name)
		}
		require.NotNil(t, tool.OutputSchema)
		require.NotNil(t, tool.Annotations)
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	require.Error(t, err)
}

func TestHealthReportsBrokenDB(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	for _, p := range []string{"/healthz", "/v1/healthz"} {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, true, body["ok"])
		require.Equal(t, "accords-mcp", body["service"])
		require.NotEmpty(t, body["version"])
	}
	resp, err := http.Post(srv.URL+"/healthz", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	require.NoError(t, a.DB.Close())
	resp, err = http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, false, body["ok"])
}

// TestDefaultListLeavesEveryToolCallable: a default start lists the agent's
// tools only (D23), and a tool outside that list still answers by name.
func TestDefaultListLeavesEveryToolCallable(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, tool := range res.Tools {
		listed[tool.Name] = true
	}
	require.Len(t, listed, 21)
	require.False(t, listed["vaultclaw_catalog_sources_list"], "operator tools are not in the default list")
	env := mcptest.Call(t, cs, "vaultclaw_catalog_sources_list", nil)
	mcptest.RequireOK(t, env)
}

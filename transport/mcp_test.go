package transport_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// connect returns a client session talking to a over in-memory transports.
func connect(t *testing.T, a *app.App) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := a.MCPServer().Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close(); _ = ss.Wait() })
	return cs
}

// callEnv calls a tool and decodes its envelope, checking that structured
// content, the JSON text item and isError agree.
func callEnv(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) envelope.Envelope {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return decode(t, res)
}

func decode(t *testing.T, res *mcp.CallToolResult) envelope.Envelope {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var env envelope.Envelope
	require.NoError(t, json.Unmarshal(raw, &env))
	require.NotEmpty(t, res.Content)
	text := res.Content[0].(*mcp.TextContent).Text
	require.JSONEq(t, string(raw), text, "text content mirrors structured content")
	require.Equal(t, !env.OK, res.IsError)
	return env
}

func data(t *testing.T, env envelope.Envelope) map[string]any {
	t.Helper()
	require.True(t, env.OK, "unexpected failure: %+v", env.Error)
	m, ok := env.Data.(map[string]any)
	require.True(t, ok)
	return m
}

func TestSessionToolsInMemory(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	cs := connect(t, a)

	env := callEnv(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, map[string]any{"configured": false}, data(t, env))
	require.Equal(t, envelope.Meta{}, env.Meta)

	env = callEnv(t, cs, "vaultclaw_session_configure", map[string]any{"token": "tok_live_abcdef", "base_url": "http://127.0.0.1:8787", "timeout_ms": 5000})
	d := data(t, env)
	require.Equal(t, "tok***def", d["token"])
	require.Equal(t, true, d["configured"])
	require.Equal(t, 5000.0, d["timeout_ms"])

	env = callEnv(t, cs, "vaultclaw_session_status", nil)
	d = data(t, env)
	require.Equal(t, "tok***def", d["token"])
	require.Equal(t, "http://127.0.0.1:8787", d["base_url"])

	env = callEnv(t, cs, "vaultclaw_session_configure", map[string]any{"token": 42})
	require.False(t, env.OK)
	require.Equal(t, "MCP_VALIDATION_ERROR", env.Error.Code)
	require.Equal(t, "token", env.Error.Details["field"])
	require.Nil(t, env.Data)

	env = callEnv(t, cs, "vaultclaw_session_configure", map[string]any{})
	require.Equal(t, "token is required", env.Error.Message)

	env = callEnv(t, cs, "vaultclaw_session_clear", nil)
	require.Equal(t, map[string]any{"cleared": true}, data(t, env))
	env = callEnv(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, map[string]any{"configured": false}, data(t, env))
}

func TestToolsListSortedWithSchemas(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	cs := connect(t, a)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, len(a.Registry.Tools()))
	for i, tool := range res.Tools {
		if i > 0 {
			require.Less(t, res.Tools[i-1].Name, tool.Name)
		}
		require.NotNil(t, tool.OutputSchema)
		require.NotNil(t, tool.Annotations)
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	cs := connect(t, a)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	require.Error(t, err)
}

func TestHealthReportsBrokenDB(t *testing.T) {
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

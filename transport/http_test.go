package transport_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/require"
)

func TestHTTPStreamableClientAndTenantIsolation(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	tenantA := mcptest.ConnectHTTP(t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{Headers: map[string]string{"X-Accords-Tenant-Id": "tenant-a"}, StandaloneSSE: true})
	tenantB := mcptest.ConnectHTTP(t, srv.URL+"/mcp", mcptest.HTTPOptions{Headers: map[string]string{"X-Tenant-Id": "tenant-b"}, StandaloneSSE: true})
	// X-Accords-Tenant-Id wins over the other headers.
	tenantAViaPriority := mcptest.ConnectHTTP(t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{Headers: map[string]string{"X-Tenant-Id": "tenant-b", "X-Accords-Tenant-Id": "tenant-a"}, StandaloneSSE: true})
	noTenant := mcptest.ConnectHTTP(t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{StandaloneSSE: true})

	require.ElementsMatch(t, tools.Agent, mcptest.ToolNames(t, tenantA), "a start lists the agent's tools (D23)")

	env := mcptest.Call(t, tenantA, "vaultclaw_session_configure", map[string]any{"token": "secret-of-tenant-a"})
	require.True(t, env.OK)

	require.Equal(t, true, mcptest.RequireOK(t, mcptest.Call(t, tenantA, "vaultclaw_session_status", nil))["configured"])
	require.Equal(t, true, mcptest.RequireOK(t, mcptest.Call(t, tenantAViaPriority, "vaultclaw_session_status", nil))["configured"])
	require.Equal(t, false, mcptest.RequireOK(t, mcptest.Call(t, tenantB, "vaultclaw_session_status", nil))["configured"], "tenant B must not see A's session")
	require.Equal(t, false, mcptest.RequireOK(t, mcptest.Call(t, noTenant, "vaultclaw_session_status", nil))["configured"], "no header means the default scope")
}

func TestHTTPBareJSONPostWithoutInitialize(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	rep := mcptest.Post(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`, nil)
	require.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))
	require.Contains(t, rep.Header.Get("Content-Type"), "application/json")
	var rpc struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(rep.Body, &rpc), string(rep.Body))
	require.Equal(t, 7, rpc.ID)
	require.Equal(t, true, rpc.Result.StructuredContent["ok"])
	require.Equal(t, map[string]any{"configured": false}, rpc.Result.StructuredContent["data"])

	rep = mcptest.Post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, nil)
	require.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))
	require.Contains(t, string(rep.Body), "vaultclaw_session_configure")

	// Other methods are refused with Allow: POST.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/mcp", nil)
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	require.Equal(t, "POST", r.Header.Get("Allow"))
}

func TestHTTPStrictTenantMode(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER=true"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`,
	} {
		rep := mcptest.Post(t, srv.URL+"/v1/mcp", body, map[string]string{"X-Tenant-Id": "   "})
		require.Equal(t, http.StatusBadRequest, rep.StatusCode)
		require.Equal(t, "application/json; charset=utf-8", rep.Header.Get("Content-Type"))
		var env map[string]any
		require.NoError(t, json.Unmarshal(rep.Body, &env))
		require.Equal(t, false, env["ok"])
		e := env["error"].(map[string]any)
		require.Equal(t, "MCP_TENANT_HEADER_REQUIRED", e["code"])
		require.Equal(t, "validation", e["category"])
		require.Equal(t, []any{"X-Accords-Tenant-Id", "X-OpenClaw-Tenant-Id", "X-Tenant-Id"}, e["details"].(map[string]any)["required_headers"])
		require.Equal(t, 400.0, env["meta"].(map[string]any)["vault_http_status"])
	}
	rep := mcptest.Post(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`, map[string]string{"X-OpenClaw-Tenant-Id": "t1"})
	require.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))
}

func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_MAX_BODY_BYTES=2048"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"` + strings.Repeat("x", 4096) + `"}}}`
	rep := mcptest.Post(t, srv.URL+"/v1/mcp", big, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, rep.StatusCode)

	// Without a Content-Length (chunked), the limit still holds.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/mcp", io.MultiReader(bytes.NewReader([]byte(big))))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode)

	// Nothing was stored by the refused requests.
	rep = mcptest.Post(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`, nil)
	require.Equal(t, http.StatusOK, rep.StatusCode)
	require.Contains(t, string(rep.Body), `"configured":false`)
}

// TestHTTPTenantHeaderIsBounded: a 40 KB tenant header gave MCP_INTERNAL
// "key too large", and any value made a new scope; length and charset are
// now checked before anything runs.
func TestHTTPTenantHeaderIsBounded(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	call := mcptest.ToolsCall(1, "vaultclaw_session_configure", map[string]any{"token": "tok"})
	for name, val := range map[string]string{
		"X-Tenant-Id":          strings.Repeat("t", 40<<10),
		"X-Accords-Tenant-Id":  strings.Repeat("t", 129),
		"X-OpenClaw-Tenant-Id": "acme corp",
	} {
		rep := mcptest.Post(t, srv.URL+"/v1/mcp", call, map[string]string{name: val})
		require.Equal(t, http.StatusBadRequest, rep.StatusCode, "%s: %s", name, rep.Body)
		var env mcptest.Envelope
		require.NoError(t, json.Unmarshal(rep.Body, &env))
		require.Equal(t, "MCP_VALIDATION_ERROR", env.Error.Code)
		require.Equal(t, name, env.Error.Details["field"])
	}
	env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, map[string]string{"X-Tenant-Id": "team-a:prod@eu_1." + strings.Repeat("x", 110)})
	require.True(t, env.OK, "%v", env.Error)
}

package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// headerTransport adds fixed headers to every request (a tenant).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func httpClientSession(t *testing.T, endpoint string, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: headers}},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPStreamableClientAndTenantIsolation(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	tenantA := httpClientSession(t, srv.URL+"/v1/mcp", map[string]string{"X-Accords-Tenant-Id": "tenant-a"})
	tenantB := httpClientSession(t, srv.URL+"/mcp", map[string]string{"X-Tenant-Id": "tenant-b"})
	// X-Accords-Tenant-Id wins over the other headers.
	tenantAViaPriority := httpClientSession(t, srv.URL+"/v1/mcp", map[string]string{"X-Tenant-Id": "tenant-b", "X-Accords-Tenant-Id": "tenant-a"})
	noTenant := httpClientSession(t, srv.URL+"/v1/mcp", nil)

	tools, err := tenantA.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, len(a.Registry.Tools()))

	env := callEnv(t, tenantA, "vaultclaw_session_configure", map[string]any{"token": "secret-of-tenant-a"})
	require.True(t, env.OK)

	require.Equal(t, true, data(t, callEnv(t, tenantA, "vaultclaw_session_status", nil))["configured"])
	require.Equal(t, true, data(t, callEnv(t, tenantAViaPriority, "vaultclaw_session_status", nil))["configured"])
	require.Equal(t, false, data(t, callEnv(t, tenantB, "vaultclaw_session_status", nil))["configured"], "tenant B must not see A's session")
	require.Equal(t, false, data(t, callEnv(t, noTenant, "vaultclaw_session_status", nil))["configured"], "no header means the default scope")
}

func rawPost(t *testing.T, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestHTTPBareJSONPostWithoutInitialize(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	resp, body := rawPost(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	var rpc struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &rpc), string(body))
	require.Equal(t, 7, rpc.ID)
	require.Equal(t, true, rpc.Result.StructuredContent["ok"])
	require.Equal(t, map[string]any{"configured": false}, rpc.Result.StructuredContent["data"])

	resp, body = rawPost(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "vaultclaw_session_configure")

	// Other methods are refused with Allow: POST.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/mcp", nil)
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	require.Equal(t, "POST", r.Header.Get("Allow"))
}

func TestHTTPStrictTenantMode(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER=true"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`,
	} {
		resp, b := rawPost(t, srv.URL+"/v1/mcp", body, map[string]string{"X-Tenant-Id": "   "})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
		var env map[string]any
		require.NoError(t, json.Unmarshal(b, &env))
		require.Equal(t, false, env["ok"])
		e := env["error"].(map[string]any)
		require.Equal(t, "MCP_TENANT_HEADER_REQUIRED", e["code"])
		require.Equal(t, "validation", e["category"])
		require.Equal(t, []any{"X-Accords-Tenant-Id", "X-OpenClaw-Tenant-Id", "X-Tenant-Id"}, e["details"].(map[string]any)["required_headers"])
		require.Equal(t, 400.0, env["meta"].(map[string]any)["vault_http_status"])
	}
	resp, b := rawPost(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`, map[string]string{"X-OpenClaw-Tenant-Id": "t1"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

func TestHTTPBodyLimit(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_MAX_BODY_BYTES=2048"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"` + strings.Repeat("x", 4096) + `"}}}`
	resp, _ := rawPost(t, srv.URL+"/v1/mcp", big, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

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
	resp, b := rawPost(t, srv.URL+"/v1/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status"}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), `"configured":false`)
}

package transport_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageFetch sends what fetch(url, {method: "POST", mode: "no-cors", body:
// new Blob([json])}) sends from a page on origin: no Content-Type (a Blob
// without a type), Accept */*, the page's Origin and Sec-Fetch-* headers,
// and no preflight. headers override or remove ("" value) the defaults.
func pageFetch(t *testing.T, method, url string, body []byte, headers map[string]string) mcptest.Reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	h := map[string]string{
		"Accept":          "*/*",
		"Origin":          "http://evil.example",
		"Sec-Fetch-Site":  "cross-site",
		"Sec-Fetch-Mode":  "no-cors",
		"Sec-Fetch-Dest":  "empty",
		"User-Agent":      "Mozilla/5.0",
		"Accept-Language": "en",
	}
	maps.Copy(h, headers)
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if hv, ok := headers["Host"]; ok {
		req.Host = hv
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return mcptest.Reply{StatusCode: resp.StatusCode, Header: resp.Header, Body: out}
}

func requireDenied(t *testing.T, rep mcptest.Reply, reason string) {
	t.Helper()
	require.Equal(t, http.StatusForbidden, rep.StatusCode, string(rep.Body))
	var env mcptest.Envelope
	require.NoError(t, json.Unmarshal(rep.Body, &env), string(rep.Body))
	require.NotNil(t, env.Error, string(rep.Body))
	assert.Equal(t, "MCP_PERMISSION_DENIED", env.Error.Code)
	assert.Equal(t, "policy", env.Error.Category)
	assert.Equal(t, reason, env.Error.Details["reason"])
}

var upsertCall = mcptest.ToolsCall(1, "vaultclaw_cookbook_upsert", map[string]any{"bundle": map[string]any{
	"type": "accords.cookbook.bundle.v1", "cookbook_id": "pwned", "version": "1.0.0", "title": "x",
	"entries": []any{map[string]any{"entry_id": "e", "entry_type": "recipe.plan.v1", "plan": map[string]any{}}},
}})

var configureCall = mcptest.ToolsCall(2, "vaultclaw_session_configure", map[string]any{"token": "attacker-token", "base_url": "http://evil.example"})

// TestCrossSitePageCannotDriveTheBridge is the repro: a page's
// no-cors fetch stored a cookbook and repointed the Vault session. It must
// now be refused on both MCP paths, with nothing stored.
func TestCrossSitePageCannotDriveTheBridge(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	for _, path := range []string{"/v1/mcp", "/mcp"} {
		for _, call := range []map[string]any{upsertCall, configureCall} {
			body, _ := json.Marshal(call)
			requireDenied(t, pageFetch(t, http.MethodPost, srv.URL+path, body, nil), "cross_origin")
			// An older browser sends Origin but no Sec-Fetch-Site.
			requireDenied(t, pageFetch(t, http.MethodPost, srv.URL+path, body, map[string]string{"Sec-Fetch-Site": "", "Sec-Fetch-Mode": "", "Sec-Fetch-Dest": ""}), "cross_origin")
			// Same site (another port of 127.0.0.1) is still another origin.
			requireDenied(t, pageFetch(t, http.MethodPost, srv.URL+path, body, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}), "cross_origin")
			// The null origin of sandboxed frames and file: pages.
			requireDenied(t, pageFetch(t, http.MethodPost, srv.URL+path, body, map[string]string{"Sec-Fetch-Site": "", "Origin": "null"}), "cross_origin")
		}
	}
	status := mcptest.RequireOK(t, mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, nil))
	assert.Equal(t, false, status["configured"], "the session was not repointed")
	env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_cookbook_get", map[string]any{"cookbook_id": "pwned"}, nil)
	mcptest.RequireCode(t, env, "MCP_CATALOG_NOT_FOUND")
}

func TestBrowserRulesForAllowedOriginsAndPlainClients(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_ALLOWED_ORIGINS=http://localhost:6274"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	status, _ := json.Marshal(mcptest.ToolsCall(3, "vaultclaw_session_status", map[string]any{}))

	// A listed origin (the MCP Inspector) is allowed, even cross-site, but
	// must say it sends JSON: a browser's missing Content-Type is not
	// filled in.
	rep := pageFetch(t, http.MethodPost, srv.URL+"/v1/mcp", status, map[string]string{"Origin": "http://localhost:6274", "Sec-Fetch-Mode": "cors"})
	assert.Equal(t, http.StatusUnsupportedMediaType, rep.StatusCode, string(rep.Body))
	rep = pageFetch(t, http.MethodPost, srv.URL+"/v1/mcp", status, map[string]string{"Origin": "http://localhost:6274", "Sec-Fetch-Mode": "cors",
		"Content-Type": "application/json", "Accept": "application/json"})
	assert.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))
	// A page of the server's own origin, and a typed-in address, are fine.
	rep = pageFetch(t, http.MethodPost, srv.URL+"/v1/mcp", status, map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin",
		"Content-Type": "application/json", "Accept": "application/json"})
	assert.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))

	// No browser headers and no Content-Type: a bare bridge client, which
	// keeps working as before.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/mcp", bytes.NewReader(status))
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	// A Sec-Fetch header alone marks a browser: no Content-Type fill-in.
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/v1/mcp", bytes.NewReader(status))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Sec-Fetch-Mode", "no-cors")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}

func TestMetricsAndHealthAgainstPagesAndRebinding(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	// /metrics reveals: a page's GET and a rebound Host are refused.
	requireDenied(t, pageFetch(t, http.MethodGet, srv.URL+"/metrics", nil, nil), "cross_origin")
	requireDenied(t, pageFetch(t, http.MethodGet, srv.URL+"/metrics", nil, map[string]string{"Origin": "", "Sec-Fetch-Site": "", "Sec-Fetch-Mode": "", "Sec-Fetch-Dest": "", "Host": "evil.example"}), "host_not_allowed")
	requireDenied(t, pageFetch(t, http.MethodPost, srv.URL+"/v1/mcp", []byte(`{}`), map[string]string{"Origin": "", "Sec-Fetch-Site": "", "Host": "evil.example:80"}), "host_not_allowed")
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a scraper without browser headers reads metrics")
	// Opening the address in the browser itself (Sec-Fetch-Site: none).
	rep := pageFetch(t, http.MethodGet, srv.URL+"/metrics", nil, map[string]string{"Origin": "", "Sec-Fetch-Site": "none"})
	assert.Equal(t, http.StatusOK, rep.StatusCode)

	// /healthz stays open to pages but only says ok; a rebound Host is
	// still refused.
	rep = pageFetch(t, http.MethodGet, srv.URL+"/healthz", nil, nil)
	assert.Equal(t, http.StatusOK, rep.StatusCode)
	requireDenied(t, pageFetch(t, http.MethodGet, srv.URL+"/healthz", nil, map[string]string{"Host": "evil.example"}), "host_not_allowed")
}

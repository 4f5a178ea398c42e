package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfilingRefusesRebindingAndPages: the pprof listener is loopback
// only, but answered any Host, so a page whose name was rebound to
// 127.0.0.1 could read heap profiles. It now has the bridge's browser
// guard: a foreign Host or a cross-site page gets 403, while a client
// naming the listener, and a developer's browser opening it, read profiles.
func TestProfilingRefusesRebindingAndPages(t *testing.T) {
	t.Parallel()
	prof, err := app.StartProfiling("127.0.0.1:0", nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, prof.Close()) }()
	addr := prof.Addr().String()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	url := "http://" + addr + "/debug/pprof/heap?debug=1"

	get := func(host string, headers map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Host = host
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body
	}
	denied := func(status int, body []byte, reason string) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, status, string(body))
		var env mcptest.Envelope
		require.NoError(t, json.Unmarshal(body, &env), string(body))
		require.NotNil(t, env.Error, string(body))
		assert.Equal(t, "MCP_PERMISSION_DENIED", env.Error.Code)
		assert.Equal(t, reason, env.Error.Details["reason"])
	}

	// DNS rebinding: the page's own name, resolved to 127.0.0.1.
	status, body := get("attacker.example", nil)
	denied(status, body, "host_not_allowed")
	status, body = get("attacker.example:"+port, nil)
	denied(status, body, "host_not_allowed")
	// A page on another origin reading the loopback address directly.
	status, body = get(addr, map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"})
	denied(status, body, "cross_origin")

	status, body = get(addr, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	assert.Contains(t, string(body), "heap profile")
	status, body = get("localhost", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"})
	require.Equal(t, http.StatusOK, status, "a developer opening the listener in a browser: %s", body)
}

package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/oidctest"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	oauthResource = "https://mcp.example.test/v1/mcp"
	oauthMetadata = "https://mcp.example.test/.well-known/oauth-protected-resource/v1/mcp"
	staticToken   = "static-token-0123456789"
)

// oauthBridge is a gateway whose policy accepts the tokens of a zitadel
// provider on loopback beside one static caller, served by the real HTTP
// bridge with the scope challenge and the metadata routes the app mounts.
func oauthBridge(t *testing.T) (*harness, *oidctest.Provider, *httptest.Server) {
	t.Helper()
	p := oidctest.Start(t, oauthResource)
	h := newHarness(t, setup{policy: `
[[callers]]
id = "static-bot"
token_sha256 = "` + policy.HashToken(staticToken) + `"
tenant = "acme"

[oauth]
issuer = "` + p.URL + `"
audience = "` + oauthResource + `"
tenant_claim = "tenant"
capabilities = ["session_admin"]
`})
	srv := httptest.NewServer(transport.NewHTTPHandler(transport.HTTPOptions{
		GetServer: h.gw.GetServer, Wrap: h.gw.Wrap, Inner: h.gw.ScopeChallenge,
		Extra: map[string]http.Handler{
			"/.well-known/oauth-protected-resource":  h.gw.ResourceMetadata(),
			"/.well-known/oauth-protected-resource/": h.gw.ResourceMetadata(),
		},
	}))
	t.Cleanup(srv.Close)
	return h, p, srv
}

// postJSON posts body through mcptest.Post; the status and headers come
// back as a response for the assertions below.
func postJSON(t *testing.T, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	r := mcptest.Post(t, url, body, headers)
	return &http.Response{StatusCode: r.StatusCode, Header: r.Header}, string(r.Body)
}

const callStatus = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`

func TestOAuthTokenOfTheProviderIsAPrincipal(t *testing.T) {
	h, p, srv := oauthBridge(t)
	tok := p.Token(t, "acme.alice", "openid", "accords:audit_view")
	cs := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tok})

	assert.Equal(t, []string{"vaultclaw_audit_receipts_list", "vaultclaw_receipt_prove", "vaultclaw_session_clear", "vaultclaw_session_configure", "vaultclaw_session_status", "vaultclaw_whoami"},
		mcptest.ToolNames(t, cs), "the baseline, the token's scope (audit_view: receipts list and prove) and whoami (every caller holds identity), nothing more")
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	rs := h.receipts(audit.Filter{})
	require.Len(t, rs, 1)
	assert.Equal(t, "acme.alice", rs[0].Caller, "the caller claim names the caller in receipts")
	assert.Equal(t, "acme", rs[0].Scope, "the tenant claim binds the tenant")

	resp, _ := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok, "X-Tenant-Id": "globex"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a tenant header cannot move a token to another tenant")

	resp, body := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + staticToken})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "static callers keep working beside OAuth: %s", body)
}

func TestOAuthMissingScopeGetsTheInsufficientScopeChallenge(t *testing.T) {
	h, p, srv := oauthBridge(t)
	tok := p.Token(t, "acme.bob")
	resp, body := postJSON(t, srv.URL+"/v1/mcp",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vaultclaw_audit_receipts_list","arguments":{}}}`,
		map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	ch := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, ch, `error="insufficient_scope"`)
	assert.Contains(t, ch, `scope="accords:audit_view"`)
	assert.Contains(t, ch, `resource_metadata="`+oauthMetadata+`"`)
	assert.Contains(t, body, apperr.CodePermissionDenied)
	assert.Empty(t, h.receipts(audit.Filter{}), "the refused call never reached a tool")

	resp, _ = postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the baseline capability needs no scope")
}

func TestOAuthBadTokensNeverReachATool(t *testing.T) {
	h, p, srv := oauthBridge(t)
	good := p.Token(t, "acme.carol", "accords:*")
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	hs := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2]
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	claims := func(iss string) map[string]any {
		return map[string]any{"iss": iss, "sub": "acme.mallory", "aud": []string{oauthResource}, "tenant": "acme", "scope": "accords:*",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	}
	noExp := claims(p.URL)
	delete(noExp, "exp")
	future := claims(p.URL)
	future["nbf"] = time.Now().Add(10 * time.Minute).Unix()
	noTenant := claims(p.URL)
	delete(noTenant, "tenant")

	cases := map[string]string{
		"expired":          p.Token(t, "expired", "accords:*"),
		"wrong audience":   p.Token(t, "elsewhere", "accords:*"),
		"wrong issuer":     p.Sign(t, claims("https://evil.example.test"), nil),
		"alg none":         none,
		"hmac":             hs,
		"forged signature": p.Sign(t, claims(p.URL), other),
		"tampered payload": parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"acme.x"}`)) + "." + parts[2],
		"no exp":           p.Sign(t, noExp, nil),
		"not yet valid":    p.Sign(t, future, nil),
		"no tenant claim":  p.Sign(t, noTenant, nil),
		"garbage":          "not-a-jwt",
	}
	for name, tok := range cases {
		resp, body := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok})
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", name, body)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+oauthMetadata+`"`, name)
		assert.NotContains(t, body, tok, "%s: tokens are never echoed", name)
	}
	resp, _ := postJSON(t, srv.URL+"/v1/mcp", callStatus, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+oauthMetadata+`"`)
	assert.Empty(t, h.receipts(audit.Filter{}), "no bad token reached a tool")

	resp, body := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + p.Sign(t, claims(p.URL), nil)})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the same claims under the provider's key pass: %s", body)
}

func TestOAuthRotatedKeyIsPickedUp(t *testing.T) {
	_, p, srv := oauthBridge(t)
	before := p.Token(t, "acme.dan")
	resp, _ := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + before})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	p.Rotate(t)
	after := p.Token(t, "acme.dan")
	resp, body := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + after})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a token under the new key id is accepted once the keys are fetched again: %s", body)
	resp, _ = postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + before})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the retired key no longer signs valid tokens")
}

func TestOAuthProtectedResourceMetadata(t *testing.T) {
	_, p, srv := oauthBridge(t)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/v1/mcp"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, oauthResource, md.Resource, path)
		assert.Equal(t, []string{p.URL}, md.AuthorizationServers, path)
		assert.Contains(t, md.ScopesSupported, "accords:vault_execute", path)
		assert.Contains(t, md.ScopesSupported, "accords:*", path)
	}
	resp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource/elsewhere")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/.well-known/oauth-protected-resource", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the browser guard applies to the metadata too")
}

func TestOAuthReloadAndUnreachableProvider(t *testing.T) {
	h, p, srv := oauthBridge(t)
	tok := p.Token(t, "acme.erin")
	resp, _ := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A provider that cannot be discovered: 503, retryable, and no call.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h.writePolicy("[oauth]\nissuer = \"" + dead.URL + "\"\naudience = \"" + oauthResource + "\"\n")
	require.NoError(t, h.gw.Reload())
	resp, body := postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, body, "oauth_provider_unavailable")

	// Without [oauth] the same token is a stranger.
	h.writePolicy(`[[callers]]
id = "static-bot"
token_sha256 = "` + policy.HashToken(staticToken) + `"
`)
	require.NoError(t, h.gw.Reload())
	resp, _ = postJSON(t, srv.URL+"/v1/mcp", callStatus, map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = postJSON(t, srv.URL+"/.well-known/oauth-protected-resource", "", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no metadata without [oauth]")
	assert.Len(t, h.receipts(audit.Filter{}), 1, "only the call made while the token was valid")
}

// The policy examples of docs/team.md load and mean what the text says.
func TestDocumentedTeamPolicyLoads(t *testing.T) {
	raw, err := os.ReadFile("../docs/team.md")
	require.NoError(t, err)
	h := newHarness(t, setup{})
	doc := string(raw)
	p, err := policy.Parse([]byte(fenced(t, doc, "toml")), "toml", h.gw.known)
	require.NoError(t, err)
	c, err := p.OAuth.Caller("alice", "acme", []string{"accords:vault_read", "accords:catalog_write"}, []string{"operators"})
	require.NoError(t, err)
	assert.Equal(t, []string{"approvals_view", "session_admin", "vault_execute", "vault_read"}, c.Capabilities())
	assert.InDelta(t, 60, c.LimitFor("vaultclaw_session_status").PerMinute, 0)
	second := doc[strings.Index(doc, "```toml")+len("```toml"):]
	_, err = policy.Parse([]byte(fenced(t, second, "toml")), "toml", h.gw.known)
	require.NoError(t, err)
}

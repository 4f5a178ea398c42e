//go:build protocol

package protocol

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/oidctest"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oauthReport is what oauth.mjs prints.
type oauthReport struct {
	Unauthorized  string   `json:"unauthorized"`
	Pages         []string `json:"pages"`
	Authorization struct {
		Endpoint            string `json:"endpoint"`
		ResponseType        string `json:"response_type"`
		ClientID            string `json:"client_id"`
		CodeChallengeMethod string `json:"code_challenge_method"`
		CodeChallenge       bool   `json:"code_challenge"`
		Resource            string `json:"resource"`
		Scope               string `json:"scope"`
	} `json:"authorization"`
	Token struct {
		Type string `json:"type"`
		JWT  bool   `json:"jwt"`
	} `json:"token"`
	Tools []string `json:"tools"`
	Calls []struct {
		Name    string `json:"name"`
		OK      bool   `json:"ok"`
		IsError bool   `json:"isError"`
	} `json:"calls"`
	ConnectedWithoutSignIn bool `json:"connectedWithoutSignIn"`
}

// TestTypeScriptClientSignsInWithOAuth: the TypeScript SDK client, given
// only the MCP URL and a client id registered at the provider, finds the
// provider from the 401 (protected-resource metadata), runs the
// authorization code flow with PKCE through the provider's login form
// (zitadel's provider on loopback) and then lists and calls tools as the
// signed-in user, whose receipts name that user and tenant.
func TestTypeScriptClientSignsInWithOAuth(t *testing.T) {
	rt := install(t)
	script := rt.script(t, "oauth.mjs")
	// The resource is the bridge's own URL, which the SDK checks the
	// metadata's resource against: the listener comes first.
	srv := httptest.NewUnstartedServer(nil)
	defer srv.Close()
	resource := "http://" + srv.Listener.Addr().String() + "/v1/mcp"
	p := oidctest.Start(t, resource)
	pol := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(pol, []byte(`[oauth]
issuer = "`+p.URL+`"
audience = "`+resource+`"
tenant_claim = "tenant"
`), 0o600))
	e := approvaltest.NewEnv(t, vaultsim.Options{}, "ACCORDS_MCP_POLICY_FILE="+pol, "ACCORDS_MCP_TOOLSETS=all")
	srv.Config.Handler = e.App.HTTPHandler()
	srv.Start()

	out := rt.run(t, nil, script, resource, oidctest.PublicClient, oidctest.RedirectURI, "acme.alice", oidctest.Secret)
	var rep oauthReport
	require.NoError(t, json.Unmarshal(out, &rep), string(out))
	t.Logf("browser: %v", rep.Pages)
	assert.False(t, rep.ConnectedWithoutSignIn)
	assert.NotEmpty(t, rep.Unauthorized, "the first connect needs the sign-in")
	a := rep.Authorization
	assert.Equal(t, p.URL+"/authorize", a.Endpoint, "the provider named by the metadata")
	assert.Equal(t, "code", a.ResponseType)
	assert.Equal(t, oidctest.PublicClient, a.ClientID)
	assert.Equal(t, "S256", a.CodeChallengeMethod)
	assert.True(t, a.CodeChallenge)
	assert.Equal(t, resource, a.Resource, "the resource indicator is the metadata's resource")
	assert.Contains(t, a.Scope, "accords:*", "the scopes the metadata advertises")
	assert.Contains(t, rep.Pages, "302 "+p.URL+oidctest.LoginPath, "the provider's login page")
	assert.Equal(t, "Bearer", rep.Token.Type)
	assert.True(t, rep.Token.JWT)

	assert.Contains(t, rep.Tools, "vaultclaw_session_status")
	assert.Contains(t, rep.Tools, "vaultclaw_audit_receipts_list", "granted by the token's scope")
	require.Len(t, rep.Calls, 2)
	for _, c := range rep.Calls {
		assert.True(t, c.OK, c.Name)
		assert.False(t, c.IsError, c.Name)
	}
	require.NoError(t, e.App.Audit.Flush())
	rs, err := e.App.Audit.List(audit.Filter{})
	require.NoError(t, err)
	require.Len(t, rs, 2, "the two calls")
	for _, r := range rs {
		assert.Equal(t, "acme.alice", r.Caller, r.Tool)
		assert.Equal(t, "acme", r.Scope, r.Tool)
	}
}

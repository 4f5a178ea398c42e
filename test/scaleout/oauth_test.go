//go:build etcd

package scaleout

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/oidctest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two replicas behind one public resource URL accept the same access token
// of a real OpenID provider (zitadel's, on loopback) and attribute the
// calls made with it on either to the same caller and tenant in the audit
// log they share on etcd: validation needs no state of its own.
func TestReplicasAcceptOneOAuthTokenAsOneCaller(t *testing.T) {
	const resource = "https://mcp.example.test/v1/mcp"
	p := oidctest.Start(t, resource)
	tok := p.Token(t, "acme.alice", "accords:audit_view")
	pol := unlimited + `
[oauth]
issuer = "` + p.URL + `"
audience = "` + resource + `"
tenant_claim = "tenant"
capabilities = ["session_admin"]
`
	proc := etcdtest.StartProcess(t)
	f := &fleet{t: t, etcd: proc, proc: proc, addr: proc.Endpoint, header: http.Header{"Authorization": {"Bearer " + tok}}}
	f.run(2, 1, pol)
	ctx := context.Background()

	calls := map[string]int{}
	for r := range 2 {
		for range 2 {
			env, id, err := call(ctx, f.session(r, 0), "vaultclaw_session_status", nil)
			require.NoError(t, err)
			require.True(t, env.OK, "replica %d: %v", r+1, env.Raw)
			require.NotEmpty(t, id)
			calls[id] = r
		}
	}
	// The token's scope holds on every replica: replica 2 lists the
	// tenant's receipts, replica 1's calls among them.
	env, _, err := call(ctx, f.session(1, 0), "vaultclaw_audit_receipts_list", map[string]any{"limit": 50})
	require.NoError(t, err)
	require.True(t, env.OK, "%v", env.Raw)

	// A request without the token, or with a forged one, is refused on
	// either replica before any tool.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	forged := p.Sign(t, map[string]any{"iss": p.URL, "sub": "acme.mallory", "aud": []string{resource}, "tenant": "acme",
		"exp": time.Now().Add(time.Hour).Unix()}, other)
	for _, rep := range f.reps {
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + forged}} {
			reply := mcptest.Post(t, rep.Endpoint, mcptest.ToolsCall(1, "vaultclaw_session_status", nil), h)
			assert.Equal(t, http.StatusUnauthorized, reply.StatusCode, string(reply.Body))
			assert.Contains(t, reply.Header.Get("WWW-Authenticate"), "resource_metadata=")
		}
	}

	db := f.store()
	var rs []audit.Receipt
	require.Eventually(t, func() bool {
		rs, err = audit.List(db, audit.Filter{Limit: 1000})
		require.NoError(t, err)
		return len(rs) >= len(calls)+1
	}, 10*time.Second, 50*time.Millisecond, "the receipts reach the shared log")
	seen := map[string]bool{}
	for _, r := range rs {
		assert.Equal(t, "acme.alice", r.Caller, "%s on replica %d", r.Tool, calls[r.CallID]+1)
		assert.Equal(t, "acme", r.Scope, r.Tool)
		seen[r.CallID] = true
	}
	for id, r := range calls {
		assert.True(t, seen[id], "the receipt of call %s on replica %d", id, r+1)
	}
	assert.Len(t, rs, len(calls)+1, "the calls made with the token and nothing else")
}

package policy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var oauthKnown = Known{
	Capabilities: []string{"session_admin", "vault_read", "vault_execute", "catalog_write"},
	Tools:        []string{"vaultclaw_execute"},
	Shared:       []string{"catalog_write"},
}

const oauthTOML = `
[[callers]]
id = "ci-bot"
token_sha256 = "` + "0000000000000000000000000000000000000000000000000000000000000001" + `"

[oauth]
issuer = "https://idp.example.com"
audience = "https://mcp.example.com/v1/mcp"
tenant_claim = "tenant"
capabilities = ["session_admin"]
groups_claim = "groups"
calls_per_minute = 30
[oauth.groups]
operators = ["vault_execute"]
`

func TestOAuthSectionParsesBesideStaticCallers(t *testing.T) {
	p, err := Parse([]byte(oauthTOML), "toml", oauthKnown)
	require.NoError(t, err)
	require.True(t, p.HasCallers())
	_, ok := p.Lookup("ci-bot")
	assert.True(t, ok, "static callers keep working beside [oauth]")
	o := p.OAuth
	require.NotNil(t, o)
	assert.Equal(t, "sub", o.CallerClaim, "caller_claim defaults to sub")
	assert.Equal(t, DefaultScopePrefix, o.ScopePrefix)
	assert.Equal(t, []string{"accords:*", "accords:session_admin", "accords:vault_execute", "accords:vault_read", "accords:read_only"}, o.ScopesSupported(),
		"the shared capability is outside the default ceiling")

	c, err := o.Caller("alice", "team-a", []string{"openid", "accords:vault_read"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"session_admin", "vault_read"}, c.Capabilities(), "baseline plus the scope")
	assert.Equal(t, "team-a", c.Tenant)
	assert.InDelta(t, 30, c.LimitFor("vaultclaw_execute").PerMinute, 0)

	c, err = o.Caller("bob", "team-a", []string{"accords:*", "accords:catalog_write", "accords:read_only"}, []string{"operators"})
	require.NoError(t, err)
	assert.Equal(t, []string{"session_admin", "vault_execute", "vault_read"}, c.Capabilities(), "a scope never widens past the ceiling")
	assert.True(t, c.ReadOnly, "the read-only scope narrows the token")

	c, err = o.Caller("carol", "team-a", nil, []string{"operators"})
	require.NoError(t, err)
	assert.True(t, c.Allows("vault_execute"), "groups map to capabilities")

	_, err = o.Caller("dave", "", nil, nil)
	assert.ErrorContains(t, err, "tenant", "tenant_claim set: a token without it is refused")
	_, err = o.Caller("local", "t", nil, nil)
	assert.ErrorContains(t, err, "reserved")
	_, err = o.Caller("bad id", "t", nil, nil)
	assert.Error(t, err)
}

func TestOAuthCeilingNamesSharedCapability(t *testing.T) {
	p, err := Parse([]byte("[oauth]\nissuer = \"http://127.0.0.1:9\"\naudience = \"http://127.0.0.1:8/v1/mcp\"\nmax_capabilities = [\"vault_read\", \"catalog_write\"]\nread_only = true\n"), "toml", oauthKnown)
	require.NoError(t, err)
	c, err := p.OAuth.Caller("alice", "", []string{"accords:*"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"catalog_write", "vault_read"}, c.Capabilities())
	assert.Equal(t, "alice", c.Tenant, "without tenant_claim the caller is its own tenant")
	assert.True(t, c.ReadOnly, "the operator's read_only holds whatever the token says")
}

// TestOAuthDefaultCeilingLeavesOutElevatedCapabilities: "accords:*" never
// grants receipts_emit unless the operator names it in max_capabilities,
// as "*" never grants it to a static HTTP caller.
func TestOAuthDefaultCeilingLeavesOutElevatedCapabilities(t *testing.T) {
	known := oauthKnown
	known.Capabilities = append(slices.Clone(known.Capabilities), "receipts_emit")
	known.Elevated = []string{"receipts_emit"}
	head := "[oauth]\nissuer = \"http://127.0.0.1:9\"\naudience = \"http://127.0.0.1:8/v1/mcp\"\n"
	p, err := Parse([]byte(head), "toml", known)
	require.NoError(t, err)
	c, err := p.OAuth.Caller("alice", "", []string{"accords:*", "accords:receipts_emit"}, nil)
	require.NoError(t, err)
	assert.False(t, c.Allows("receipts_emit"))
	assert.True(t, c.Allows("vault_read"))

	p, err = Parse([]byte(head+"max_capabilities = [\"vault_read\", \"receipts_emit\"]\n"), "toml", known)
	require.NoError(t, err)
	c, err = p.OAuth.Caller("alice", "", []string{"accords:receipts_emit"}, nil)
	require.NoError(t, err)
	assert.True(t, c.Allows("receipts_emit"), "named in the ceiling, a scope grants it")
}

func TestOAuthSectionErrorsNameTheKey(t *testing.T) {
	base := "[oauth]\nissuer = \"https://idp.example.com\"\naudience = \"https://mcp.example.com/v1/mcp\"\n"
	cases := map[string]string{
		"[oauth]\naudience = \"https://mcp.example.com/v1/mcp\"\n":                              "oauth.issuer: required",
		"[oauth]\nissuer = \"http://idp.example.com\"\naudience = \"https://m.example.com/\"\n": "oauth.issuer:",
		"[oauth]\nissuer = \"https://idp.example.com\"\n":                                       "oauth.audience: required",
		base + "capabilities = [\"nope\"]\n":                                                    "oauth.capabilities: unknown capability",
		base + "capabilities = [\"*\"]\n":                                                       "oauth.capabilities:",
		base + "capabilities = [\"catalog_write\"]\n":                                           "outside oauth.max_capabilities",
		base + "max_capabilities = [\"nope\"]\n":                                                "oauth.max_capabilities: unknown capability",
		base + "[oauth.groups]\nops = [\"vault_read\"]\n":                                       "oauth.groups_claim: required",
		base + "groups_claim = \"g\"\n[oauth.groups]\nops = [\"nope\"]\n":                       "oauth.groups.ops: unknown capability",
		base + "scope_prefix = \"a b\"\n":                                                       "oauth.scope_prefix:",
		base + "issuerr = \"x\"\n":                                                              "unknown keys: oauth.issuerr",
		base + "burst = 0\n":                                                                    "oauth.burst:",
	}
	for doc, want := range cases {
		_, err := Parse([]byte(doc), "toml", oauthKnown)
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
}

package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var known = Known{
	Capabilities: []string{"session_admin", "vault_read", "vault_execute", "audit_view"},
	Tools:        []string{"vaultclaw_execute", "vaultclaw_session_status"},
}

const fullTOML = `
version = 1

[defaults]
calls_per_minute = 120
burst = 30
[defaults.tools.vaultclaw_execute]
calls_per_minute = 10

[stdio]
capabilities = ["*"]
tenant = "me"
[stdio.tools.vaultclaw_execute]
calls_per_minute = 5
burst = 1

[anonymous]
capabilities = ["vault_read"]
read_only = true

[[callers]]
id = "ci-bot"
token_sha256 = "%s"
tenant = "acme"
capabilities = ["vault_read", "audit_view"]
calls_per_minute = 600
[callers.tools.vaultclaw_session_status]
burst = 2

[[callers]]
id = "ops"
token_sha256 = "sha256:%s"
`

func TestParseFullTOML(t *testing.T) {
	doc := fmt.Sprintf(fullTOML, HashToken("tok-ci"), HashToken("tok-ops"))
	p, err := Parse([]byte(doc), "toml", known)
	require.NoError(t, err)
	require.True(t, p.HasCallers())
	assert.Equal(t, []string{"ci-bot", "ops"}, p.CallerIDs())

	ci, ok := p.Authenticate("tok-ci")
	require.True(t, ok)
	assert.Equal(t, "acme", ci.Tenant)
	assert.True(t, ci.Allows("vault_read"))
	assert.False(t, ci.Allows("vault_execute"))
	assert.Equal(t, []string{"audit_view", "vault_read"}, ci.Capabilities())
	assert.Equal(t, ratelimit.Limit{PerMinute: 600, Burst: 30}, ci.LimitFor("other"), "own rate, burst from [defaults]")
	assert.Equal(t, ratelimit.Limit{PerMinute: 10, Burst: 30}, ci.LimitFor("vaultclaw_execute"), "[defaults.tools] beats the caller's general rate")
	assert.Equal(t, ratelimit.Limit{PerMinute: 600, Burst: 2}, ci.LimitFor("vaultclaw_session_status"))

	ops, ok := p.Authenticate("tok-ops")
	require.True(t, ok)
	assert.Equal(t, "ops", ops.Tenant, "tenant defaults to the caller id")
	assert.True(t, ops.Allows("vault_execute"), "capabilities default to all")
	assert.Equal(t, ratelimit.Limit{PerMinute: 120, Burst: 30}, ops.LimitFor("x"))

	_, ok = p.Authenticate("tok-unknown")
	assert.False(t, ok)
	_, ok = p.Authenticate("")
	assert.False(t, ok)

	assert.Equal(t, "me", p.Stdio.Tenant)
	assert.True(t, p.Stdio.LimitFor("vaultclaw_session_status").Unlimited(), "stdio unlimited unless set")
	assert.Equal(t, ratelimit.Limit{PerMinute: 5, Burst: 1}, p.Stdio.LimitFor("vaultclaw_execute"))
	assert.True(t, p.Anonymous.ReadOnly)
	assert.False(t, p.Anonymous.Allows("session_admin"))
	assert.NotEqual(t, p.Anonymous.ViewKey(), ops.ViewKey())
}

func TestDefaults(t *testing.T) {
	p := Default(Known{})
	assert.False(t, p.HasCallers())
	assert.True(t, p.Stdio.Allows("anything"))
	assert.True(t, p.Stdio.LimitFor("t").Unlimited())
	assert.Equal(t, ratelimit.Limit{PerMinute: 60, Burst: 20}, p.Anonymous.LimitFor("t"))
	empty, err := Parse(nil, "toml", known)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Limit{PerMinute: 60, Burst: 20}, empty.Anonymous.LimitFor("t"))
	assert.Equal(t, "default", empty.Stdio.Tenant)
}

// Without a policy file, and with one whose [stdio] table sets no
// calls_per_minute, the stdio caller's calls of the tools that start work in
// Vault are limited; its other tools are not.
func TestStdioExecuteDefaults(t *testing.T) {
	k := Known{Tools: []string{"vaultclaw_execute", "vaultclaw_session_status"}, Executing: []string{"vaultclaw_execute"}}
	want := ratelimit.Limit{PerMinute: DefaultStdioExecuteCallsPerMinute, Burst: DefaultStdioExecuteBurst}
	p := Default(k)
	assert.Equal(t, want, p.Stdio.LimitFor("vaultclaw_execute"))
	assert.True(t, p.Stdio.LimitFor("vaultclaw_session_status").Unlimited())
	for doc, exec := range map[string]ratelimit.Limit{
		"":                                  want,
		"[stdio]\ntenant = \"me\"\n":        want,
		"[stdio]\ncalls_per_minute = 0\n":   {PerMinute: 0, Burst: DefaultBurst},
		"[stdio]\ncalls_per_minute = 100\n": {PerMinute: 100, Burst: DefaultBurst},
		"[stdio.tools.vaultclaw_execute]\nburst = 40\n":           {PerMinute: DefaultStdioExecuteCallsPerMinute, Burst: 40},
		"[stdio.tools.vaultclaw_execute]\ncalls_per_minute = 0\n": {PerMinute: 0, Burst: DefaultStdioExecuteBurst},
	} {
		p, err := Parse([]byte(doc), "toml", k)
		require.NoError(t, err, doc)
		assert.Equal(t, exec, p.Stdio.LimitFor("vaultclaw_execute"), doc)
		assert.Equal(t, exec.Unlimited(), p.Stdio.LimitFor("vaultclaw_execute").Unlimited(), doc)
		if doc != "[stdio]\ncalls_per_minute = 100\n" {
			assert.True(t, p.Stdio.LimitFor("vaultclaw_session_status").Unlimited(), doc)
		}
	}
}

func TestJSONFormatAndLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	doc := `{"callers":[{"id":"a","token_sha256":"` + HashToken("t") + `","tenant":"x","capabilities":[],"read_only":true}],
	         "stdio":{"calls_per_minute":0}}`
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	p, err := Load(path, known)
	require.NoError(t, err)
	assert.Equal(t, path, p.Source)
	c, ok := p.Lookup("a")
	require.True(t, ok)
	assert.False(t, c.Allows("vault_read"), "an empty list grants nothing")
	assert.True(t, c.ReadOnly)
}

func TestInvalidFiles(t *testing.T) {
	d := HashToken("t")
	cases := map[string]string{
		"unknown key":         "[stdio]\ncapabilites = []\n", //nolint:misspell // the misspelt key is the test
		"unknown capability":  "[stdio]\ncapabilities = [\"vault_raed\"]\n",
		"unknown tool":        "[defaults.tools.nope]\nburst = 1\n",
		"bad digest":          "[[callers]]\nid = \"a\"\ntoken_sha256 = \"abc\"\n",
		"raw token":           "[[callers]]\nid = \"a\"\ntoken_sha256 = \"my-secret-token\"\n",
		"missing digest":      "[[callers]]\nid = \"a\"\n",
		"duplicate id":        "[[callers]]\nid = \"a\"\ntoken_sha256 = \"" + d + "\"\n[[callers]]\nid = \"a\"\ntoken_sha256 = \"" + HashToken("u") + "\"\n",
		"duplicate digest":    "[[callers]]\nid = \"a\"\ntoken_sha256 = \"" + d + "\"\n[[callers]]\nid = \"b\"\ntoken_sha256 = \"" + d + "\"\n",
		"reserved id":         "[[callers]]\nid = \"local\"\ntoken_sha256 = \"" + d + "\"\n",
		"bad id":              "[[callers]]\nid = \"a b\"\ntoken_sha256 = \"" + d + "\"\n",
		"negative rate":       "[defaults]\ncalls_per_minute = -1\n",
		"zero burst":          "[stdio]\nburst = 0\n",
		"future version":      "version = 2\n",
		"blank tenant":        "[[callers]]\nid = \"a\"\ntenant = \"  \"\ntoken_sha256 = \"" + d + "\"\n",
		"not toml":            "[[[",
		"wrong type for rate": "[defaults]\ncalls_per_minute = \"lots\"\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc), "toml", known)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "my-secret-token", "never echo what may be a token")
		})
	}
	_, err := Parse([]byte(`{"stdio":{"bogus":1}}`), "json", known)
	require.Error(t, err)
}

func TestRulesCompileAtLoadWithTheirLine(t *testing.T) {
	known := Known{Tools: []string{"vaultclaw_plan_execute", "vaultclaw_connector_execute"}, Capabilities: []string{"vault_execute"}}
	good := `
[stdio]
capabilities = ["*"]

[[rules]]
id = "plan-size"
tools = ["vaultclaw_plan_execute"]
deny_if = 'size(args.plan.steps) > 5'
message = "plans have at most 5 steps"
`
	p, err := Parse([]byte(good), "toml", known)
	require.NoError(t, err)
	require.Len(t, p.Rules.Rules(), 1)

	bad := good + `
[[rules]]
id = "typo"
tools = ["vaultclaw_connector_execute"]
message = "x"
deny_if = 'argz.request == 1'
`
	_, err = Parse([]byte(bad), "toml", known)
	require.Error(t, err)
	require.Contains(t, err.Error(), "line 15: rules[1] (typo).deny_if")
	require.Contains(t, err.Error(), "undeclared reference to 'argz'")

	js := `{
  "rules": [
    {"id": "ok", "tools": ["*"], "deny_if": "false"},
    {"id": "broken",
     "tools": ["vaultclaw_plan_execute"],
     "deny_if": "size(args.plan.steps) >"}
  ]
}`
	_, err = Parse([]byte(js), "json", known)
	require.Error(t, err)
	require.Contains(t, err.Error(), "line 6: rules[1] (broken).deny_if")

	_, err = Parse([]byte("[[rules]]\nid = \"x\"\ntools = [\"*\"]\ndeny_if = \"true\"\nbogus = 1\n"), "toml", known)
	require.ErrorContains(t, err, "unknown keys")
}

// TestSharedCapabilitiesNeedANamedGrant: the capabilities that change the
// one catalog every tenant shares are not in an authenticated caller's
// "*" (nor its absent list); the stdio caller, the operator, and the
// anonymous loopback caller keep them; naming one grants it (D24).
func TestSharedCapabilitiesNeedANamedGrant(t *testing.T) {
	k := Known{Capabilities: []string{"catalog_view", "catalog_write", "remote_install", "vault_read"}, Shared: []string{"catalog_write", "remote_install"}}
	doc := `
[stdio]
capabilities = ["*"]
[[callers]]
id = "acme"
token_sha256 = "` + HashToken("a") + `"
[[callers]]
id = "beta"
token_sha256 = "` + HashToken("b") + `"
capabilities = ["*"]
[[callers]]
id = "ops"
token_sha256 = "` + HashToken("o") + `"
capabilities = ["*", "catalog_write"]
[[callers]]
id = "publisher"
token_sha256 = "` + HashToken("p") + `"
capabilities = ["catalog_view", "remote_install"]
`
	p, err := Parse([]byte(doc), "toml", k)
	require.NoError(t, err)
	for _, id := range []string{"acme", "beta"} {
		c, ok := p.Lookup(id)
		require.True(t, ok)
		assert.True(t, c.Allows("vault_read"), "%s: the rest of * is granted", id)
		assert.True(t, c.Allows("catalog_view"), id)
		for _, shared := range k.Shared {
			assert.False(t, c.Allows(shared), "%s: * does not grant %s", id, shared)
			assert.True(t, c.Withholds(shared), id)
		}
		assert.Equal(t, []string{"*", "-catalog_write", "-remote_install"}, c.Capabilities())
	}
	ops, _ := p.Lookup("ops")
	assert.True(t, ops.Allows("catalog_write"), "named: granted")
	assert.False(t, ops.Allows("remote_install"))
	pub, _ := p.Lookup("publisher")
	assert.True(t, pub.Allows("remote_install"))
	assert.False(t, pub.Withholds("catalog_write"), "an explicit list withholds nothing: it grants what it names")
	assert.True(t, p.Stdio.Allows("catalog_write"), "the local caller is the operator")
	assert.True(t, p.Anonymous.Allows("remote_install"), "anonymous loopback callers keep *")
	acme, _ := p.Lookup("acme")
	assert.NotEqual(t, p.Stdio.ViewKey(), acme.ViewKey(), "different rights, different servers")
	assert.True(t, Default(Known{}).Stdio.Allows("catalog_write"))
	assert.True(t, Default(Known{}).Anonymous.Allows("catalog_write"))
}

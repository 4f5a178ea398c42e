package gateway

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/accordsai/accords-mcp/gateway/rules"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fenced returns the first fenced block of the given language in doc.
func fenced(t *testing.T, doc, lang string) string {
	t.Helper()
	start := strings.Index(doc, "```"+lang+"\n")
	require.GreaterOrEqual(t, start, 0, "no %s block", lang)
	body := doc[start+len("```"+lang+"\n"):]
	end := strings.Index(body, "```")
	require.GreaterOrEqual(t, end, 0)
	return body[:end]
}

// The policy examples in docs/gateway.md must load and mean what the text
// says.
func TestDocumentedPolicyExamplesLoad(t *testing.T) {
	raw, err := os.ReadFile("../docs/gateway.md")
	require.NoError(t, err)
	doc := string(raw)
	h := newHarness(t, setup{})
	p, err := policy.Parse([]byte(fenced(t, doc, "toml")), "toml", h.gw.known)
	require.NoError(t, err)
	acme, ok := p.Authenticate("secret")
	require.True(t, ok)
	assert.Equal(t, "acme", acme.Tenant)
	assert.Equal(t, 1.0, acme.LimitFor("vaultclaw_session_clear").PerMinute)
	assert.Equal(t, 6.0, acme.LimitFor("vaultclaw_session_configure").PerMinute)
	dash, ok := p.Authenticate("dashboard-token")
	require.True(t, ok)
	assert.True(t, dash.ReadOnly)

	pj, err := policy.Parse([]byte(fenced(t, doc, "json")), "json", h.gw.known)
	require.NoError(t, err)
	_, ok = pj.Authenticate("secret")
	assert.True(t, ok)
}

// The stdio example in docs/gateway.md raises one tool's burst and lifts
// another's limit, leaving the other tools that start Vault work at the
// default.
func TestDocumentedStdioExample(t *testing.T) {
	raw, err := os.ReadFile("../docs/gateway.md")
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "```toml\n[stdio.tools.vaultclaw_connector_execute_job]")
	require.GreaterOrEqual(t, i, 0, "stdio example block")
	p, err := policy.Parse([]byte(fenced(t, doc[i:], "toml")), "toml", KnownNames())
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Limit{PerMinute: policy.DefaultStdioExecuteCallsPerMinute, Burst: 50}, p.Stdio.LimitFor("vaultclaw_connector_execute_job"))
	assert.True(t, p.Stdio.LimitFor("vaultclaw_plan_execute").Unlimited())
	def := ratelimit.Limit{PerMinute: policy.DefaultStdioExecuteCallsPerMinute, Burst: policy.DefaultStdioExecuteBurst}
	assert.Equal(t, def, p.Stdio.LimitFor("vaultclaw_connector_execute"))
	assert.Equal(t, def, p.Stdio.LimitFor("vaultclaw_passport_email_workflow"))
	assert.True(t, p.Stdio.LimitFor("vaultclaw_session_status").Unlimited())
}

// The rule examples in docs/gateway.md compile and decide as the text says.
func TestDocumentedRuleExamples(t *testing.T) {
	raw, err := os.ReadFile("../docs/gateway.md")
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "```toml\n# E-mail only")
	require.GreaterOrEqual(t, i, 0, "rules example block")
	block := fenced(t, doc[i:], "toml")
	p, err := policy.Parse([]byte(block), "toml", KnownNames())
	require.NoError(t, err)
	require.Len(t, p.Rules.Rules(), 4)
	tuesday := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	saturday := time.Date(2026, 5, 9, 10, 0, 0, 0, time.UTC)
	decide := func(tool, args string, now time.Time, rendered map[string]any) []string {
		in := rules.Input{Tool: tool, Caller: "local", Tenant: "default", Capability: "vault_execute", Args: json.RawMessage(args), Now: now}
		d := p.Rules.Evaluate(in, rules.PhaseArgs)
		if rendered != nil {
			in.Rendered = rendered
			d.Merge(p.Rules.Evaluate(in, rules.PhaseRendered))
		}
		return d.MatchedIDs()
	}
	assert.Empty(t, decide("vaultclaw_connector_execute", `{"request":{"connector_id":"google","request":{"to":["a@acme.example"]}}}`, tuesday, nil))
	assert.Equal(t, []string{"mail-inside"}, decide("vaultclaw_connector_execute", `{"request":{"connector_id":"google","request":{"to":["a@evil.example"]}}}`, tuesday, nil))
	assert.Equal(t, []string{"http-allowlist"}, decide("vaultclaw_connector_execute_job", `{"request":{"connector_id":"generic.http","request":{"url":"https://api.acme.example@evil.example/"}}}`, tuesday, nil))
	assert.Empty(t, decide("vaultclaw_connector_execute_job", `{"request":{"connector_id":"generic.http","request":{"url":"https://status.acme.example/x"}}}`, tuesday, nil))
	six := map[string]any{"plan": map[string]any{"steps": []any{1, 2, 3, 4, 5, 6}}}
	assert.Equal(t, []string{"plan-size"}, decide("vaultclaw_plan_execute", `{}`, tuesday, six))
	assert.Equal(t, []string{"office-hours", "plan-size"}, decide("vaultclaw_passport_email_workflow", `{}`, saturday, six))
}

package gateway

import (
	"os"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/policy"
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

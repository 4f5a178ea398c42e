package tools_test

import (
	"fmt"
	"testing"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// D21: unknown arguments are neither refused nor dropped silently; the call
// goes on and meta.warnings names each, with the closest known name.
func TestUnknownArgumentsAreWarnedAbout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	cases := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"vaultclaw_recipes_search", m("query", "mail", "limt", 1),
			[]string{`unknown argument "limt"; did you mean "limit"?`}},
		{"vaultclaw_recipes_search", m("Query", "mail"),
			[]string{`unknown argument "Query"; did you mean "query"?`}},
		{"vaultclaw_route_resolve", m("request_text", "send an email", "options", m("allow_serch_fallback", false)),
			[]string{`unknown argument "options.allow_serch_fallback"; did you mean "options.allow_search_fallback"?`}},
		{"vaultclaw_unbounded_profile_resolve", m("requirements", []any{m("slot", "s", "mode", "read", "target", "https://a.example", "slott", 1)}, "auto_create", false),
			[]string{`unknown argument "requirements[0].slott"; did you mean "requirements[0].slot"?`}},
		{"vaultclaw_session_status", m("verbose", true),
			[]string{`unknown argument "verbose" is ignored; this tool takes no arguments`}},
		{"vaultclaw_cookbook_get", m("cookbook_id", "nope", "zzzzzz", 1),
			[]string{`unknown argument "zzzzzz" is ignored; known here: cookbook_id, cursor, limit, version`}},
		// Failures carry them too: the misspelt name is why token is missing.
		{"vaultclaw_session_configure", m("tokn", "x"),
			[]string{`unknown argument "tokn"; did you mean "token"?`}},
	}
	for _, c := range cases {
		e := h.call(c.tool, c.args)
		assert.Equal(t, c.want, warnings(e.Meta), "%s %v", c.tool, c.args)
	}

	// Free-form objects (the request Vault reads) and the predecessor's
	// unlisted aliases are not unknown.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"vaultclaw_connector_validate", m("request", m("connector_id", "google", "verb", "x", "anything", 1))},
		{"vaultclaw_route_resolve", m("text", "send an email", "context", m("facts", m("whatever", 1)))},
		{"vaultclaw_recipes_search", m("query", "mail", "limit", 2)},
	} {
		e := h.call(c.tool, c.args)
		_, has := e.Meta["warnings"]
		assert.False(t, has, "%s: no warnings key without unknown arguments, so envelopes stay as they were", c.tool)
	}

	// A flood of junk keys gets a bounded list.
	junk := m("query", "mail")
	for i := range 25 {
		junk[fmt.Sprintf("junk%02d", i)] = i
	}
	e := h.call("vaultclaw_recipes_search", junk)
	require.True(t, e.OK)
	w := warnings(e.Meta)
	require.Len(t, w, 11)
	assert.Equal(t, "15 more unknown arguments not listed", w[10])
}

func warnings(meta map[string]any) []string {
	raw, _ := meta["warnings"].([]any)
	var out []string
	for _, w := range raw {
		s, _ := w.(string)
		out = append(out, s)
	}
	return out
}

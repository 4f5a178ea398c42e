package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeSearcher struct {
	calls int
	hits  []routing.Hit
}

func (f *fakeSearcher) Search(context.Context, routing.SearchQuery) ([]routing.Hit, error) {
	f.calls++
	return f.hits, nil
}

func routeTool(t *testing.T, s routing.Searcher) Tool {
	t.Helper()
	reg, err := routing.Default()
	require.NoError(t, err)
	r, err := Select(Deps{Router: routing.New(reg, s)}, InToolsets(ToolsetRouting))
	require.NoError(t, err)
	require.Len(t, r.Tools(), 1)
	return r.Tools()[0]
}

func invokeJSON(t *testing.T, tool Tool, args string) map[string]any {
	t.Helper()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(args)}}
	env := tool.Invoke(context.Background(), req, nil)
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestRouteResolveTool(t *testing.T) {
	t.Parallel()
	tool := routeTool(t, nil)
	assert.Equal(t, "vaultclaw_route_resolve", tool.Name)
	assert.True(t, tool.Hints.ReadOnly)

	// Example 33: no text at all.
	m := invokeJSON(t, tool, `{}`)
	assert.Equal(t, false, m["ok"])
	errBody := m["error"].(map[string]any)
	assert.Equal(t, apperr.CodeValidation, errBody["code"])
	assert.Equal(t, "request_text is required", errBody["message"])

	m = invokeJSON(t, tool, `{"request_text":"send email to skl83@cornell.edu"}`)
	require.Equal(t, true, m["ok"])
	assert.Equal(t, routing.ResolverVersion, m["meta"].(map[string]any)["resolver"])
	data := m["data"].(map[string]any)
	assert.Len(t, data, 13)
	assert.Equal(t, routing.StatusMissingInputs, data["status"])

	// Aliases request and text, and facts from context.
	for _, key := range []string{"request", "text"} {
		m = invokeJSON(t, tool, `{"`+key+`":"send email to skl83@cornell.edu","context":{"facts":{"email_subject":"Hi","email_body":"Body"}}}`)
		require.Equal(t, true, m["ok"], key)
		assert.Equal(t, routing.StatusExecutable, m["data"].(map[string]any)["status"], key)
	}
	// request_text wins over the aliases.
	m = invokeJSON(t, tool, `{"request_text":"tell me a joke","request":"send email to a@b.com"}`)
	assert.Equal(t, routing.StatusNotEligible, m["data"].(map[string]any)["status"])

	m = invokeJSON(t, tool, `{"request_text":"`+strings.Repeat("x", routing.MaxRequestBytes+1)+`"}`)
	assert.Equal(t, apperr.CodeValidation, m["error"].(map[string]any)["code"])

	// Malformed facts and options are validation errors naming the field.
	m = invokeJSON(t, tool, `{"request_text":"x","context":{"facts":"nope"}}`)
	assert.Equal(t, apperr.CodeValidation, m["error"].(map[string]any)["code"])
	m = invokeJSON(t, tool, `{"request_text":"x","options":{"allow_search_fallback":"yes"}}`)
	assert.Equal(t, apperr.CodeValidation, m["error"].(map[string]any)["code"])
}

func TestRouteResolveSearchFallbackOption(t *testing.T) {
	t.Parallel()
	fs := &fakeSearcher{hits: []routing.Hit{{CookbookID: "google.workspace", Version: "1.0.0", EntryID: "calendar_recipe_events_list_v1",
		EntryType: "recipe.verb.v1", ConnectorID: "google", Verb: "google.calendar.events.list", Tags: []string{"calendar", "events", "list"}}}}
	tool := routeTool(t, fs)
	m := invokeJSON(t, tool, `{"request_text":"list my calendar events"}`)
	assert.Equal(t, routing.StatusExecutable, m["data"].(map[string]any)["status"], "fallback defaults to on")
	assert.Equal(t, 1, fs.calls)
	m = invokeJSON(t, tool, `{"request_text":"list my calendar events","options":{"allow_search_fallback":false}}`)
	assert.Equal(t, routing.StatusNotEligible, m["data"].(map[string]any)["status"])
	assert.Equal(t, 1, fs.calls)
}

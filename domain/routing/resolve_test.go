package routing

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/builtin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func resolve(t testing.TB, text string, facts map[string]any) Result {
	t.Helper()
	return New(testReg(t), nil).Resolve(context.Background(), Request{Text: text, Facts: facts, AllowSearch: true})
}

func TestGmailComposeEnrichmentFlow(t *testing.T) {
	const text = "send an email to skl83@cornell.edu explaining the steps to reset a router"
	first := resolve(t, text, nil)
	require.Equal(t, StatusMissingInputs, first.Status)
	require.Len(t, first.MissingInputGuidance, 2)
	for _, g := range first.MissingInputGuidance {
		require.Equal(t, ModeAutoRetry, g.ResolutionMode, g.InputKey)
		require.NotNil(t, g.ExternalFactRequest)
		assert.True(t, g.ExternalFactRequest.Parallelizable)
		assert.Equal(t, "gmail_compose_enrichment", g.ExternalFactRequest.BatchGroup)
		assert.Equal(t, text, g.ExternalFactRequest.RequestText)
		assert.Equal(t, g.ExternalFactRequest.FactKind, g.ExternalFactRequest.Kind)
	}
	assert.Equal(t, "email_subject", first.MissingInputGuidance[0].ExternalFactRequest.FactKey)
	assert.Equal(t, "email_body", first.MissingInputGuidance[1].ExternalFactRequest.FactKey)
	h := first.ProgressHint
	require.NotNil(t, h)
	assert.Equal(t, ProgressHint{Mode: ProgressAutoEnrich, NextAction: NextRunFactsRetry, RetryRecommended: true, Parallelizable: true,
		FactKeys: []string{"email_body", "email_subject"}, BatchGroups: []string{"gmail_compose_enrichment"},
		Message: "Missing inputs can be auto-filled with normal-loop facts. Fetch facts and retry route resolve."}, *h)
	assert.False(t, first.NeedsClarification)

	// The agent runs both fact tasks in parallel and retries.
	second := resolve(t, text, map[string]any{"email_subject": "Router reset steps", "email_body": "1. Unplug it. 2. Wait. 3. Plug it in."})
	require.Equal(t, StatusExecutable, second.Status)
	assert.Equal(t, "Router reset steps", second.Inputs["subject"])
	assert.Equal(t, "1. Unplug it. 2. Wait. 3. Plug it in.", second.Inputs["text_plain"])
	assert.Nil(t, second.ProgressHint)
	assert.Empty(t, second.MissingInputGuidance)
	assert.Equal(t, []Autofill{
		{InputKey: "subject", Source: SourceFacts, Reason: "composed subject from normal-loop facts", FactKey: "email_subject"},
		{InputKey: "text_plain", Source: SourceFacts, Reason: "composed body from normal-loop facts", FactKey: "email_body"},
	}, second.AutofilledInputs)
}

func TestGenericHTTPEnrichment(t *testing.T) {
	res := resolve(t, "call the partner api webhook", nil)
	require.Equal(t, "generic.http.request.v1", res.Route.RouteID)
	require.Equal(t, []string{"url"}, res.MissingInputs)
	fr := res.MissingInputGuidance[0].ExternalFactRequest
	require.NotNil(t, fr)
	assert.Equal(t, "generic_http_enrichment", fr.BatchGroup)
	assert.Equal(t, "url", fr.FactKey)
	assert.Equal(t, []string{"generic_http_enrichment"}, res.ProgressHint.BatchGroups)

	// http_url is the alias fact; a URL in the text needs no facts at all.
	res = resolve(t, "call the partner api webhook", map[string]any{"http_url": "https://p.example/hook"})
	assert.Equal(t, StatusExecutable, res.Status)
	assert.Equal(t, "filled url from context.facts.http_url", res.AutofilledInputs[0].Reason)
	res = resolve(t, "POST to the webhook https://hooks.example.com/x?y=1.", nil)
	assert.Equal(t, StatusExecutable, res.Status)
	assert.Equal(t, "https://hooks.example.com/x?y=1", res.Inputs["url"])
	assert.Equal(t, "POST", res.Inputs["method"])
}

func TestWeatherDetectionD10(t *testing.T) {
	cases := []struct{ in, loc, tf string }{
		{"tomorrow's weather in santa rosa california", "santa rosa california", "tomorrow"},
		{"weather in boston tomorrow", "boston", "tomorrow"},
		{"weather for new york next week", "new york", "next week"},
		{"this weekend's weather in miami", "miami", "this weekend"},
		{"weather forecast in tokyo", "tokyo", "today"},
		{"weather in paris, france tonight", "paris, france", "tonight"},
		{"the weather in boston and remind him about lunch", "boston", "today"},
		{"what's the weather like", "", "today"},
		{"boston's weather tomorrow", "boston", "tomorrow"},
		{"send him new york's weather", "new york", "today"},
		{"weather tomorrow in chicago", "chicago", "tomorrow"},
		{"Weather in Boston.  Tomorrow I leave", "boston", "today"},
	}
	for _, c := range cases {
		wx := detectWeather(strings.ToLower(c.in))
		assert.True(t, wx.requested, c.in)
		assert.Equal(t, c.loc, wx.location, c.in)
		assert.Equal(t, c.tf, wx.timeframe, c.in)
	}
	assert.False(t, detectWeather("a weatherproof jacket").requested, "whole word only")
}

func TestDocumentAliases(t *testing.T) {
	reg := testReg(t)
	docs := func(s string) []string { return reg.documentTypes(newText(s)) }
	assert.Equal(t, []string{"identity.passport"}, docs("attach my passport"))
	assert.Equal(t, []string{"identity.passport"}, docs("attach my passports"))
	assert.Empty(t, docs("send the passportal link"))
	assert.Empty(t, docs("send an email without my passport"))
	assert.Empty(t, docs("email it, no passport please"))
	assert.Empty(t, docs("don't attach my passport"))
	assert.Equal(t, []string{"identity.drivers_license"}, docs("send my driver's license without my passport"))
	assert.Equal(t, []string{"identity.passport"}, docs("send my passport and without the birth certificate"))
	assert.Equal(t, []string{"identity.passport"}, docs("without a subject, and my passport"))
	assert.Equal(t, []string{"identity.passport"}, docs("my passport photo page and passport scan"))

	res := resolve(t, "send an email to a@b.com without my passport saying hi", nil)
	assert.NotContains(t, res.Inputs, "document_attachments")
}

func TestPassportIntentNegationAndMail(t *testing.T) {
	res := resolve(t, "send an email to a@b.com with my passport but without passport details in the body", nil)
	assert.NotEqual(t, PassportRouteID, res.Route.RouteID)
	res = resolve(t, "e-mail a@b.com my passport fields in the body", nil)
	assert.Equal(t, PassportRouteID, res.Route.RouteID)
	res = resolve(t, "email a@b.com my passport details with subject 'Docs' and body 'see below'", nil)
	assert.Equal(t, "Docs", res.Inputs["subject"])
}

func TestPassportIntentRecipientFromFacts(t *testing.T) {
	const text = "send an email with a copy of my passport and include passport fields in the body"
	res := resolve(t, text, map[string]any{"to": "a@b.com"})
	assert.Equal(t, StatusExecutable, res.Status)
	assert.Equal(t, "a@b.com", res.Inputs["recipient_email"])
	assert.Equal(t, "filled recipient_email from context.facts.to", res.AutofilledInputs[0].Reason)
	res = resolve(t, text, map[string]any{"recipient_email": []any{"a@b.com", "c@d.com"}})
	assert.Equal(t, StatusAmbiguous, res.Status)
}

func TestOversizedRequest(t *testing.T) {
	res := resolve(t, strings.Repeat("send email to a@b.com ", 1000), nil)
	assert.Equal(t, StatusNotEligible, res.Status)
	assert.Contains(t, res.Reasons[0], "longer than")
}

func TestTopicPhraseStopsAtRecipient(t *testing.T) {
	res := resolve(t, "send a message regarding the invoice to bob@x.com", nil)
	assert.Equal(t, "the invoice", res.Inputs["subject"])
	assert.Equal(t, "Following up regarding the invoice.", res.Inputs["text_plain"])
	assert.Equal(t, "q3 plans", topicPhrase("email about q3 plans for a@b.co"))
}

func TestExtractionFalsePositivesFixed(t *testing.T) {
	reg := testReg(t)
	in := reg.extract(newText("send a message regarding the thread conversation and put it away"))
	assert.NotContains(t, in, "message_id")
	assert.NotContains(t, in, "thread_id")
	assert.NotContains(t, in, "method")
	in = reg.extract(newText("read message 18c2f3a9b0 and thread_id=abc"))
	assert.Equal(t, "18c2f3a9b0", in["message_id"])
	assert.Equal(t, "abc", in["thread_id"])
	in = reg.extract(newText("Send to A@X.com, a@x.com and b@y.org"))
	assert.Equal(t, []string{"A@X.com", "b@y.org"}, in["to"])
	in = reg.extract(newText(`email bob@x.com, subject: "Q3 numbers", body: 'see attached'`))
	assert.Equal(t, "Q3 numbers", in["subject"])
	assert.Equal(t, "see attached", in["text_plain"])
	in = reg.extract(newText("show the top 5 in gmail; method: delete"))
	assert.Equal(t, 5, in["page_limit"])
	assert.Equal(t, "DELETE", in["method"])
}

func TestFactAutofillTypeChecked(t *testing.T) {
	// A scalar recipient fact becomes an array; a non-string is ignored.
	res := resolve(t, "send email with subject 'x' and body 'y'", map[string]any{"to": "bob@example.com"})
	assert.Equal(t, StatusExecutable, res.Status)
	assert.Equal(t, []string{"bob@example.com"}, res.Inputs["to"])
	res = resolve(t, "send email with subject 'x' and body 'y'", map[string]any{"to": 42})
	assert.Equal(t, StatusMissingInputs, res.Status)
	assert.Equal(t, []string{"to"}, res.MissingInputs)
	// Autofill order is sorted by input key, whatever the map order.
	res = resolve(t, "send email", map[string]any{"to": []any{"a@b.com"}, "cc": []any{"c@d.com"}, "bcc": []any{"e@f.com"}, "text_html": "<p>x</p>", "email_subject": "s", "email_body": "b"})
	var keys []string
	for _, a := range res.AutofilledInputs {
		keys = append(keys, a.InputKey)
	}
	assert.Equal(t, []string{"subject", "text_plain", "bcc", "cc", "text_html", "to"}, keys)
}

func TestSearchFallbackErrorsReported(t *testing.T) {
	fs := &fakeSearch{err: errors.New("index unavailable")}
	res := New(testReg(t), fs).Resolve(context.Background(), Request{Text: "list my calendar events", AllowSearch: true})
	assert.Equal(t, StatusNotEligible, res.Status)
	assert.Equal(t, []string{reasonNoMatch, "search fallback failed: index unavailable"}, res.Reasons)

	// Disabled fallback never calls the searcher.
	fs = &fakeSearch{hits: []Hit{calendarHit}}
	res = New(testReg(t), fs).Resolve(context.Background(), Request{Text: "list my calendar events", AllowSearch: false})
	assert.Equal(t, StatusNotEligible, res.Status)
	assert.Empty(t, fs.queries)
}

func TestSearchFallbackAmbiguousAndLowScore(t *testing.T) {
	a := Hit{CookbookID: "cal", Version: "1.0.0", EntryID: "calendar_events_list_v1", EntryType: "recipe.verb.v1", Tags: []string{"calendar"}}
	b := Hit{CookbookID: "cal", Version: "1.0.0", EntryID: "calendar_events_create_v1", EntryType: "recipe.verb.v1", Tags: []string{"calendar"}}
	res := New(testReg(t), &fakeSearch{hits: []Hit{a, b}}).Resolve(context.Background(), Request{Text: "calendar events", AllowSearch: true})
	assert.Equal(t, StatusAmbiguous, res.Status)
	assert.True(t, res.NeedsClarification, "consistent with the registry path")
	low := Hit{CookbookID: "x", Version: "1.0.0", EntryID: "unrelated_thing", EntryType: "other"}
	res = New(testReg(t), &fakeSearch{hits: []Hit{low}}).Resolve(context.Background(), Request{Text: "unrelated please", AllowSearch: true})
	assert.Equal(t, StatusNotEligible, res.Status)
}

func TestSearchQueryDeterministic(t *testing.T) {
	q := searchQuery(newText("zeta alpha beta gamma"))
	assert.Equal(t, "alpha", q.Text, "equal-length ties break alphabetically")
	q = searchQuery(newText("ping the webhook over http"))
	assert.Equal(t, "http", q.Text)
	assert.Equal(t, []string{"http"}, q.Tags)
}

func TestLatestOnly(t *testing.T) {
	hits := latestOnly([]Hit{untrashHit("1.2.0"), untrashHit("1.10.0"), untrashHit("1.3.0"), untrashHit("2.0.0-rc.1")})
	require.Len(t, hits, 1)
	assert.Equal(t, "2.0.0-rc.1", hits[0].Version)
	hits = latestOnly([]Hit{untrashHit("2.0.0-rc.1"), untrashHit("2.0.0")})
	assert.Equal(t, "2.0.0", hits[0].Version)
}

func TestRegistryValidation(t *testing.T) {
	base := func(routes string) string {
		return `{"type":"vaultclaw.routing.registry.v1","version":"1","inputs":{"to":{"type":"string_array"}},"routes":` + routes + `}`
	}
	ok := `{"route_id":"r.one","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"recipe.verb.v1","keywords":["a"]}`
	_, err := Load([]byte(base("[" + ok + "]")))
	require.NoError(t, err)
	for name, c := range map[string]struct{ raw, msg string }{
		"duplicate id":    {base("[" + ok + "," + ok + "]"), "duplicate route_id"},
		"unknown input":   {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":["a"],"required_inputs":["nope"]}]`), `unknown input key "nope"`},
		"policy input":    {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":["a"],"enrichment_policies":[{"input_key":"zz","resolution_mode":"ASK_USER"}]}]`), `unknown input key "zz"`},
		"tool invoke":     {base(`[{"route_id":"r","domain":"d","strategy":"TOOL_INVOKE","keywords":["a"]}]`), "unknown strategy"},
		"no keywords":     {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":[" "]}]`), "keywords must be non-empty"},
		"unknown field":   {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":["a"],"keyword":["b"]}]`), "unknown field"},
		"wrong type":      {`{"type":"x","version":"1","inputs":{"to":{"type":"string"}},"routes":[` + ok + `]}`, "type must be"},
		"auto needs fact": {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":["a"],"required_inputs":["to"],"enrichment_policies":[{"input_key":"to","resolution_mode":"AUTO_RETRY_WITH_FACTS"}]}]`), "needs fact_key"},
		"bad condition":   {base(`[{"route_id":"r","domain":"d","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"x","keywords":["a"],"required_inputs":["to"],"enrichment_policies":[{"input_key":"to","resolution_mode":"ASK_USER","condition":"sunny"}]}]`), "unknown condition"},
		"no routes":       {base(`[]`), "routes must be non-empty"},
		"alias collision": {`{"type":"vaultclaw.routing.registry.v1","version":"1","inputs":{"to":{"type":"string_array"}},"document_type_aliases":{"Passport":"identity.passport","passport ":"identity.other"},"routes":[` + ok + `]}`, "normalize to the same alias"},
		"input type":      {`{"type":"vaultclaw.routing.registry.v1","version":"1","inputs":{"to":{"type":"list"}},"routes":[` + ok + `]}`, "unknown type"},
	} {
		_, err := Load([]byte(c.raw))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.msg, name)
	}
}

func TestDefaultRegistryMatchesBuiltinCatalog(t *testing.T) {
	// Every template/recipe route names an entry of the built-in cookbook
	// the server seeds, with the same version, entry type and inputs: its
	// required inputs are exactly the bindings that are required without a
	// default, its optional inputs the other bindings.
	bundles, err := builtin.Bundles()
	require.NoError(t, err)
	type key struct{ cookbook, version, entry string }
	entries := map[key]catalog.Entry{}
	for _, b := range bundles {
		for _, e := range b.Entries {
			entries[key{b.CookbookID, b.Version, e.EntryID}] = e
		}
	}
	for _, rt := range testReg(t).Routes {
		if rt.Strategy != StrategyTemplate && rt.Strategy != StrategyRecipe {
			continue
		}
		e, ok := entries[key{rt.CookbookID, rt.Version, rt.EntryID}]
		require.True(t, ok, "%s: %s@%s %s is not a built-in entry", rt.RouteID, rt.CookbookID, rt.Version, rt.EntryID)
		assert.Equal(t, e.EntryType, rt.EntryType, rt.RouteID)
		var req, opt []string
		for _, b := range e.Bindings {
			if b.IsRequired() && !b.HasDefault() {
				req = append(req, b.InputKey)
			} else {
				opt = append(opt, b.InputKey)
			}
		}
		assert.Equal(t, normList(req), rt.RequiredInputs, rt.RouteID)
		assert.Equal(t, normList(opt), rt.OptionalInputs, rt.RouteID)
	}
}

func TestRegistryEntriesExistInPredecessorCookbook(t *testing.T) {
	raw := readFixture(t, "predecessor/cookbooks/google.workspace/1.3.0.json")
	var bundle struct {
		Entries []struct {
			EntryID   string `json:"entry_id"`
			EntryType string `json:"entry_type"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(raw, &bundle))
	types := map[string]string{}
	for _, e := range bundle.Entries {
		types[e.EntryID] = e.EntryType
	}
	for _, rt := range testReg(t).Routes {
		if rt.CookbookID == "google.workspace" {
			assert.Equal(t, types[rt.EntryID], rt.EntryType, rt.RouteID)
		}
	}
}

func TestResultJSONShape(t *testing.T) {
	for _, text := range []string{"", "tell me a joke", "send email to a@b.com", "email bob@example.com tomorrow's weather in paris"} {
		raw, err := json.Marshal(resolve(t, text, nil))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		assert.Len(t, m, 13, text)
		for _, k := range []string{"inputs", "missing_inputs", "autofilled_inputs", "missing_input_guidance", "reasons"} {
			assert.NotNil(t, m[k], "%s: %s must not be null", text, k)
		}
		assert.Contains(t, m["execution"], "strategy")
		assert.IsType(t, map[string]any{}, m["route"])
	}
}

package routing

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testReg(t testing.TB) *Registry {
	t.Helper()
	reg, err := Default()
	require.NoError(t, err)
	return reg
}

// fakeSearch returns hits whose words contain the query, like a catalog
// index would; it records the queries it saw.
type fakeSearch struct {
	hits    []Hit
	err     error
	queries []SearchQuery
}

func (f *fakeSearch) Search(_ context.Context, q SearchQuery) ([]Hit, error) {
	f.queries = append(f.queries, q)
	if f.err != nil {
		return nil, f.err
	}
	var out []Hit
	for _, h := range f.hits {
		hay := strings.Join(append([]string{h.EntryID, h.Title, h.EntryType, h.ConnectorID, h.Verb}, h.Tags...), " ")
		if strings.Contains(strings.ToLower(hay), q.Text) {
			out = append(out, h)
		}
	}
	return out, nil
}

var calendarHit = Hit{CookbookID: "google.workspace", Version: "1.0.0", EntryID: "calendar_recipe_events_list_v1",
	EntryType: "recipe.verb.v1", Title: "List Calendar Events", ConnectorID: "google", Verb: "google.calendar.events.list",
	Tags: []string{"calendar", "events", "list"}}

var partnerHit = Hit{CookbookID: "partner.tools", Version: "1.0.0", EntryID: "partner_tpl_sync_request_v1",
	EntryType: "template.verb.v1", Title: "Partner Sync Request", ConnectorID: "generic.http", Verb: "generic.http.request.v1",
	Tags: []string{"partner", "sync"}, RequiredInputs: []string{"url", "api_key"}}

func untrashHit(version string) Hit {
	return Hit{CookbookID: "google.workspace", Version: version, EntryID: "gmail_tpl_plan_untrash_message_v1",
		EntryType: "template.plan.v1", Title: "Template: Restore Trashed Message", Tags: []string{"gmail", "template", "plan", "untrash"},
		RequiredInputs: []string{"message_id"}}
}

func customRegistry(t testing.TB, routes string) *Registry {
	t.Helper()
	raw := `{"type":"vaultclaw.routing.registry.v1","version":"0.0.1",
	  "inputs":{"api_token":{"type":"string"},"to":{"type":"string_array"}},
	  "routes":` + routes + `}`
	reg, err := Load([]byte(raw))
	require.NoError(t, err)
	return reg
}

func guidanceByKey(res Result) map[string]Guidance {
	out := map[string]Guidance{}
	for _, g := range res.MissingInputGuidance {
		out[g.InputKey] = g
	}
	return out
}

func fills(res Result) map[string]Autofill {
	out := map[string]Autofill{}
	for _, a := range res.AutofilledInputs {
		out[a.InputKey] = a
	}
	return out
}

// TestSpecExamples replays the predecessor's documented resolver examples,
// numbered as it numbers them. Rows marked D10 or "fix" deliberately differ
// from the predecessor's observed output.
func TestSpecExamples(t *testing.T) {
	const to = "skl83@cornell.edu"
	cases := []struct {
		n      int
		text   string
		facts  map[string]any
		search Searcher
		noFB   bool
		reg    func(t testing.TB) *Registry
		check  func(t *testing.T, r Result)
	}{
		{n: 1, text: "send an email to skl83@cornell.edu with subject 'hello' and body 'testing from vault'", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, ConfidenceHigh, r.Confidence)
			assert.Equal(t, 18, r.Score)
			assert.Equal(t, "google.gmail.send_email.v1", r.Route.RouteID)
			assert.Equal(t, "gmail_tpl_plan_send_email_v1", r.Route.EntryID)
			assert.Equal(t, Execution{Strategy: StrategyTemplate, Tool: "vaultclaw_template_render"}, r.Execution)
			assert.Equal(t, map[string]any{"to": []string{to}, "subject": "hello", "text_plain": "testing from vault"}, r.Inputs)
			assert.Empty(t, r.AutofilledInputs)
			assert.Nil(t, r.ProgressHint)
			assert.False(t, r.NeedsClarification)
		}},
		{n: 2, text: "send an email to skl83@cornell.edu with the subject hi and message body hello", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "google.gmail.send_email.v1", r.Route.RouteID)
			assert.Equal(t, "hi", r.Inputs["subject"])
			assert.Equal(t, "hello", r.Inputs["text_plain"])
		}},
		{n: 3, text: "send email to skl83@cornell.edu about project kickoff notes", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "project kickoff notes", r.Inputs["subject"])
			assert.Equal(t, "Following up regarding project kickoff notes.", r.Inputs["text_plain"])
			assert.Equal(t, SourceHeuristic, fills(r)["subject"].Source)
			assert.Equal(t, SourceHeuristic, fills(r)["text_plain"].Source)
		}},
		// Fix: the attachment body default is reachable, instead
		// of "Following up regarding Document: Passport.".
		{n: 4, text: "send email with my passport to skl83@cornell.edu", noFB: true, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, StrategyTemplate, r.Execution.Strategy)
			assert.Equal(t, []any{map[string]any{"type_id": "identity.passport"}}, r.Inputs["document_attachments"])
			assert.Equal(t, "Document: Passport", r.Inputs["subject"])
			assert.Equal(t, SourceAttachment, fills(r)["subject"].Source)
			assert.Equal(t, "Attached is my passport.", r.Inputs["text_plain"]) // fix
			assert.Equal(t, SourceAttachment, fills(r)["text_plain"].Source)
		}},
		{n: 5, text: "send an email to skl83@cornell.edu with a copy of my passport and the passport fields in the body", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, ConfidenceHigh, r.Confidence)
			assert.Equal(t, PassportRouteID, r.Route.RouteID)
			assert.Equal(t, Execution{Strategy: StrategyToolInvoke, Tool: PassportTool}, r.Execution)
			assert.Equal(t, to, r.Inputs["recipient_email"])
			assert.Equal(t, true, r.Inputs["execute"])
			assert.NotEmpty(t, r.Inputs["request_text"])
		}},
		{n: 6, text: "send an email with a copy of my passport and include passport fields in the body", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, PassportRouteID, r.Route.RouteID)
			assert.Equal(t, []string{"to"}, r.MissingInputs)
			require.Len(t, r.MissingInputGuidance, 1)
			assert.Equal(t, ModeAskUser, r.MissingInputGuidance[0].ResolutionMode)
			assert.Equal(t, ProgressAskUser, r.ProgressHint.Mode)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 7, text: "send an email to a@x.com and b@y.com with passport details in the body", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusAmbiguous, r.Status)
			assert.Equal(t, ConfidenceHigh, r.Confidence)
			assert.Equal(t, PassportRouteID, r.Route.RouteID)
			assert.Nil(t, r.ProgressHint)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 8, text: "send email to skl83@cornell.edu", noFB: true, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, []string{"subject", "text_plain"}, r.MissingInputs)
			g := guidanceByKey(r)
			assert.Equal(t, "email_subject", g["subject"].ExternalFactRequest.FactKey)
			assert.Equal(t, "email_body", g["text_plain"].ExternalFactRequest.FactKey)
			assert.Equal(t, "gmail_compose_enrichment", g["subject"].ExternalFactRequest.BatchGroup)
			assert.Equal(t, ProgressAutoEnrich, r.ProgressHint.Mode)
			assert.Equal(t, []string{"email_body", "email_subject"}, r.ProgressHint.FactKeys)
			assert.False(t, r.NeedsClarification)
		}},
		{n: 9, text: "send an email about project kickoff notes", search: &fakeSearch{hits: []Hit{calendarHit}}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, "google.gmail.send_email.v1", r.Route.RouteID)
			assert.Equal(t, "project kickoff notes", r.Inputs["subject"])
			assert.Equal(t, "Following up regarding project kickoff notes.", r.Inputs["text_plain"])
			assert.Equal(t, []string{"to"}, r.MissingInputs)
			assert.Equal(t, ProgressAskUser, r.ProgressHint.Mode)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 10, text: "tell me a joke about lobsters", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusNotEligible, r.Status)
			assert.Equal(t, ConfidenceLow, r.Confidence)
			assert.False(t, r.NeedsClarification)
			assert.Equal(t, []string{reasonNoMatch}, r.Reasons)
		}},
		// D10: location "boston", timeframe "tomorrow" (predecessor:
		// "boston tomorrow" / "today").
		{n: 11, text: "send email to skl83@cornell.edu about weather in boston tomorrow", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, "weather in boston tomorrow", r.Inputs["subject"])
			fr := guidanceByKey(r)["text_plain"].ExternalFactRequest
			require.NotNil(t, fr)
			assert.Equal(t, "weather_summary", fr.FactKey)
			assert.Equal(t, "weather_forecast", fr.FactKind)
			assert.Equal(t, "boston", fr.Location)    // D10
			assert.Equal(t, "tomorrow", fr.Timeframe) // D10
			assert.Equal(t, ProgressAutoEnrich, r.ProgressHint.Mode)
			assert.Equal(t, []string{"weather_summary"}, r.ProgressHint.FactKeys)
			assert.False(t, r.NeedsClarification)
		}},
		{n: 12, text: "send email to skl83@cornell.edu about weather in boston tomorrow",
			facts: map[string]any{"weather_summary": "Tomorrow in Boston: High 58F, low 44F, light rain."}, check: func(t *testing.T, r Result) {
				assert.Equal(t, StatusExecutable, r.Status)
				// D10: "Weather for boston (tomorrow): …"
				assert.Equal(t, "Weather for boston (tomorrow): Tomorrow in Boston: High 58F, low 44F, light rain.", r.Inputs["text_plain"])
				assert.Equal(t, SourceFacts, fills(r)["text_plain"].Source)
			}},
		{n: 13, text: "send an email to skl83@cornell.edu that has my passport and tomorrow's weather in santa rosa california", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, []any{map[string]any{"type_id": "identity.passport"}}, r.Inputs["document_attachments"])
			assert.Equal(t, "Weather update for santa rosa california (tomorrow)", r.Inputs["subject"])
			fr := guidanceByKey(r)["text_plain"].ExternalFactRequest
			assert.Equal(t, "santa rosa california", fr.Location)
			assert.Equal(t, "tomorrow", fr.Timeframe)
			assert.Equal(t, ProgressAutoEnrich, r.ProgressHint.Mode)
			assert.False(t, r.NeedsClarification)
		}},
		{n: 14, text: "send an email to skl83@cornell.edu with my passport and send him a recipe on how to make teriyaki sauce as well", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, []string{"subject", "text_plain"}, r.MissingInputs)
			g := guidanceByKey(r)
			assert.Equal(t, "email_subject", g["subject"].ExternalFactRequest.FactKey)
			assert.Equal(t, "email_body", g["text_plain"].ExternalFactRequest.FactKey)
			assert.True(t, g["subject"].ExternalFactRequest.Parallelizable)
			assert.True(t, g["text_plain"].ExternalFactRequest.Parallelizable)
			assert.Equal(t, ProgressAutoEnrich, r.ProgressHint.Mode)
			assert.False(t, r.NeedsClarification)
		}},
		{n: 15, text: "send an email to skl83@cornell.edu with my passport and send him a recipe on how to make teriyaki sauce as well",
			facts: map[string]any{"email_subject": "Passport + Teriyaki Sauce Recipe", "email_body": "Here is my passport. Teriyaki sauce: soy, mirin, sugar."},
			check: func(t *testing.T, r Result) {
				assert.Equal(t, StatusExecutable, r.Status)
				assert.Equal(t, "Passport + Teriyaki Sauce Recipe", r.Inputs["subject"])
				assert.Contains(t, r.Inputs["text_plain"], "Teriyaki sauce")
				assert.Equal(t, SourceFacts, fills(r)["subject"].Source)
				assert.Equal(t, SourceFacts, fills(r)["text_plain"].Source)
				assert.NotEmpty(t, r.Inputs["document_attachments"])
			}},
		{n: 16, text: "send this webhook request to the partner endpoint", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, ConfidenceHigh, r.Confidence)
			assert.Equal(t, 12, r.Score)
			assert.Equal(t, "generic.http.request.v1", r.Route.RouteID)
			assert.Equal(t, StrategyConnectorJob, r.Execution.Strategy)
			assert.Equal(t, "vaultclaw_connector_execute_job", r.Execution.Tool)
			assert.Equal(t, map[string]any{"unbounded_profiles": true, "auto_create_profiles": true}, r.Execution.Orchestration)
			fr := guidanceByKey(r)["url"].ExternalFactRequest
			assert.Equal(t, "url", fr.FactKey)
			assert.Equal(t, "connector_input_generation", fr.FactKind)
			assert.Equal(t, "generic_http_enrichment", fr.BatchGroup)
			assert.Equal(t, ProgressAutoEnrich, r.ProgressHint.Mode)
		}},
		{n: 17, text: "send this webhook request to the partner endpoint",
			facts: map[string]any{"url": "https://partner.example.com/webhook", "method": "POST"}, check: func(t *testing.T, r Result) {
				assert.Equal(t, StatusExecutable, r.Status)
				assert.Equal(t, "https://partner.example.com/webhook", r.Inputs["url"])
				assert.Equal(t, "POST", r.Inputs["method"])
				assert.Equal(t, "filled url from context.facts.url", fills(r)["url"].Reason)
			}},
		{n: 18, text: "list my calendar events", search: &fakeSearch{hits: []Hit{calendarHit}}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "search:google.workspace:calendar_recipe_events_list_v1", r.Route.RouteID)
			assert.Equal(t, "search", r.Route.Source)
			assert.Equal(t, Execution{Strategy: StrategyRecipe, Tool: "vaultclaw_recipe_get", ConnectorID: "google", Verb: "google.calendar.events.list"}, r.Execution)
			assert.Equal(t, "", r.Domain)
		}},
		{n: 19, text: "run the partner sync now", search: &fakeSearch{hits: []Hit{partnerHit}}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, StrategyTemplate, r.Execution.Strategy)
			assert.Equal(t, []string{"api_key", "url"}, r.MissingInputs)
			g := guidanceByKey(r)
			assert.Equal(t, "Please provide api_key.", g["api_key"].Question)
			assert.Equal(t, "What URL should be requested?", g["url"].Question)
			assert.Equal(t, ModeAskUser, g["url"].ResolutionMode)
			assert.Equal(t, ProgressAskUser, r.ProgressHint.Mode)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 20, text: "run the partner sync now", search: &fakeSearch{hits: []Hit{partnerHit}},
			facts: map[string]any{"url": "https://partner.example.com/sync", "api_key": "k-1"}, check: func(t *testing.T, r Result) {
				assert.Equal(t, StatusExecutable, r.Status)
				assert.Equal(t, "https://partner.example.com/sync", r.Inputs["url"])
				assert.Equal(t, "k-1", r.Inputs["api_key"])
			}},
		{n: 21, text: "list gmail messages", reg: func(t testing.TB) *Registry {
			return customRegistry(t, `[
			 {"route_id":"a.one","domain":"google.gmail","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"recipe.verb.v1","keywords":["list","messages"]},
			 {"route_id":"a.two","domain":"google.gmail","strategy":"RECIPE","cookbook_id":"c","entry_id":"e","entry_type":"recipe.verb.v1","keywords":["list","messages"]}]`)
		}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusAmbiguous, r.Status)
			assert.True(t, r.NeedsClarification)
			assert.Equal(t, RouteRef{}, r.Route)
		}},
		{n: 22, text: "use token flow", reg: func(t testing.TB) *Registry {
			return customRegistry(t, `[{"route_id":"sensitive.token.route","domain":"security","strategy":"RECIPE","cookbook_id":"c","entry_id":"token_flow","entry_type":"recipe.verb.v1",
			  "keywords":["token","flow"],"required_inputs":["api_token"],
			  "enrichment_policies":[{"input_key":"api_token","resolution_mode":"AUTO_RETRY_WITH_FACTS","fact_key":"api_token","fact_kind":"secret","sensitive":true}]}]`)
		}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, "sensitive.token.route", r.Route.RouteID)
			assert.Equal(t, ModeAskUser, guidanceByKey(r)["api_token"].ResolutionMode)
			assert.Nil(t, guidanceByKey(r)["api_token"].ExternalFactRequest)
			assert.Equal(t, ProgressAskUser, r.ProgressHint.Mode)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 23, text: "reply to thread_id: t123 in gmail", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status)
			assert.Equal(t, "google.gmail.reply_email.v1", r.Route.RouteID)
			assert.Equal(t, "t123", r.Inputs["thread_id"])
			assert.Equal(t, []string{"text_plain", "to"}, r.MissingInputs)
			g := guidanceByKey(r)
			assert.Equal(t, ModeAutoRetry, g["text_plain"].ResolutionMode)
			assert.Equal(t, ModeAskUser, g["to"].ResolutionMode)
			assert.Equal(t, ProgressPartialEnrich, r.ProgressHint.Mode)
			assert.Equal(t, NextRunFactsThenAsk, r.ProgressHint.NextAction)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 24, text: "reply to thread_id: t123 in gmail to bob@example.com saying thanks for the update", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "thanks for the update", r.Inputs["text_plain"])
			assert.Equal(t, SourceHeuristic, fills(r)["text_plain"].Source)
		}},
		{n: 25, text: "list first 10 messages in gmail with label: work", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "google.gmail.list_messages_by_label.v1", r.Route.RouteID)
			assert.Equal(t, "template.verb.v1", r.Route.EntryType)
			assert.Equal(t, map[string]any{"label": "work", "page_limit": 10}, r.Inputs)
		}},
		// Fix: only the route's own inputs are returned; the
		// recipe has none, so the implicit label=inbox is not echoed.
		{n: 26, text: "list inbox messages in gmail", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "google.gmail.list_inbox.v1", r.Route.RouteID)
			assert.Equal(t, Execution{Strategy: StrategyRecipe, Tool: "vaultclaw_recipe_get"}, r.Execution)
			assert.Empty(t, r.Inputs) // fix (predecessor: label=inbox)
		}},
		// Fix: English "get" no longer adds method=GET.
		{n: 27, text: "get metadata for gmail message_id: abc123XYZ", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, "google.gmail.get_message_metadata.v1", r.Route.RouteID)
			assert.Equal(t, map[string]any{"message_id": "abc123XYZ"}, r.Inputs) // fix: no method
		}},
		{n: 28, text: "email bob@example.com tomorrow's weather in paris", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusAmbiguous, r.Status)
			assert.Equal(t, ConfidenceMedium, r.Confidence)
			assert.Equal(t, 6, r.Score)
			assert.Equal(t, []string{"bob@example.com"}, r.Inputs["to"])
			assert.True(t, r.NeedsClarification)
		}},
		// Fix: unquoted "subject is hi" is extracted now, so only
		// the body is left, and it follows from the subject.
		{n: 29, text: "send an email to skl83@cornell.edu with a copy of my w-2. subject is hi", check: func(t *testing.T, r Result) {
			assert.Equal(t, "google.gmail.send_email.v1", r.Route.RouteID)
			assert.Equal(t, []string{to}, r.Inputs["to"])
			assert.Equal(t, "hi", r.Inputs["subject"]) // fix
			assert.NotContains(t, r.Inputs, "document_attachments")
			assert.Equal(t, StatusExecutable, r.Status)
		}},
		{n: 30, text: "send my drivers license and birth certificate to a@b.com by email", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusExecutable, r.Status)
			assert.Equal(t, []any{map[string]any{"type_id": "identity.birth_certificate"}, map[string]any{"type_id": "identity.drivers_license"}}, r.Inputs["document_attachments"])
			assert.Equal(t, "Document: Birth Certificate", r.Inputs["subject"])
		}},
		// D7: the fallback sees only the latest version of each entry, so
		// 1.2.0 and 1.3.0 of one entry no longer make it AMBIGUOUS.
		{n: 31, text: "untrash please", search: &fakeSearch{hits: []Hit{untrashHit("1.2.0"), untrashHit("1.3.0")}}, check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusMissingInputs, r.Status) // D7 (predecessor: AMBIGUOUS)
			assert.Equal(t, "search:google.workspace:gmail_tpl_plan_untrash_message_v1", r.Route.RouteID)
			assert.Equal(t, "1.3.0", r.Route.Version)
			assert.Equal(t, []string{"message_id"}, r.MissingInputs)
			assert.Equal(t, "Which message_id should be used?", r.MissingInputGuidance[0].Question)
			assert.True(t, r.NeedsClarification)
		}},
		{n: 32, text: "   ", check: func(t *testing.T, r Result) {
			assert.Equal(t, StatusNotEligible, r.Status)
			assert.Equal(t, []string{"request_text is empty"}, r.Reasons)
			assert.Equal(t, hintEmpty, r.FallbackHint)
		}},
		// 33 (`{}` → MCP_VALIDATION_ERROR) is a tool-level case: see
		// tools/routing_test.go.
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.text, " ", "_"), func(t *testing.T) {
			reg := testReg(t)
			if c.reg != nil {
				reg = c.reg(t)
			}
			r := New(reg, c.search)
			res := r.Resolve(context.Background(), Request{Text: c.text, Facts: c.facts, AllowSearch: !c.noFB})
			c.check(t, res)
			// Deterministic: the same input gives the same output.
			assert.Equal(t, res, r.Resolve(context.Background(), Request{Text: c.text, Facts: c.facts, AllowSearch: !c.noFB}), "example %d", c.n)
			assertListsNonNil(t, res)
		})
	}
}

func assertListsNonNil(t *testing.T, r Result) {
	t.Helper()
	assert.NotNil(t, r.Inputs)
	assert.NotNil(t, r.MissingInputs)
	assert.NotNil(t, r.AutofilledInputs)
	assert.NotNil(t, r.MissingInputGuidance)
	assert.NotNil(t, r.Reasons)
}

func TestSearchNotCalledWhenRegistryMatches(t *testing.T) {
	fs := &fakeSearch{hits: []Hit{calendarHit}}
	res := New(testReg(t), fs).Resolve(context.Background(), Request{Text: "send an email about project kickoff notes", AllowSearch: true})
	assert.Equal(t, "google.gmail.send_email.v1", res.Route.RouteID)
	assert.Empty(t, fs.queries, "example 9: search must not be called")
}

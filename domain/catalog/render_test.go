package catalog

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustBundle(t *testing.T, raw string) *Bundle {
	t.Helper()
	b, err := DecodeBundle([]byte(raw))
	require.NoError(t, err)
	_, _, err = Prepare(b)
	require.NoError(t, err)
	return b
}

func render(t *testing.T, b *Bundle, id string, inputs map[string]any, kind string) (*RenderResult, *apperr.Error) {
	t.Helper()
	e := b.Entry(id)
	require.NotNil(t, e, id)
	res, err := RenderEntry(b, e, inputs, kind)
	if err != nil {
		return nil, apperr.As(err)
	}
	return res, nil
}

const netHTTP = `{"type":"accords.cookbook.bundle.v1","cookbook_id":"net.http","version":"1.0.0","title":"HTTP","entries":[
 {"entry_id":"tpl","entry_type":"template.verb.v1","base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1",
   "request":{"url":"","headers":[{"key":"Accept","value":"application/json"}]}},
  "bindings":[{"target_path":"/request/url","input_key":"url"},{"target_path":"/request/method","input_key":"method","default":"GET"},
   {"target_path":"/request/headers/1/key","input_key":"h1_key"},{"target_path":"/request/headers/1/value","input_key":"h1_val"}]},
 {"entry_id":"tpl_get","entry_type":"template.verb.v1","base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"GET"}},
  "bindings":[{"target_path":"/request/url","input_key":"url"}]},
 {"entry_id":"plan_empty","entry_type":"template.plan.v1","base_plan":{"steps":[]}},
 {"entry_id":"rec","entry_type":"recipe.verb.v1","connector_id":"c","verb":"v","request":{}},
 {"entry_id":"overlap","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{}},
  "bindings":[{"target_path":"/request/z","input_key":"b"},{"target_path":"/request/z","input_key":"a"}]},
 {"entry_id":"schema","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{}},
  "input_schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string"}}},
  "bindings":[{"target_path":"/request/n","input_key":"n"},{"target_path":"/request/s","input_key":"s","default":"x"}]},
 {"entry_id":"opt","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{"keep":"base"}},
  "bindings":[{"target_path":"/request/keep","input_key":"k","required":false},{"target_path":"/request/req","input_key":"r","required":true,"default":"d"}]}
]}`

func TestRenderSection33Synthetic(t *testing.T) {
	b := mustBundle(t, netHTTP)

	res, ae := render(t, b, "tpl", map[string]any{"url": "https://x.example", "h1_key": "X-Id", "h1_val": "7"}, "")
	require.Nil(t, ae)
	req := res.Rendered["request"].(map[string]any)
	assert.Equal(t, "https://x.example", req["url"])
	assert.Equal(t, "GET", req["method"])
	assert.Equal(t, []any{map[string]any{"key": "Accept", "value": "application/json"}, map[string]any{"key": "X-Id", "value": "7"}}, req["headers"])
	assert.Equal(t, []InputRef{{InputKey: "method", TargetPath: "/request/method"}}, res.UsedDefaults)
	assert.Equal(t, []InputRef{}, res.MissingInputs)
	assert.Equal(t, SourceRef{CookbookID: "net.http", Version: "1.0.0", TemplateID: "tpl", EntryType: TypeTemplateVerb, OutputKind: OutputVerbRequest}, res.SourceRef)

	_, ae = render(t, b, "tpl_get", map[string]any{}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateRenderUnresolved, ae.Code)
	assert.Equal(t, "required template inputs are missing", ae.Message)
	assert.Equal(t, []InputRef{{InputKey: "url", TargetPath: "/request/url"}}, ae.Details["missing_inputs"])
	assert.Equal(t, "tpl_get", ae.Details["template_id"])

	_, ae = render(t, b, "tpl_get", map[string]any{"url": "u"}, "PLAN")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)
	assert.Equal(t, "template.verb.v1 requires output_kind VERB_REQUEST or AUTO", ae.Message)
	_, ae = render(t, b, "tpl_get", map[string]any{"url": "u"}, "plan")
	require.NotNil(t, ae, "lower-case plan is PLAN and mismatches")
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)
	res, ae = render(t, b, "tpl_get", map[string]any{"url": "u"}, " verb_request ")
	require.Nil(t, ae)
	assert.Equal(t, OutputVerbRequest, res.SourceRef.OutputKind)
	_, ae = render(t, b, "tpl_get", map[string]any{"url": "u"}, "VERB")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeValidation, ae.Code, "unknown output_kind is a validation error (D2)")
	assert.Equal(t, "output_kind", ae.Details["field"])

	_, ae = render(t, b, "plan_empty", map[string]any{}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)
	assert.Equal(t, "rendered PLAN must include non-empty steps array", ae.Message)

	_, ae = render(t, b, "rec", nil, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateNotFound, ae.Code)
	assert.Equal(t, "entry is not a template", ae.Message)
	assert.Equal(t, TypeRecipeVerb, ae.Details["entry_type"])

	res, ae = render(t, b, "overlap", map[string]any{"a": "A", "b": "B"}, "")
	require.Nil(t, ae)
	assert.Equal(t, "B", res.Rendered["request"].(map[string]any)["z"], "last binding in sorted order wins")

	res, ae = render(t, b, "tpl_get", map[string]any{"url": nil}, "")
	require.Nil(t, ae, "null counts as provided")
	assert.Contains(t, res.Rendered["request"].(map[string]any), "url")
	assert.Nil(t, res.Rendered["request"].(map[string]any)["url"])

	res, ae = render(t, b, "opt", map[string]any{}, "")
	require.Nil(t, ae)
	assert.Equal(t, "base", res.Rendered["request"].(map[string]any)["keep"], "optional without default leaves the base value")
	assert.Equal(t, "d", res.Rendered["request"].(map[string]any)["req"], "a default wins over required")
	assert.Equal(t, []InputRef{{InputKey: "k", TargetPath: "/request/keep"}}, res.SkippedOptional)

	// input_schema is enforced on the effective inputs (given + defaults).
	res, ae = render(t, b, "schema", map[string]any{"n": 3.0}, "")
	require.Nil(t, ae)
	assert.Equal(t, 3.0, res.Rendered["request"].(map[string]any)["n"])
	_, ae = render(t, b, "schema", map[string]any{"n": 0.0}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)
	assert.Equal(t, "inputs do not match the template's input_schema", ae.Message)
	_, ae = render(t, b, "schema", map[string]any{"n": "three"}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)

	// The base is never mutated by a render.
	_, ae = render(t, b, "tpl", map[string]any{"url": "a", "h1_key": "k", "h1_val": "v"}, "")
	require.Nil(t, ae)
	assert.Len(t, b.Entry("tpl").BaseRequest["request"].(map[string]any)["headers"], 1)
}

func TestBindingPathSemantics(t *testing.T) {
	set := func(root any, path string, v any) (any, error) { return SetPointer(root, path, v) }
	got, err := set(map[string]any{"request": map[string]any{"arr": []any{"a0"}}}, "/request/arr/3", "V")
	require.NoError(t, err)
	assert.Equal(t, []any{"a0", nil, nil, "V"}, got.(map[string]any)["request"].(map[string]any)["arr"])

	_, err = set(map[string]any{"o": map[string]any{"0": 1}}, "/o/0", "V")
	assert.EqualError(t, err, `path segment "0" expects array`)
	_, err = set(map[string]any{"arr": []any{}}, "/arr/-", "V")
	assert.EqualError(t, err, `path segment "-" expects object`)
	_, err = set(map[string]any{"s": "scalar"}, "/s/x", "V")
	assert.EqualError(t, err, `path segment "x" expects object`)

	got, err = set(map[string]any{}, "/", "V")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"": "V"}, got)

	got, err = set(map[string]any{}, "/a~1b/c~0d", 1)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a/b": map[string]any{"c~d": 1}}, got)
	_, err = set(map[string]any{}, "/a~2", 1)
	assert.ErrorContains(t, err, "invalid json pointer escape in segment")
	_, err = set(map[string]any{}, "/a~", 1)
	assert.ErrorContains(t, err, "invalid json pointer escape in segment")

	got, err = set(map[string]any{}, "/request/new/0/k", "V")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"request": map[string]any{"new": []any{map[string]any{"k": "V"}}}}, got)

	got, err = set(map[string]any{"a": []any{"x", "y"}}, "/a/01", "Z")
	require.NoError(t, err)
	assert.Equal(t, []any{"x", "Z"}, got.(map[string]any)["a"], "leading zeros are accepted")

	_, err = set(map[string]any{}, "/a/99999999999", 1)
	assert.ErrorContains(t, err, "not an array index", "hostile indexes cannot allocate without bound")

	// A pointer error during render aborts with INPUT_INVALID.
	b := mustBundle(t, `{"type":"accords.cookbook.bundle.v1","cookbook_id":"p","version":"1.0.0","title":"P","entries":[
	  {"entry_id":"t","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{"o":{"0":1}}},
	   "bindings":[{"target_path":"/request/o/0","input_key":"x"},{"target_path":"/request/zz","input_key":"missing"}]}]}`)
	_, ae := render(t, b, "t", map[string]any{"x": 1}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)
	assert.Equal(t, "failed setting rendered value by json pointer", ae.Message)
	assert.Equal(t, "/request/o/0", ae.Details["target_path"])
}

func fixtureBundle(t *testing.T, version string) *Bundle {
	t.Helper()
	b, err := DecodeBundle(loadFixture(t, version))
	require.NoError(t, err)
	_, _, err = Prepare(b)
	require.NoError(t, err)
	return b
}

func keysOf(refs []InputRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.InputKey)
	}
	return out
}

func step(t *testing.T, r *RenderResult, i int) map[string]any {
	t.Helper()
	return r.Rendered["steps"].([]any)[i].(map[string]any)
}

func TestRenderSection33Fixtures(t *testing.T) {
	v11 := fixtureBundle(t, "1.1.0")
	_, ae := render(t, v11, "gmail_tpl_plan_reply_and_triage_v1", map[string]any{"reply_to": "a@example.com", "thread_id": "th"}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateRenderUnresolved, ae.Code)
	assert.Equal(t, []InputRef{{InputKey: "reply_body", TargetPath: "/steps/0/request_base/body_text"}}, ae.Details["missing_inputs"])

	full := map[string]any{"reply_to": "a@example.com", "reply_body": "hi", "thread_id": "th"}
	res, ae := render(t, v11, "gmail_tpl_plan_reply_and_triage_v1", full, "")
	require.Nil(t, ae)
	assert.Equal(t, OutputPlan, res.SourceRef.OutputKind)
	assert.ElementsMatch(t, []string{"reply_subject", "triage_label_id", "remove_label_id"}, keysOf(res.UsedDefaults))
	assert.Len(t, res.Rendered["steps"], 2)
	assert.Equal(t, "th", step(t, res, 0)["request_base"].(map[string]any)["thread_id"])
	assert.Equal(t, "th", step(t, res, 1)["request_base"].(map[string]any)["thread_id"], "one input bound to two paths")
	assert.Equal(t, "a@example.com", step(t, res, 0)["request_base"].(map[string]any)["to"].([]any)[0])
	assert.Equal(t, "Label_TRIAGED", step(t, res, 1)["request_base"].(map[string]any)["add_label_ids"].([]any)[0])
	_, ae = render(t, v11, "gmail_tpl_plan_reply_and_triage_v1", full, "VERB_REQUEST")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateInputInvalid, ae.Code)

	send := map[string]any{"to": []any{"a@example.com"}, "subject": "s", "text_plain": "t"}
	v12 := fixtureBundle(t, "1.2.0")
	res, ae = render(t, v12, "gmail_tpl_plan_send_email_v1", send, "")
	require.Nil(t, ae)
	assert.ElementsMatch(t, []string{"cc", "bcc", "text_html"}, keysOf(res.UsedDefaults))
	assert.NotContains(t, step(t, res, 0)["request_base"], "document_attachments")

	res, ae = render(t, v12, "gmail_tpl_verb_messages_get_metadata_v1", map[string]any{"message_id": "m1"}, "")
	require.Nil(t, ae)
	assert.Equal(t, OutputVerbRequest, res.SourceRef.OutputKind)
	assert.Equal(t, []string{"format"}, keysOf(res.UsedDefaults))
	assert.Equal(t, "metadata", res.Rendered["request"].(map[string]any)["format"])

	v13 := fixtureBundle(t, "1.3.0")
	withAtt := map[string]any{"to": []any{"a@example.com"}, "subject": "s", "text_plain": "t", "thread_id": "th",
		"document_attachments": []any{map[string]any{"type_id": "identity.passport"}}}
	res, ae = render(t, v13, "gmail_tpl_plan_send_email_v1", withAtt, "")
	require.Nil(t, ae)
	assert.ElementsMatch(t, []string{"cc", "bcc", "text_html"}, keysOf(res.UsedDefaults))
	res, ae = render(t, v13, "gmail_tpl_plan_send_email_v1", send, "")
	require.Nil(t, ae)
	assert.ElementsMatch(t, []string{"cc", "bcc", "text_html", "document_attachments"}, keysOf(res.UsedDefaults))
	assert.Equal(t, []any{}, step(t, res, 0)["request_base"].(map[string]any)["document_attachments"])

	for id, ids := range map[string][2]string{
		"gmail_tpl_plan_send_email_v1":      {"create_draft", "send_draft"},
		"gmail_tpl_plan_reply_in_thread_v1": {"create_reply_draft", "send_reply_draft"},
		"gmail_tpl_plan_create_draft_v1":    {"create_draft", ""},
	} {
		res, ae := render(t, v13, id, withAtt, "")
		require.Nil(t, ae, id)
		s0 := step(t, res, 0)
		assert.Equal(t, []any{map[string]any{"type_id": "identity.passport"}}, s0["request_base"].(map[string]any)["document_attachments"], id)
		assert.Equal(t, ids[0], s0["step_id"], id)
		if ids[1] != "" {
			assert.Equal(t, ids[1], s0["default_success_next_step_id"], id)
		}
	}

	res, ae = render(t, v13, "gmail_tpl_verb_messages_list_by_label_v1", map[string]any{"label": "work"}, "")
	require.Nil(t, ae)
	raw, _ := json.Marshal(res.Rendered["query_ast_v1"])
	assert.JSONEq(t, `{"pred":{"field":"label","op":"eq","value":{"kind":"enum","enum":"work"}}}`, string(raw))
	assert.Equal(t, []string{"page_limit"}, keysOf(res.UsedDefaults))
}

func TestServiceRenderNotFoundCodes(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, mustBundle(t, netHTTP), "")
	_, err := e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: "nope", Inputs: map[string]any{}})
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeTemplateNotFound, ae.Code)
	assert.Equal(t, "template not found in cookbook", ae.Message)
	_, err = e.svc.Render(t.Context(), RenderRequest{CookbookID: "missing", TemplateID: "tpl"})
	assert.Equal(t, apperr.CodeCatalogNotFound, apperr.As(err).Code)
	_, err = e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: " "})
	ae = apperr.As(err)
	assert.Equal(t, apperr.CodeValidation, ae.Code)
	assert.Equal(t, "template_id is required", ae.Message)
	res, err := e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: "tpl_get", Version: "1.0.0", Inputs: map[string]any{"url": "u"}})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", res.SourceRef.Version)
}

// Unknown inputs are reported (bounded, in name order, with the closest
// known input) and never rendered; inputs named by input_schema alone are
// known.
func TestRenderWarnsOfUnknownInputs(t *testing.T) {
	b := mustBundle(t, netHTTP)
	res, ae := render(t, b, "schema", map[string]any{"n": 2.0, "s": "y", "__proto__": map[string]any{"x": 1.0}, "nn": 1.0}, "")
	require.Nil(t, ae)
	assert.Equal(t, []string{
		`unknown template input "__proto__" is ignored; its inputs: n, s`,
		`unknown template input "nn" is ignored; did you mean "n"?`,
	}, res.Warnings)
	assert.Equal(t, map[string]any{"n": 2.0, "s": "y"}, res.Rendered["request"])

	res, ae = render(t, b, "schema", map[string]any{"n": 2.0}, "")
	require.Nil(t, ae)
	assert.Empty(t, res.Warnings)

	many := map[string]any{"url": "u"}
	for i := range 25 {
		many[fmt.Sprintf("junk%02d", i)] = true
	}
	res, ae = render(t, b, "tpl_get", many, "")
	require.Nil(t, ae)
	require.Len(t, res.Warnings, 11)
	assert.Equal(t, "15 more unknown template inputs not listed", res.Warnings[10])

	_, ae = render(t, b, "tpl_get", map[string]any{"URL": "u"}, "")
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeTemplateRenderUnresolved, ae.Code)
	assert.Equal(t, []string{`unknown template input "URL" is ignored; did you mean "url"?`}, ae.Warnings)
}

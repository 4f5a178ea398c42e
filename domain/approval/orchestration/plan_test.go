package orchestration

import (
	"context"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPointerParseAndLookup(t *testing.T) {
	doc := mustJSON(`{"a":{"b/c":[10,{"d~e":"x"}]},"":1}`)
	cases := map[string]any{
		"/a/b~1c/0":      float64(10),
		"/a/b~1c/1/d~0e": "x",
		"/":              float64(1),
	}
	for p, want := range cases {
		ptr, err := ParsePointer(p)
		require.NoError(t, err, p)
		got, ok := ptr.Lookup(doc)
		require.True(t, ok, p)
		assert.Equal(t, want, got, p)
		assert.Equal(t, p, ptr.String())
	}
	for _, p := range []string{"/a/b~1c/2", "/a/b~1c/01", "/a/b~1c/-", "/a/x", "/a/b~1c/0/x"} {
		ptr, err := ParsePointer(p)
		require.NoError(t, err)
		_, ok := ptr.Lookup(doc)
		assert.False(t, ok, p)
	}
	for _, p := range []string{"a", "/x~2", "/x~"} {
		_, err := ParsePointer(p)
		assert.Error(t, err, p)
	}
	whole, err := ParsePointer("")
	require.NoError(t, err)
	got, ok := whole.Lookup(doc)
	require.True(t, ok)
	assert.Equal(t, doc, got)
}

func TestPointerSet(t *testing.T) {
	doc := mustJSON(`{"secret_attachments":[{"slot":"old"}],"s":"str"}`)
	set := func(p string, v any) error {
		ptr, err := ParsePointer(p)
		require.NoError(t, err)
		nd, err := ptr.Set(doc, v)
		if err == nil {
			doc = nd.(map[string]any)
		}
		return err
	}
	require.NoError(t, set("/secret_attachments/0/slot", "api_key"))
	require.NoError(t, set("/secret_attachments/-", map[string]any{"slot": "b"}))
	require.NoError(t, set("/secret_attachments/2/slot", "c"))
	require.NoError(t, set("/new/deep/key", true))
	assert.Equal(t, mustJSON(`{"secret_attachments":[{"slot":"api_key"},{"slot":"b"},{"slot":"c"}],"s":"str","new":{"deep":{"key":true}}}`), doc)

	var ce *ConflictError
	assert.ErrorAs(t, set("/s/x", 1), &ce)
	assert.ErrorAs(t, set("/secret_attachments/9/slot", 1), &ce)
	assert.ErrorAs(t, set("/secret_attachments/x", 1), &ce)
}

func planWith(steps string) map[string]any {
	return mustJSON(`{"type":"connector.execution.plan.v1","start_step_id":"s1","steps":[` + steps + `]}`)
}

const genericStepU9 = `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1",
 "request_base":{"method":"GET","secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com"}]},
 "request_bindings":[{"path":"/url","ref":{"source":"plan_input","path":"/u"}}]}`

func TestPreflightPlanResolves(t *testing.T) {
	f := newFake(profileJSON("zz-last", exactSlot), profileJSON("aa-first", exactSlot))
	plan := planWith(genericStepU9 + `,{"step_id":"g","connector_id":"google","verb":"google.gmail.send.v1","request_base":{"to":["a@b"]},"request_bindings":[{"path":"/x","ref":{"source":"step_output","step_id":"s1","path":"/y"}}]}`)
	orig, _ := DeepCopy(plan)
	out, res, err := NewResolver(f).PreflightPlan(context.Background(), plan, mustJSON(`{"u":"https://api.example.com/x"}`), PlanOptions{Strict: true, AutoCreate: true, PlanInputSet: true})
	require.NoError(t, err)
	assert.Equal(t, orig, any(plan), "input plan is not modified")
	require.Len(t, res, 1, "U12: the non-generic step gets no resolution")
	assert.Equal(t, StepResolution{StepID: "s1", Status: StepResolved, ProfileID: "aa-first", Requirements: []Requirement{vector1}}, res[0])
	steps := out["steps"].([]any)
	s1 := steps[0].(map[string]any)
	base := s1["request_base"].(map[string]any)
	assert.Equal(t, "https://api.example.com/x", base["url"])
	assert.Equal(t, "aa-first", base["profile_id"])
	assert.Equal(t, []any{}, s1["request_bindings"])
	assert.Equal(t, orig.(map[string]any)["steps"].([]any)[1], steps[1], "non-generic step untouched")
}

func TestPreflightPlanArrayIndexBinding(t *testing.T) {
	// Binding into secret_attachments by index (impossible in the predecessor).
	f := newFake(profileJSON("p1", exactSlot))
	plan := planWith(`{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1",
	 "request_base":{"secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read"}]},
	 "request_bindings":[{"path":"/secret_attachments/0/target","ref":{"source":"plan_input","path":"/targets/1"}}]}`)
	out, res, err := NewResolver(f).PreflightPlan(context.Background(), plan, mustJSON(`{"targets":["x","https://api.example.com"]}`), PlanOptions{Strict: true, PlanInputSet: true})
	require.NoError(t, err)
	assert.Equal(t, "p1", res[0].ProfileID)
	att := out["steps"].([]any)[0].(map[string]any)["request_base"].(map[string]any)["secret_attachments"].([]any)[0].(map[string]any)
	assert.Equal(t, "https://api.example.com", att["target"])
}

const unresolvedStep = `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{},
 "request_bindings":[{"path":"/url","ref":{"source":"plan_input","path":"/missing"}},
  {"path":"/x","ref":{"source":"step_output","step_id":"s0","path":"/draft_id"}},
  {"path":"/y","ref":{"source":"weird"}}]}`

func TestPreflightPlanUnresolvedStrict(t *testing.T) {
	f := newFake()
	_, _, err := NewResolver(f).PreflightPlan(context.Background(), planWith(unresolvedStep), map[string]any{}, PlanOptions{Strict: true, AutoCreate: true, PlanInputSet: true})
	ae := requireCode(t, err, apperr.CodePlanPrecheckUnresolved)
	assert.Equal(t, apperr.CatPlans, ae.Category)
	assert.False(t, ae.Retryable)
	assert.Equal(t, "unable to infer unbounded profile requirements before runtime", ae.Message)
	assert.Equal(t, "s1", ae.Details["step_id"])
	assert.Equal(t, []string{"/url -> plan_input:/missing", "/x -> step_output:/draft_id", "/y -> ref:unsupported_source:weird"}, ae.Details["unresolved_refs"])
	assert.Equal(t, []string{"/missing"}, ae.Details["required_plan_input_paths"])
	assert.Empty(t, f.calls, "no HTTP calls")
}

func TestPreflightPlanPreviewUnresolved(t *testing.T) {
	f := newFake()
	plan := planWith(unresolvedStep)
	orig, _ := DeepCopy(plan)
	out, res, err := NewResolver(f).PreflightPlan(context.Background(), plan, nil, PlanOptions{})
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, StepUnresolved, res[0].Status)
	assert.Equal(t, "runtime bindings required for profile inference", res[0].Reason)
	assert.Len(t, res[0].UnresolvedRefs, 3)
	assert.Equal(t, orig, any(out))
}

func TestPreflightPlanRefSources(t *testing.T) {
	f := newFake()
	step := `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{"keep":1},
	 "request_bindings":[{"path":"/a","ref":{"value":null}},{"path":"/b","ref":{"source":"literal","value":"L"}},
	 {"path":"/c","ref":{"source":"const","value":[1]}},{"path":"/d","ref":{"source":"plan_input","path":"/n/0"}}]}`
	out, res, err := NewResolver(f).PreflightPlan(context.Background(), planWith(step), mustJSON(`{"n":[{"z":true}]}`), PlanOptions{Strict: true, PlanInputSet: true})
	require.NoError(t, err)
	assert.Equal(t, "no secret_attachments requirements found", res[0].Reason)
	assert.Equal(t, mustJSON(`{"keep":1,"a":null,"b":"L","c":[1],"d":{"z":true}}`), out["steps"].([]any)[0].(map[string]any)["request_base"])

	missing := `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1",
	 "request_bindings":[{"path":"/a","ref":{}},{"path":"/b","ref":{"source":"literal"}},{"path":"/c","ref":{"source":"plan_input"}},{"path":"/d","ref":{"source":"runtime","path":"/t"}}]}`
	_, _, err = NewResolver(f).PreflightPlan(context.Background(), planWith(missing), nil, PlanOptions{Strict: true})
	ae := requireCode(t, err, apperr.CodePlanPrecheckUnresolved)
	assert.Equal(t, []string{"/a -> ref:missing_source", "/b -> ref:literal_missing_value", "/c -> ref:plan_input_missing_path", "/d -> runtime:/t"}, ae.Details["unresolved_refs"])
	assert.Equal(t, []string{}, ae.Details["required_plan_input_paths"])
}

func TestPreflightPlanMalformedBindings(t *testing.T) {
	cases := map[string]string{
		`"nope"`:                             "plan.steps[0].request_bindings",
		`["x"]`:                              "plan.steps[0].request_bindings[0]",
		`[{"ref":{}}]`:                       "plan.steps[0].request_bindings[0].path",
		`[{"path":"url","ref":{"value":1}}]`: "plan.steps[0].request_bindings[0].path",
		`[{"path":"/url"}]`:                  "plan.steps[0].request_bindings[0].ref",
		`[{"path":"/method/x","ref":{"value":1}}]`:                   "plan.steps[0].request_bindings[0].path",
		`[{"path":"/a","ref":{"source":"plan_input","path":"bad"}}]`: "plan.steps[0].request_bindings[0].ref.path",
	}
	for bindings, field := range cases {
		step := `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{"method":"GET"},"request_bindings":` + bindings + `}`
		_, _, err := NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), map[string]any{}, PlanOptions{Strict: true, PlanInputSet: true})
		ae := requireCode(t, err, apperr.CodeValidation)
		assert.Equal(t, field, ae.Details["field"], bindings)
		assert.Equal(t, "s1", ae.Details["step_id"])

		_, res, err := NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), map[string]any{}, PlanOptions{PlanInputSet: true})
		require.NoError(t, err)
		assert.Equal(t, StepFailed, res[0].Status)
		assert.NotEmpty(t, res[0].Reason)
	}
	step := `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{"secret_attachments":[{"slot":"a"}]}}`
	_, _, err := NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), nil, PlanOptions{Strict: true})
	ae := requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "plan.steps[0].request_base.secret_attachments[0].mode", ae.Details["field"])
}

func TestPreflightPlanProfileFailure(t *testing.T) {
	step := `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{"secret_attachments":[{"slot":"a","mode":"read","target":"t"}]}}`
	_, _, err := NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), nil, PlanOptions{Strict: true})
	requireCode(t, err, apperr.CodeUnboundedProfileRequired)

	_, res, err := NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), nil, PlanOptions{})
	require.NoError(t, err)
	assert.Equal(t, StepFailed, res[0].Status)
	assert.Equal(t, "no compatible unbounded profile found", res[0].Reason)
	assert.Len(t, res[0].Requirements, 1)

	// Auto-create: CREATED, and the second identical step reuses it without a second upsert.
	f := newFake()
	out, res, err := NewResolver(f).PreflightPlan(context.Background(), planWith(step+`,`+step), nil, PlanOptions{Strict: true, AutoCreate: true})
	require.NoError(t, err)
	assert.Equal(t, StepCreated, res[0].Status)
	assert.Equal(t, StepResolved, res[1].Status)
	assert.Equal(t, res[0].ProfileID, res[1].ProfileID)
	assert.Len(t, f.upserts, 1)
	assert.Equal(t, res[0].ProfileID, out["steps"].([]any)[1].(map[string]any)["request_base"].(map[string]any)["profile_id"])

	// Existing profile_id in the resolved request.
	step = `{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{},"request_bindings":[{"path":"/profile_id","ref":{"value":"pinned"}}]}`
	_, res, err = NewResolver(newFake()).PreflightPlan(context.Background(), planWith(step), nil, PlanOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, StepResolution{StepID: "s1", Status: StepResolved, ProfileID: "pinned", Reason: "request already includes profile_id"}, res[0])
}

func TestPreflightPlanNoSteps(t *testing.T) {
	out, res, err := NewResolver(newFake()).PreflightPlan(context.Background(), mustJSON(`{"type":"x"}`), nil, PlanOptions{Strict: true})
	require.NoError(t, err)
	assert.Nil(t, res)
	assert.Equal(t, mustJSON(`{"type":"x"}`), out)
}

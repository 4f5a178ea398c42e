package tools_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const exactProfile = `{"profile":{"type":"connector.unbounded.profile.v1","profile_id":"%s","connector_id":"generic.http","verb":"generic.http.request.v1","slots":[{"slot":"api_key","allowed_intents":["http.auth"],"expected_secret_types":["api-key"],"allowed_modes":["read"],"allowed_targets":["https://api.example.com"]}]}}`

func profileBody(id string) string { return fmt.Sprintf(exactProfile, id) }

func apiKeyRequest() map[string]any {
	return obj(`{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"GET","url":"https://api.example.com/v1/x",
	 "secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com"}]}}`)
}

func profilesScript() *scriptVault {
	return newScript().
		on("GET "+pathProfiles, 200, `{"items":[{"profile_id":"zz-last"},{"profile_id":"aa-first"}]}`).
		on("GET "+pathProfileGet+"?profile_id=zz-last", 200, profileBody("zz-last")).
		on("GET "+pathProfileGet+"?profile_id=aa-first", 200, profileBody("aa-first"))
}

func TestExecuteJobExistingProfileU1(t *testing.T) {
	t.Parallel()
	s := profilesScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
	r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": apiKeyRequest()})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "connector_id=generic.http&verb=generic.http.request.v1", s.callsTo("GET", pathProfiles)[0].Query)
	assert.Equal(t, "aa-first", at(s.callsTo("POST", pathValidate)[0].Body, "request", "profile_id"))
	assert.Equal(t, "aa-first", at(s.callsTo("POST", pathExecJob)[0].Body, "request", "profile_id"))
	assert.Equal(t, "resolved", at(r.Object(), "preflight", "status"))
	assert.Equal(t, 5.0, at(r.Object(), "preflight", "profile_match", "score"))
	assert.Equal(t, true, at(r.Object(), "preflight", "orchestrated"))
	assert.Equal(t, "aa-first", at(r.Object(), "request", "request", "profile_id"))
}

const upsertVector1 = `{"profile":{"type":"connector.unbounded.profile.v1","profile_id":"mcp.auto.8042d5b7fd92","connector_id":"generic.http","verb":"generic.http.request.v1","slots":[{"slot":"api_key","required":true,"allowed_intents":["http.auth"],"expected_secret_types":["api-key"],"allowed_modes":["read"],"allowed_targets":["https://api.example.com"]}]}}`

func TestExecuteJobAutoCreateU2(t *testing.T) {
	t.Parallel()
	for _, readBack := range []bool{true, false} {
		s := newScript().on("GET "+pathProfiles, 200, `{"items":[]}`).
			on("POST "+pathProfileUp, 200, `{"ok":true}`).
			on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
		if readBack {
			// E16 answers {"profile": ...}, the same shape as the upsert body.
			s.on("GET "+pathProfileGet+"?profile_id=mcp.auto.8042d5b7fd92", 200, upsertVector1)
		}
		r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": apiKeyRequest()})
		require.True(t, r.OK, r.Raw)
		up := s.callsTo("POST", pathProfileUp)
		require.Len(t, up, 1)
		assert.Equal(t, "mcp-unbounded-profile-8042d5b7fd92", up[0].Header.Get("Idempotency-Key"))
		assert.JSONEq(t, upsertVector1, up[0].Raw)
		assert.Equal(t, upsertVector1, up[0].Raw, "byte-exact wire body")
		assert.Equal(t, "created", at(r.Object(), "preflight", "status"))
		assert.Equal(t, "mcp.auto.8042d5b7fd92", at(r.Object(), "preflight", "profile_id"))
		assert.Equal(t, "mcp.auto.8042d5b7fd92", at(s.callsTo("POST", pathExecJob)[0].Body, "request", "profile_id"))
	}
}

func TestExecuteJobAutoCreateWithoutScopeU3(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET "+pathProfiles, 200, `{"items":[]}`).
		on("POST "+pathProfileUp, 403, `{"error":{"code":"INSUFFICIENT_SCOPE","message":"missing scope"}}`)
	r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": apiKeyRequest()})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", r.Code())
	assert.Equal(t, "secrets", at(r.Raw, "error", "category"))
	assert.Equal(t, "profile auto-create requires connectors.unbounded.profiles.write scope; vaultclaw_unbounded_profile_upsert creates a profile covering details.requirements", at(r.Raw, "error", "message"))
	assert.Equal(t, "mcp-unbounded-profile-8042d5b7fd92", r.Details()["idempotency_key"])
	assert.Equal(t, "api_key", at(r.Details(), "requirements", 0, "slot"))
	assert.Empty(t, s.callsTo("POST", pathValidate))
	assert.Empty(t, s.callsTo("POST", pathExecJob))
}

func TestExecuteJobNoAutoCreateU4AndResolveU5(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET "+pathProfiles, 200, `{"items":[]}`)
	r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": apiKeyRequest(), "orchestration": map[string]any{"auto_create_profiles": false}})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", r.Code())
	assert.Equal(t, "no compatible unbounded profile found; vaultclaw_unbounded_profile_upsert creates a profile covering details.requirements", at(r.Raw, "error", "message"))
	assert.Len(t, r.Details()["requirements"], 1)
	assert.Empty(t, s.callsTo("POST", pathProfileUp))

	s = newScript().on("GET "+pathProfiles, 200, `{"items":[{"profile_id":"w"}]}`).
		on("GET "+pathProfileGet+"?profile_id=w", 200, `{"profile":{"profile_id":"w","slots":[{"slot":"api_key","allowed_modes":["write"]}]}}`)
	e := newEnv(t, s)
	req := []any{map[string]any{"slot": "api_key", "mode": "read", "target": "https://api.example.com"}}
	r = e.call("vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": req, "auto_create": false})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", r.Code())
	assert.Empty(t, s.callsTo("POST", pathProfileUp))

	// Resolve tool: validation before the session, dropped incomplete entries.
	r = e.call("vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": []any{}})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, "requirements must be a non-empty array", at(r.Raw, "error", "message"))
	r = e.call("vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": []any{map[string]any{"slot": "x"}}})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", r.Code())
	assert.Equal(t, "no unbounded requirements found; vaultclaw_unbounded_profile_upsert creates a profile covering details.requirements", at(r.Raw, "error", "message"))
	assert.Equal(t, map[string]any{}, r.Details())
}

func TestResolveToolAutoCreate(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET "+pathProfiles, 200, `{"items":[]}`).on("POST "+pathProfileUp, 200, `{}`)
	r := newEnv(t, s).call("vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": []any{
		map[string]any{"slot": "api_key", "intent": "http.auth", "expected_secret_types": []any{"api-key"}, "mode": "read", "target": "https://api.example.com", "required": false}}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "mcp.auto.8042d5b7fd92", r.Object()["profile_id"])
	assert.Equal(t, true, r.Object()["created"])
	assert.Equal(t, 5.0, at(r.Object(), "profile_match", "score"))
	assert.Equal(t, "mcp.auto.8042d5b7fd92", at(r.Object(), "profile", "profile_id"))
	assert.Equal(t, "", at(r.Raw, "meta", "request_id"))
}

func TestExecuteJobProfileShortcutsU6U7U8(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
	e := newEnv(t, s)
	req := apiKeyRequest()
	req["request"].(map[string]any)["profile_id"] = "pinned"
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": req})
	require.True(t, r.OK)
	assert.Equal(t, "profile_id already provided", at(r.Object(), "preflight", "reason"))
	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": plainRequest()})
	assert.Equal(t, "no unbounded requirements derived", at(r.Object(), "preflight", "reason"))
	assert.Empty(t, s.callsTo("GET", pathProfiles))

	bad := apiKeyRequest()
	delete(bad["request"].(map[string]any)["secret_attachments"].([]any)[0].(map[string]any), "target")
	n := len(s.paths())
	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": bad})
	require.Equal(t, "MCP_VALIDATION_ERROR", r.Code(), "D2: malformed attachments are validation errors")
	assert.Equal(t, "secret_attachments[0] requires slot/mode/target", at(r.Raw, "error", "message"))
	assert.Equal(t, "request.request.secret_attachments[0].target", r.Details()["field"])
	assert.Equal(t, n, len(s.paths()))

	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": plainRequest(), "orchestration": map[string]any{"unbounded_profiles": "yes"}})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, "orchestration.unbounded_profiles", r.Details()["field"])
}

func planU9() map[string]any {
	return obj(`{"type":"connector.execution.plan.v1","start_step_id":"s1","steps":[
	 {"step_id":"g","connector_id":"google","verb":"google.gmail.send.v1","policy_version":"1","request_base":{"to":["a@example.com"]}},
	 {"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1",
	  "request_base":{"method":"GET","secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com"}]},
	  "request_bindings":[{"path":"/url","ref":{"source":"plan_input","path":"/u"}}]}]}`)
}

func TestPlanExecutePreflightResolvesU9U12(t *testing.T) {
	t.Parallel()
	s := profilesScript().on("POST "+pathPlanExec, 200, `{"run_id":"run_1","state":"SUCCEEDED"}`)
	r := newEnv(t, s).call("vaultclaw_plan_execute", map[string]any{"plan": planU9(), "plan_input": map[string]any{"u": "https://api.example.com/x"}})
	require.True(t, r.OK, r.Raw)
	sent := s.callsTo("POST", pathPlanExec)[0].Body
	step := at(sent, "plan", "steps", 1).(map[string]any)
	assert.Equal(t, "https://api.example.com/x", at(step, "request_base", "url"))
	assert.Equal(t, "aa-first", at(step, "request_base", "profile_id"))
	assert.Equal(t, []any{}, step["request_bindings"])
	assert.Equal(t, map[string]any{"u": "https://api.example.com/x"}, sent["plan_input"])
	assert.NotContains(t, at(sent, "plan", "steps", 0, "request_base"), "module_hash", "P4: no module hash in plan steps")
	assert.NotEmpty(t, s.callsTo("POST", pathPlanExec)[0].Header.Get("Idempotency-Key"))
	res := at(r.Object(), "preflight", "resolutions").([]any)
	require.Len(t, res, 1, "U12: only the generic step is resolved")
	assert.Equal(t, "RESOLVED", at(res[0], "status"))
	assert.Equal(t, true, at(r.Object(), "preflight", "orchestrated"))
	assert.Equal(t, "module_hash is not injected into plan step request payloads", at(r.Object(), "preflight", "module_hash", "note"))
	assert.Equal(t, "run_1", at(r.Object(), "response", "run_id"))
	assert.Equal(t, "aa-first", at(r.Object(), "plan", "steps", 1, "request_base", "profile_id"))
}

const unresolvedPlan = `{"type":"connector.execution.plan.v1","start_step_id":"s1","steps":[{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{},
 "request_bindings":[{"path":"/url","ref":{"source":"plan_input","path":"/missing"}},{"path":"/x","ref":{"source":"step_output","step_id":"s0","path":"/draft_id"}},{"path":"/y","ref":{"source":"weird"}}]}]}`

func TestPlanPrecheckUnresolvedU10U11(t *testing.T) {
	t.Parallel()
	s := newScript()
	e := newEnv(t, s)
	r := e.call("vaultclaw_plan_execute", map[string]any{"plan": obj(unresolvedPlan), "plan_input": map[string]any{}})
	require.Equal(t, "MCP_PLAN_PROFILE_PRECHECK_UNRESOLVED", r.Code())
	assert.Equal(t, "plans", at(r.Raw, "error", "category"))
	assert.Equal(t, "s1", r.Details()["step_id"])
	assert.Equal(t, []any{"/url -> plan_input:/missing", "/x -> step_output:/draft_id", "/y -> ref:unsupported_source:weird"}, r.Details()["unresolved_refs"])
	assert.Equal(t, []any{"/missing"}, r.Details()["required_plan_input_paths"])
	assert.Empty(t, s.paths(), "no HTTP calls")

	r = e.call("vaultclaw_plan_unbounded_profile_preview", map[string]any{"plan": obj(unresolvedPlan)})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "UNRESOLVED", at(r.Object(), "resolutions", 0, "status"))
	assert.Equal(t, obj(unresolvedPlan), r.Object()["transformed_plan"])

	// Orchestration off: the plan goes through untouched apart from defaults.
	s2 := newScript().on("POST "+pathPlanExec, 200, `{"run_id":"r","state":"SUCCEEDED"}`)
	r = newEnv(t, s2).call("vaultclaw_plan_execute", map[string]any{"plan": obj(unresolvedPlan), "orchestration": map[string]any{"unbounded_profiles": false}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, false, at(r.Object(), "preflight", "orchestrated"))
	assert.NotContains(t, at(r.Object(), "preflight").(map[string]any), "resolutions")
	assert.NotContains(t, s2.callsTo("POST", pathPlanExec)[0].Body, "plan_input")

	// An explicit plan_input: null is forwarded, as the reference does.
	r = newEnv(t, s2).call("vaultclaw_plan_execute", map[string]any{"plan": obj(unresolvedPlan), "plan_input": nil, "orchestration": map[string]any{"unbounded_profiles": false}, "analysis": true, "analysis_model": " m1 "})
	require.True(t, r.OK, r.Raw)
	body := s2.callsTo("POST", pathPlanExec)[1].Body
	v, ok := body["plan_input"]
	assert.True(t, ok)
	assert.Nil(t, v)
	assert.Equal(t, true, body["analysis"])
	assert.Equal(t, "m1", body["analysis_model"])
	assert.NotContains(t, body, "analysis_api_key_secret_id")
}

func TestPlanPreviewMalformedBinding(t *testing.T) {
	t.Parallel()
	plan := obj(`{"steps":[{"step_id":"s1","connector_id":"generic.http","verb":"generic.http.request.v1","request_base":{"method":"GET"},"request_bindings":[{"path":"/method/x","ref":{"value":1}}]}]}`)
	s := newScript()
	e := newEnv(t, s)
	r := e.call("vaultclaw_plan_execute", map[string]any{"plan": plan})
	require.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, "plan.steps[0].request_bindings[0].path", r.Details()["field"])
	r = e.call("vaultclaw_plan_unbounded_profile_preview", map[string]any{"plan": plan})
	require.True(t, r.OK)
	assert.Equal(t, "FAILED", at(r.Object(), "resolutions", 0, "status"))
}

func TestPlanValidateP1(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathPlanValid, 200, `{"valid":true}`)
	plan := obj(`{"type":"connector.execution.plan.v1","steps":[{"step_id":"a","connector_id":"google","verb":"google.gmail.messages.list"}]}`)
	r := newEnv(t, s).call("vaultclaw_plan_validate", map[string]any{"plan": plan, "plan_input": map[string]any{"x": 1}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, true, r.Object()["valid"])
	c := s.callsTo("POST", pathPlanValid)[0]
	assert.NotContains(t, c.Body, "plan_input")
	assert.NotEmpty(t, c.Header.Get("Idempotency-Key"))
	assert.Equal(t, map[string]any{}, at(c.Body, "plan", "steps", 0, "request_base"))
	assert.Equal(t, "label", at(c.Body, "plan", "steps", 0, "query_ast_base", "pred", "field"))
	assert.Equal(t, c.Header.Get("X-Request-Id"), at(r.Raw, "meta", "request_id"))
}

func TestPlanExecuteApprovalShapesP2P3(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathPlanExec, 202, `{"run":{"run_id":"run_9","job_id":"job_9","state":"PENDING_APPROVAL","challenge_id":"ach_run"},"job":{"job_id":"job_9","status":"PENDING","pending_expires_at_unix_ms":42}}`).
		on("GET "+pathPending, 403, `{"error":{"code":"INSUFFICIENT_SCOPE"}}`)
	e := newEnv(t, s)
	r := e.call("vaultclaw_plan_execute", map[string]any{"plan": statusPlan(), "orchestration": map[string]any{"unbounded_profiles": false}})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code())
	a := at(r.Details(), "approval").(map[string]any)
	assert.Equal(t, "PLAN_RUN", a["kind"])
	assert.Equal(t, "run_9", a["run_id"])
	assert.Equal(t, "job_9", a["job_id"])
	assert.Equal(t, "ach_run", a["challenge_id"])
	assert.Equal(t, "", a["pending_id"])
	assert.Nil(t, a["pending_approval"])
	assert.Equal(t, 42.0, a["pending_expires_at_unix_ms"])

	s = newScript().on("POST "+pathPlanExec, 202, `{"run_id":"run_plan_approval_1","job_id":"job_plan_approval_1","job":{"job_id":"job_plan_approval_1","status":"PENDING","error":{"code":"PLAN_APPROVAL_REQUIRED","message":"approval required"},"pending_approval":{"pending_id":"apj_plan_approval_1","challenge":{"challenge_id":"ach_plan_approval_1"}}},"pending_approval":{"pending_id":"apj_plan_approval_1","challenge":{"challenge_id":"ach_plan_approval_1"}}}`)
	r = newEnv(t, s).call("vaultclaw_plan_execute", map[string]any{"plan": statusPlan()})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code())
	assert.Equal(t, "job_plan_approval_1", at(r.Details(), "approval", "job_id"))
	assert.Equal(t, "apj_plan_approval_1", at(r.Details(), "approval", "pending_id"))
	assert.Empty(t, s.callsTo("GET", pathPending))
}

func TestPlanRunGetP5P7AndWaitP6(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/connectors/plans/runs/run_9", 200, `{"run":{"run_id":"run_9","state":"RUNNING"}}`).
		on("GET /v0/connectors/plans/runs/run_1", 200, `{"run":{"run_id":"run_1","job_id":"job_1","state":"DENIED","last_error_code":"PLAN_APPROVAL_DENIED"},"job":{"job_id":"job_1","status":"DENIED","error":{"code":"PLAN_APPROVAL_DENIED"}}}`).
		on("GET /v0/connectors/plans/runs/gone", 404, `{"error":{"code":"PLAN_RUN_NOT_FOUND","message":"no such run"}}`).
		on("GET /v0/connectors/plans/runs/flat", 200, `{"state":"x"}`)
	e := newEnv(t, s)
	r := e.call("vaultclaw_plan_run_get", map[string]any{"run_id": "run_9"})
	require.True(t, r.OK)
	assert.Equal(t, "PENDING", r.Object()["decision_outcome"])
	assert.Equal(t, "PENDING_APPROVAL", at(r.Object(), "approval_state", "status"))
	assert.Equal(t, "run_9", at(r.Object(), "run", "run_id"))
	r = e.call("vaultclaw_plan_run_get", map[string]any{"run_id": "flat"})
	assert.Equal(t, map[string]any{"state": "x"}, r.Object(), "no run object: body unchanged")

	r = e.call("vaultclaw_approval_wait", map[string]any{"handle": map[string]any{"kind": "plan_run", "run_id": "run_1"}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "DENIED", r.Object()["terminal_status"])
	assert.Equal(t, "DENY", r.Object()["decision_outcome"])
	assert.NotNil(t, r.Object()["job"])
	assert.NotNil(t, r.Object()["run"])

	for _, tool := range []string{"vaultclaw_plan_run_get", "vaultclaw_approval_wait"} {
		r = e.call(tool, map[string]any{"run_id": "gone", "handle": map[string]any{"kind": "PLAN_RUN", "run_id": "gone"}})
		require.Equal(t, "MCP_PLAN_RUN_NOT_FOUND", r.Code(), tool)
		assert.Equal(t, "plans", at(r.Raw, "error", "category"))
		assert.Equal(t, 404.0, at(r.Raw, "meta", "vault_http_status"))
	}
}

package tools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Argument shapes the typed domain functions can no longer receive are
// refused at the tools boundary, naming the field, before any Vault call.
func TestTypedArgumentErrors(t *testing.T) {
	t.Parallel()
	s := newScript()
	e := newEnv(t, s)
	cases := []struct {
		tool  string
		args  map[string]any
		field string
		msg   string
	}{
		{"vaultclaw_approvals_pending_list", map[string]any{"states": []any{"WAITING", 1}}, "states[1]", "states[1] must be a string, got integer"},
		{"vaultclaw_approvals_pending_list", map[string]any{"states": 3}, "states", "states must be a string or array, got integer"},
		{"vaultclaw_approvals_pending_list", map[string]any{"states": " , "}, "states", "states cannot be empty"},
		{"vaultclaw_approvals_pending_list", map[string]any{"states": []any{}}, "states", "states cannot be empty"},
		{"vaultclaw_approval_handles_list", map[string]any{"states": []any{" "}}, "states", "states cannot be empty"},
		{"vaultclaw_approval_wait", map[string]any{"handle": "x"}, "handle", "handle must be an object, got string"},
		{"vaultclaw_approval_wait", map[string]any{"handle": nil}, "handle", "handle is required"},
		{"vaultclaw_approval_wait", map[string]any{"handle": map[string]any{"kind": "JOB", "job_id": "j", "pending_id": 3}}, "handle.pending_id", "handle.pending_id must be a string, got integer"},
		{"vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": "x"}, "requirements", "requirements must be an array, got string"},
		{"vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": []any{"x"}}, "requirements[0]", "requirements[0] must be an object, got string"},
		{"vaultclaw_unbounded_profile_resolve", map[string]any{"requirements": []any{}}, "requirements", "requirements must be a non-empty array"},
		{"vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{}, "orchestration": map[string]any{"unbounded_profiles": "no"}},
			"orchestration.unbounded_profiles", "orchestration.unbounded_profiles must be a boolean, got string"},
		{"vaultclaw_approval_wait", map[string]any{"handle": map[string]any{"kind": "JOB", "job_id": "j"}, "timeout_ms": 1e300}, "timeout_ms", "timeout_ms must be int"},
	}
	for _, c := range cases {
		r := e.call(c.tool, c.args)
		require.Equal(t, "MCP_VALIDATION_ERROR", r.Code(), "%s %v: %v", c.tool, c.args, r.Raw)
		assert.Equal(t, c.field, r.Details()["field"], "%s %v", c.tool, c.args)
		assert.Equal(t, c.msg, at(r.Raw, "error", "message"), "%s %v", c.tool, c.args)
	}
	assert.Empty(t, s.paths(), "no Vault call")
}

// The orchestration object's defaults apply whether it is absent, null or
// partial: the nested defaults come from the schema.
func TestOrchestrationArgumentDefaults(t *testing.T) {
	t.Parallel()
	for _, orch := range []any{nil, map[string]any{}, map[string]any{"unbounded_profiles": nil}} {
		s := profilesScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
		args := map[string]any{"request": apiKeyRequest(), "orchestration": orch}
		r := newEnv(t, s).call("vaultclaw_connector_execute_job", args)
		require.True(t, r.OK, r.Raw)
		assert.Equal(t, true, at(r.Object(), "preflight", "orchestrated"), "%v", orch)
		assert.Equal(t, "aa-first", at(r.Object(), "request", "request", "profile_id"), "%v", orch)
	}
	s := newScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
	r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": apiKeyRequest(), "orchestration": map[string]any{"unbounded_profiles": false}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, false, at(r.Object(), "preflight", "orchestrated"))
	assert.Empty(t, s.callsTo("GET", pathProfiles))
}

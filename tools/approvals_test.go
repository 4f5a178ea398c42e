package tools_test

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	pathValidate   = "/v0/connectors/validate"
	pathExecJob    = "/v0/connectors/execute-job"
	pathPending    = "/v0/connectors/approvals/pending"
	pathPlanExec   = "/v0/connectors/plans/execute"
	pathPlanValid  = "/v0/connectors/plans/validate"
	pathProfiles   = "/v0/connectors/unbounded/profiles/list"
	pathProfileGet = "/v0/connectors/unbounded/profiles/get"
	pathProfileUp  = "/v0/connectors/unbounded/profiles/upsert"
	jobPend        = `{"job":{"job_id":"job_1","status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"},"pending_approval":{"challenge":{"challenge_id":"ach_1"}},"pending_expires_at_unix_ms":1700000000000}}`
	allStatesQuery = "states=WAITING%2CREADY%2CRUNNING%2CSUCCEEDED%2CDENIED%2CFAILED%2CEXPIRED"
)

// plainRequest is a generic.http request without secret attachments: no
// profile calls and no module hash.
func plainRequest() map[string]any {
	return obj(`{"connector_id":"generic.http","verb":"generic.http.request.v1","policy_version":"1","request":{"method":"GET","url":"https://api.example.com/x"}}`)
}

func execJob(e *testEnv, extra ...map[string]any) mcptest.Envelope {
	args := map[string]any{"request": plainRequest()}
	for _, x := range extra {
		maps.Copy(args, x)
	}
	return e.call("vaultclaw_connector_execute_job", args)
}

func TestExecuteJobApprovalResolvedA1(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 200, `{"validated":true}`).on("POST "+pathExecJob, 202, jobPend).
		on("GET "+pathPending, 200, `{"items":[{"pending_id":"apj_1","job_id":"job_1","challenge_id":"ach_1","state":"WAITING","created_seq":3}]}`)
	e := newEnv(t, s)
	r := execJob(e)
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code(), r.Raw)
	assert.True(t, r.Result.IsError)
	er := at(r.Raw, "error").(map[string]any)
	assert.Equal(t, "approval", er["category"])
	assert.Equal(t, false, er["retryable"])
	assert.Equal(t, "", er["vault_code"])
	assert.Equal(t, "approval decision required before execution can continue; show the user the attestation link, then call vaultclaw_approval_wait with details.approval.next_action.arguments; do not retry the call", er["message"])
	a := at(r.Details(), "approval").(map[string]any)
	assert.Equal(t, "PENDING_APPROVAL", a["status"])
	assert.Equal(t, "JOB", a["kind"])
	assert.Equal(t, "job_1", a["job_id"])
	assert.Equal(t, "", a["run_id"])
	assert.Equal(t, "ach_1", a["challenge_id"])
	assert.Equal(t, "apj_1", a["pending_id"])
	assert.Equal(t, true, a["pending_id_resolved"])
	assert.Equal(t, 1700000000000.0, a["pending_expires_at_unix_ms"])
	assert.Equal(t, "PENDING", a["decision_outcome"])
	assert.Equal(t, "vaultclaw_approval_wait", at(a, "next_action", "tool"))
	assert.Equal(t, map[string]any{"kind": "JOB", "job_id": "job_1", "run_id": "", "challenge_id": "ach_1", "pending_id": "apj_1"}, at(a, "next_action", "arguments", "handle"))
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", at(r.Details(), "vault", "vault_code"))
	assert.Equal(t, 202.0, at(r.Raw, "meta", "vault_http_status"))
	assert.Equal(t, "", at(r.Raw, "meta", "vault_code"))
	execCall := s.callsTo("POST", pathExecJob)[0]
	assert.Equal(t, execCall.Header.Get("X-Request-Id"), at(r.Raw, "meta", "request_id"), "meta names the execute call")
	assert.NotEmpty(t, execCall.Header.Get("Idempotency-Key"))
	pend := s.callsTo("GET", pathPending)
	require.Len(t, pend, 1)
	assert.Equal(t, "challenge_id=ach_1&limit=200&"+allStatesQuery, pend[0].Query)
	require.Len(t, r.Result.Content, 1)
	text := r.Result.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, "approve this JOB")
	assert.Contains(t, text, "pending_id apj_1")

	// The handoff is a durable handle of this scope.
	h := e.call("vaultclaw_approval_handles_list", map[string]any{})
	require.True(t, h.OK, h.Raw)
	items := at(h.Object(), "items").([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "job_1", at(items[0], "handle", "job_id"))
	assert.Equal(t, "apj_1", at(items[0], "handle", "pending_id"))
	assert.Equal(t, "PENDING_APPROVAL", at(items[0], "state"))
	assert.Equal(t, "vaultclaw_connector_execute_job", at(items[0], "source"))
}

func TestExecuteJobPendingTieBreakA2(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 202, jobPend).
		on("GET "+pathPending, 200, `{"items":[{"pending_id":"apj_old","job_id":"job_1","created_seq":10},{"pending_id":"apj_b","job_id":"job_1","created_seq":12},{"pending_id":"apj_a","job_id":"job_1","created_seq":12},{"pending_id":"apj_other","job_id":"job_x","created_seq":99}]}`)
	r := execJob(newEnv(t, s))
	assert.Equal(t, "apj_a", at(r.Details(), "approval", "pending_id"))
}

func TestExecuteJobPendingLookupFailureKeepsHandleA3A4(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*scriptVault{
		"forbidden":  newScript().on("GET "+pathPending, 403, `{"error":{"code":"INSUFFICIENT_SCOPE","message":"no"}}`),
		"unscripted": newScript(),
		"server":     newScript().on("GET "+pathPending, 503, `down`),
	} {
		s.on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 202, jobPend)
		r := execJob(newEnv(t, s))
		require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code(), name)
		assert.Equal(t, "", at(r.Details(), "approval", "pending_id"), name)
		assert.Equal(t, false, at(r.Details(), "approval", "pending_id_resolved"), name)
		assert.Equal(t, "job_1", at(r.Details(), "approval", "next_action", "arguments", "handle", "job_id"), name)
	}
}

func TestExecuteJobDirectPendingIDAndAttestationA5(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 202,
		`{"job":{"job_id":"job_1","status":"PENDING","pending_approval":{"pending_id":"apj_9","challenge":{"challenge_id":"ach_1"},"remote_attestation_url":"https://a.example/x"}}}`)
	r := execJob(newEnv(t, s))
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code())
	assert.Empty(t, s.callsTo("GET", pathPending))
	a := at(r.Details(), "approval").(map[string]any)
	assert.Equal(t, true, a["pending_id_resolved"])
	assert.Equal(t, "https://a.example/x", a["remote_attestation_url"])
	assert.Equal(t, "[https://a.example/x](https://a.example/x)", a["remote_attestation_link_markdown"])
	require.Len(t, r.Result.Content, 1)
	assert.Equal(t, 1, strings.Count(r.Result.Content[0].(*mcp.TextContent).Text, "https://a.example/x"), "the link once (D22)")
}

func TestExecuteJobSuccessA6A7(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 200, `{"validated":true}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"job_2","status":"SUCCEEDED"}}`)
	r := execJob(newEnv(t, s))
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "SUCCEEDED", at(r.Object(), "response", "job", "status"))
	assert.Equal(t, true, at(r.Object(), "preflight", "validation", "validated"))
	assert.Equal(t, "no unbounded requirements derived", at(r.Object(), "preflight", "reason"))
	assert.Equal(t, false, at(r.Object(), "preflight", "module_hash", "applied"))
	assert.Equal(t, "generic.http", at(r.Object(), "request", "connector_id"))
	assert.Equal(t, 200.0, at(r.Raw, "meta", "vault_http_status"))

	s = newScript().on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 202, `{"job":{"job_id":"j","status":"RUNNING","pending_approval":{"pending_id":"p"}}}`)
	r = execJob(newEnv(t, s))
	assert.True(t, r.OK, "A7: RUNNING is not a handoff")
}

func TestExecuteJobValidationFailureC3(t *testing.T) {
	t.Parallel()
	s := newScript().on("POST "+pathValidate, 400, `{"error":{"code":"INVALID_ARGUMENT","message":"request failed validation","details":{"errors":[{"path":"/to","code":"TYPE_MISMATCH","message":"to must be an array","expected":"array","actual":"string"}]}}}`)
	r := execJob(newEnv(t, s), map[string]any{"orchestration": map[string]any{"unbounded_profiles": false}})
	require.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, "/to", at(r.Details(), "vault_error", "details", "errors", 0, "path"))
	assert.Empty(t, s.callsTo("POST", pathExecJob))
	assert.Equal(t, []string{"POST " + pathValidate}, s.paths())
	assert.Empty(t, s.callsTo("POST", pathValidate)[0].Header.Get("Idempotency-Key"))
}

func TestExecuteJobHTTPErrorWithPendingDetailsIsAHandoff(t *testing.T) {
	t.Parallel()
	// A >= 400 approval answer carrying pending details still yields a handle.
	s := newScript().on("POST "+pathValidate, 200, `{}`).
		on("POST "+pathExecJob, 409, `{"error":{"code":"CONNECTOR_APPROVAL_GRANT_REQUIRED","message":"grant required","details":{"pending_approval":{"pending_id":"apj_s","job_id":"job_s","challenge":{"challenge_id":"ach_s"}}}}}`)
	e := newEnv(t, s)
	r := execJob(e)
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code())
	assert.Equal(t, "CONNECTOR_APPROVAL_GRANT_REQUIRED", at(r.Raw, "error", "vault_code"))
	assert.Equal(t, map[string]any{"kind": "JOB", "job_id": "job_s", "run_id": "", "challenge_id": "ach_s", "pending_id": "apj_s"}, at(r.Details(), "approval", "next_action", "arguments", "handle"))
	assert.Equal(t, "apj_s", at(r.Details(), "vault_error", "details", "pending_approval", "pending_id"))
	assert.Equal(t, 409.0, at(r.Raw, "meta", "vault_http_status"))
	require.Len(t, r.Result.Content, 1)
}

func TestExecuteJobGmailModuleHash(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/connectors/google", 200, `{"id":"google","policy_hash":"ph_google"}`).
		on("POST "+pathValidate, 200, `{}`).on("POST "+pathExecJob, 200, `{"job":{"job_id":"j","status":"SUCCEEDED"}}`)
	r := newEnv(t, s).call("vaultclaw_connector_execute_job", map[string]any{"request": obj(`{"connector_id":"google","verb":"google.gmail.send.v1","request":{"to":["a@example.com"]}}`)})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "ph_google", s.callsTo("POST", pathValidate)[0].Body["module_hash"])
	assert.Equal(t, "ph_google", s.callsTo("POST", pathExecJob)[0].Body["module_hash"])
	assert.Equal(t, "google_gmail_bounded", at(r.Object(), "preflight", "module_hash", "reason"))
	assert.Equal(t, map[string]any{"orchestrated": false, "reason": "connector is not generic.http.request.v1"}, withoutKeys(at(r.Object(), "preflight").(map[string]any), "module_hash", "validation"))
}

func withoutKeys(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	maps.Copy(out, m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func waitCall(e *testEnv, handle map[string]any, timeoutMS, pollMS int) mcptest.Envelope {
	return e.call("vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": timeoutMS, "poll_interval_ms": pollMS})
}

const jobPendPoll = `{"job":{"job_id":"job_1","status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"}}}`

func TestWaitScenariosW1ToW6(t *testing.T) {
	t.Parallel()
	job := map[string]any{"kind": "JOB", "job_id": "job_1"}
	cases := []struct {
		name            string
		replies         []any
		status, outcome string
		expired         bool
	}{
		{"W1", []any{200, jobPendPoll, 200, jobPendPoll, 200, `{"job":{"job_id":"job_1","status":"SUCCEEDED"}}`}, "SUCCEEDED", "ALLOW", false},
		{"W2", []any{200, `{"job":{"job_id":"job_1","status":"DENIED","error":{"code":"CONNECTOR_APPROVAL_RULE_DENIED"}}}`}, "DENIED", "DENY", false},
		{"W3", []any{200, `{"job":{"status":"DENIED"}}`}, "DENIED", "UNKNOWN", false},
		{"W4", []any{200, `{"job":{"status":"FAILED"}}`}, "FAILED", "UNKNOWN", false},
		{"W6 (D3: EXPIRED is terminal)", []any{200, `{"job":{"status":"EXPIRED"}}`}, "EXPIRED", "DENY", true},
	}
	for _, c := range cases {
		s := newScript().on("GET /v0/jobs/job_1", c.replies[0].(int), c.replies[1].(string), c.replies[2:]...)
		r := waitCall(newEnv(t, s), job, 4000, 250)
		require.True(t, r.OK, c.name, r.Raw)
		d := r.Object()
		assert.Equal(t, true, d["done"], c.name)
		assert.Equal(t, c.status, d["terminal_status"], c.name)
		assert.Equal(t, c.outcome, d["decision_outcome"], c.name)
		assert.Equal(t, c.expired, d["expired"], c.name)
		assert.Nil(t, d["run"], c.name)
		assert.Equal(t, map[string]any{"kind": "JOB", "job_id": "job_1"}, d["handle"], c.name)
		assert.Equal(t, "", at(r.Raw, "meta", "request_id"))
	}
}

func TestWaitTimeoutW5(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/jobs/job_1", 200, jobPendPoll)
	e := newEnv(t, s)
	start := time.Now()
	r := waitCall(e, map[string]any{"kind": "JOB", "job_id": "job_1"}, 1, 1)
	elapsed := time.Since(start)
	require.Equal(t, "MCP_WAIT_TIMEOUT", r.Code(), r.Raw)
	assert.Equal(t, true, at(r.Raw, "error", "retryable"))
	assert.Equal(t, "approval", at(r.Raw, "error", "category"))
	assert.Equal(t, map[string]any{"timeout_ms": 1000.0, "poll_interval_ms": 250.0}, r.Details()["wait_options"])
	assert.NotNil(t, at(r.Details(), "latest", "job"))
	assert.Equal(t, "Call vaultclaw_approval_wait again with the same handle.", r.Details()["retry_hint"])
	assert.GreaterOrEqual(t, elapsed, time.Second)
	assert.Less(t, elapsed, 5*time.Second, "the deadline is honoured")
	polls := len(s.callsTo("GET", "/v0/jobs/job_1"))
	assert.GreaterOrEqual(t, polls, 4)
	assert.LessOrEqual(t, polls, 6)
	// The timeout is recorded on the handle.
	h := e.call("vaultclaw_approval_handles_list", map[string]any{"states": "pending_approval"})
	assert.Len(t, at(h.Object(), "items"), 1)
}

func TestWaitBadHandlesW7AndMissingObjectsW8(t *testing.T) {
	t.Parallel()
	s := newScript()
	e := newEnv(t, s)
	for h, msg := range map[string]string{
		`{"kind":"JOB"}`:      "handle.job_id is required for JOB wait",
		`{"kind":"PLAN_RUN"}`: "handle.run_id is required for PLAN_RUN wait",
		`{"kind":"X"}`:        "handle.kind must be JOB or PLAN_RUN",
	} {
		r := e.call("vaultclaw_approval_wait", map[string]any{"handle": obj(h)})
		require.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
		assert.Equal(t, msg, at(r.Raw, "error", "message"))
	}
	r := e.call("vaultclaw_approval_wait", map[string]any{})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Empty(t, s.paths(), "no HTTP call")

	s = newScript().on("GET /v0/jobs/x", 200, `{}`)
	e = newEnv(t, s)
	r = waitCall(e, map[string]any{"kind": "JOB", "job_id": "x"}, 1000, 250)
	assert.Equal(t, "MCP_INTERNAL", r.Code())
	r = e.call("vaultclaw_job_get", map[string]any{"job_id": "x"})
	assert.Equal(t, "MCP_INTERNAL", r.Code())
	assert.Equal(t, "job response missing job object", at(r.Raw, "error", "message"))
	assert.Equal(t, 200.0, r.Details()["vault_http_status"])
}

func TestJobGetV6(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/jobs/j1", 200, `{"job":{"job_id":"j1","status":"RUNNING"}}`)
	r := newEnv(t, s).call("vaultclaw_job_get", map[string]any{"job_id": " j1 "})
	require.True(t, r.OK)
	assert.Equal(t, "UNKNOWN", r.Object()["decision_outcome"])
	assert.Equal(t, map[string]any{"status": "UNKNOWN", "decision_outcome": "UNKNOWN", "pending_approval": nil}, r.Object()["approval_state"])
	assert.Equal(t, 200.0, at(r.Raw, "meta", "vault_http_status"))
}

func TestPendingListAndGetV1ToV5(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET "+pathPending, 200, `{"items":[{"pending_id":"apj_1","state":"WAITING","pending_approval":{"remote_attestation_url":"https://alerts.accords.ai/a/req_1?t=abc"}},{"pending_id":"apj_2","state":"EXPIRED","created_seq":4},{"pending_id":"apj_3","state":"DENIED","last_error_code":"SOMETHING","created_seq":2}]}`)
	e := newEnv(t, s)
	r := e.call("vaultclaw_approvals_pending_list", map[string]any{})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "limit=50&"+allStatesQuery, s.callsTo("GET", pathPending)[0].Query)
	items := r.Object()["items"].([]any)
	require.Len(t, items, 3)
	assert.Equal(t, "apj_2", at(items[0], "pending_id"))
	assert.Equal(t, "DENY", at(items[0], "decision_outcome"))
	assert.Equal(t, "UNKNOWN", at(items[1], "decision_outcome"))
	assert.Equal(t, "PENDING", at(items[2], "decision_outcome"))
	assert.Equal(t, "https://alerts.accords.ai/a/req_1?t=abc", at(items[2], "remote_attestation_url"))
	assert.Equal(t, "[https://alerts.accords.ai/a/req_1?t=abc](https://alerts.accords.ai/a/req_1?t=abc)", at(items[2], "remote_attestation_link_markdown"))

	r = e.call("vaultclaw_approvals_pending_list", map[string]any{"states": []any{"waiting", "READY"}, "limit": 5, "connector_id": "google"})
	require.True(t, r.OK)
	assert.Equal(t, "connector_id=google&limit=5&states=WAITING%2CREADY", s.callsTo("GET", pathPending)[1].Query)

	n := len(s.paths())
	r = e.call("vaultclaw_approvals_pending_list", map[string]any{"states": "waiting,bogus"})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, "states contains invalid value: BOGUS", at(r.Raw, "error", "message"))
	r = e.call("vaultclaw_approvals_pending_get", map[string]any{"challenge_id": "ach_1"})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code()) // V4
	r = e.call("vaultclaw_approvals_pending_get", map[string]any{"challenge_id": "ach_1", "pending_id": "  "})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
	assert.Equal(t, n, len(s.paths()), "validation runs before any Vault call")

	r = e.call("vaultclaw_approvals_pending_get", map[string]any{"challenge_id": "ach_1", "pending_id": "APJ_2"})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "apj_2", at(r.Object(), "item", "pending_id"))

	s2 := newScript().on("GET "+pathPending, 200, `{"items":[]}`)
	r = newEnv(t, s2).call("vaultclaw_approvals_pending_get", map[string]any{"challenge_id": "ach_1", "pending_id": "apj_1"})
	require.Equal(t, "MCP_APPROVAL_PENDING_NOT_FOUND", r.Code()) // V3
	assert.Equal(t, "approval", at(r.Raw, "error", "category"))
	assert.Equal(t, map[string]any{"challenge_id": "ach_1", "pending_id": "apj_1"}, r.Details())
	assert.Equal(t, "", at(r.Raw, "meta", "request_id"))
	assert.Equal(t, "challenge_id=ach_1&limit=200&"+allStatesQuery, s2.callsTo("GET", pathPending)[0].Query)
}

func TestNoSessionT1(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, newScript(), t.TempDir()+"/a.db", "")
	for _, name := range []string{"vaultclaw_job_get", "vaultclaw_approval_wait"} {
		args := map[string]any{"job_id": "j", "handle": map[string]any{"kind": "bogus"}}
		r := e.call(name, args)
		assert.Equal(t, "MCP_SESSION_NOT_CONFIGURED", r.Code(), name)
	}
	// Handles list is local and needs no session.
	r := e.call("vaultclaw_approval_handles_list", map[string]any{"states": []any{"denied"}, "limit": 3})
	assert.True(t, r.OK)
	r = e.call("vaultclaw_approval_handles_list", map[string]any{"states": "nope"})
	assert.Equal(t, "MCP_VALIDATION_ERROR", r.Code())
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/jobs/j1", 200, `{"job":{"job_id":"j1","status":"SUCCEEDED"}}`)
	newEnv(t, s).call("vaultclaw_job_get", map[string]any{"job_id": "j1"})
	c := s.callsTo("GET", "/v0/jobs/j1")[0]
	assert.Equal(t, "Bearer tok_test", c.Header.Get("Authorization"))
	assert.True(t, hexRE.MatchString(c.Header.Get("X-Request-Id")))
	assert.True(t, strings.HasPrefix(c.Header.Get("User-Agent"), "accords-mcp/"))
}

func TestWaitCancelStopsPolling(t *testing.T) {
	t.Parallel()
	s := newScript().on("GET /v0/jobs/job_1", 200, jobPendPoll)
	e := newEnv(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "vaultclaw_approval_wait", Arguments: map[string]any{"handle": map[string]any{"kind": "JOB", "job_id": "job_1"}, "timeout_ms": 60000, "poll_interval_ms": 250}})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(s.callsTo("GET", "/v0/jobs/job_1")) >= 2 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.Error(t, err, "the cancelled call ends with an error")
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	time.Sleep(600 * time.Millisecond)
	n := len(s.callsTo("GET", "/v0/jobs/job_1"))
	time.Sleep(600 * time.Millisecond)
	assert.Equal(t, n, len(s.callsTo("GET", "/v0/jobs/job_1")), "the server stopped polling after the client cancelled")
}

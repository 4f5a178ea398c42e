package approval

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const jobPend = `{"job":{"job_id":"job_1","status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"},"pending_approval":{"challenge":{"challenge_id":"ach_1"}},"pending_expires_at_unix_ms":1700000000000}}`

// jsonMap is v as a client decodes it.
func jsonMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func requireCode(t *testing.T, err error, code string) *apperr.Error {
	t.Helper()
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, code, ae.Code, ae.Message)
	return ae
}

func TestDetectJobAndResolveA1(t *testing.T) {
	h, ok := DetectJob(Reply{Status: 202, RequestID: "req_x", Body: decode(jobPend)})
	require.True(t, ok)
	api := &fakeAPI{pending: []scripted{{body: `{"items":[{"pending_id":"apj_1","job_id":"job_1","challenge_id":"ach_1","state":"WAITING","created_seq":3}]}`}}}
	ResolveIDs(context.Background(), api, h)
	require.Len(t, api.queries, 1)
	assert.Equal(t, "challenge_id=ach_1&limit=200&states=WAITING%2CREADY%2CRUNNING%2CSUCCEEDED%2CDENIED%2CFAILED%2CEXPIRED", api.queries[0].Encode())
	re := h.Err()
	e := re.Err
	assert.Equal(t, apperr.CodeApprovalRequired, e.Code)
	assert.Equal(t, apperr.CatApproval, e.Category)
	assert.False(t, e.Retryable)
	assert.Equal(t, "", e.VaultCode)
	assert.Equal(t, ApprovalMessage, e.Message)
	a := e.Details["approval"].(*Approval)
	assert.Same(t, re.Approval, a, "the envelope and the renderer see one approval value")
	assert.Equal(t, "PENDING_APPROVAL", a.Status)
	assert.Equal(t, "JOB", a.Kind)
	assert.Equal(t, "job_1", a.JobID)
	assert.Equal(t, "ach_1", a.ChallengeID)
	assert.Equal(t, "apj_1", a.PendingID)
	assert.Equal(t, true, a.PendingIDResolved)
	assert.Equal(t, int64(1700000000000), a.PendingExpiresAtUnixMS)
	assert.Equal(t, "PENDING", a.DecisionOutcome)
	assert.Equal(t, map[string]any{"tool": "vaultclaw_approval_wait", "arguments": map[string]any{"handle": map[string]any{"kind": "JOB", "job_id": "job_1", "run_id": "", "challenge_id": "ach_1", "pending_id": "apj_1"}}}, jsonMap(t, a.NextAction))
	assert.NotContains(t, jsonMap(t, a), "remote_attestation_url")
	assert.Equal(t, 202, e.Details["vault_http_status"])
	assert.Equal(t, "req_x", e.Details["request_id"])
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", e.Details["vault"].(map[string]any)["vault_code"])
}

func TestResolveTieBreakA2(t *testing.T) {
	h, _ := DetectJob(Reply{Status: 202, Body: decode(jobPend)})
	api := &fakeAPI{pending: []scripted{{body: `{"items":[{"pending_id":"apj_old","job_id":"job_1","created_seq":10},{"pending_id":"apj_b","job_id":"JOB_1","created_seq":12},"junk",{"pending_id":"apj_a","job_id":"job_1","created_seq":12},{"pending_id":"apj_other","job_id":"job_9","created_seq":99}]}`}}}
	ResolveIDs(context.Background(), api, h)
	assert.Equal(t, "apj_a", h.PendingID)
}

func TestResolveAnyFailureLeavesUnresolvedA3A4(t *testing.T) {
	for _, err := range []error{
		&apperr.Error{Code: apperr.CodeAuthForbidden, VaultCode: "INSUFFICIENT_SCOPE"},
		&apperr.Error{Code: apperr.CodeInternal, VaultCode: "HTTP_ERROR"},
		&apperr.Error{Code: apperr.CodeNetwork, VaultCode: "NETWORK_ERROR"},
		context.DeadlineExceeded,
	} {
		h, _ := DetectJob(Reply{Status: 202, Body: decode(jobPend)})
		ResolveIDs(context.Background(), &fakeAPI{pending: []scripted{{err: err}}}, h)
		a := h.Err().Approval
		assert.Equal(t, "", a.PendingID)
		assert.Equal(t, false, a.PendingIDResolved)
		assert.Equal(t, "job_1", a.JobID)
	}
	// Unscripted (404) is the same.
	h, _ := DetectJob(Reply{Status: 202, Body: decode(jobPend)})
	ResolveIDs(context.Background(), &fakeAPI{}, h)
	assert.Equal(t, "", h.PendingID)
}

func TestDetectJobDirectPendingA5(t *testing.T) {
	body := `{"job":{"job_id":"job_1","status":"pending","pending_approval":{"pending_id":"apj_d","challenge":{"challenge_id":"ach_1"},"remote_attestation_url":"https://a.example/x"}}}`
	h, ok := DetectJob(Reply{Status: 202, Body: decode(body)})
	require.True(t, ok)
	api := &fakeAPI{}
	ResolveIDs(context.Background(), api, h)
	assert.Empty(t, api.queries, "no E10 call when Vault supplied the pending id")
	a := h.Err().Approval
	assert.Equal(t, true, a.PendingIDResolved)
	assert.Equal(t, "https://a.example/x", a.RemoteAttestationURL)
	assert.Equal(t, "[https://a.example/x](https://a.example/x)", a.RemoteAttestationLinkMarkdown)
	assert.NotNil(t, a.PendingApproval)
}

func TestDetectJobNotAHandoff(t *testing.T) {
	for _, body := range []string{
		`{"job":{"job_id":"job_2","status":"SUCCEEDED"}}`,
		`{"job":{"job_id":"j","status":"RUNNING","pending_approval":{"pending_id":"x"}}}`, // A7
		`{"job":{"job_id":"j","status":"PENDING"}}`,
		`{"job":{"job_id":"j","status":"PENDING","error":{"code":"OTHER"}}}`,
		`{}`,
	} {
		_, ok := DetectJob(Reply{Status: 200, Body: decode(body)})
		assert.False(t, ok, body)
	}
	// Grant code (D3) and nested error code count.
	_, ok := DetectJob(Reply{Status: 202, Body: decode(`{"job":{"job_id":"j","status":"PENDING","error":{"code":"connector_approval_grant_required"}}}`)})
	assert.True(t, ok)
	_, ok = DetectJob(Reply{Status: 202, Body: decode(`{"job":{"job_id":"j","status":"PENDING","error":{"error":{"code":"PLAN_APPROVAL_REQUIRED"}}}}`)})
	assert.True(t, ok)
}

func TestDetectPlanShapes(t *testing.T) {
	// P2: shape A.
	h, ok := DetectPlan(Reply{Status: 202, Body: decode(`{"run":{"run_id":"run_9","job_id":"job_9","state":"PENDING_APPROVAL","challenge_id":"ach_run"},"job":{"job_id":"job_9","status":"PENDING","pending_expires_at_unix_ms":42}}`)})
	require.True(t, ok)
	ResolveIDs(context.Background(), &fakeAPI{pending: []scripted{{err: &apperr.Error{Code: apperr.CodeAuthForbidden}}}}, h)
	a := h.Err().Approval
	assert.Equal(t, "PLAN_RUN", a.Kind)
	assert.Equal(t, "run_9", a.RunID)
	assert.Equal(t, "job_9", a.JobID)
	assert.Equal(t, "ach_run", a.ChallengeID)
	assert.Equal(t, "", a.PendingID)
	assert.Nil(t, a.PendingApproval)
	assert.Nil(t, jsonMap(t, a)["pending_approval"])
	assert.Equal(t, int64(42), a.PendingExpiresAtUnixMS)

	// P3: shape B.
	body := `{"run_id":"run_plan_approval_1","job_id":"job_plan_approval_1","job":{"job_id":"job_plan_approval_1","status":"PENDING","error":{"code":"PLAN_APPROVAL_REQUIRED","message":"approval required"},"pending_approval":{"pending_id":"apj_plan_approval_1","challenge":{"challenge_id":"ach_plan_approval_1"}}},"pending_approval":{"pending_id":"apj_plan_approval_1","challenge":{"challenge_id":"ach_plan_approval_1"}}}`
	h, ok = DetectPlan(Reply{Status: 202, Body: decode(body)})
	require.True(t, ok)
	api := &fakeAPI{}
	ResolveIDs(context.Background(), api, h)
	assert.Empty(t, api.queries)
	assert.Equal(t, Handle{Kind: "PLAN_RUN", JobID: "job_plan_approval_1", RunID: "run_plan_approval_1", ChallengeID: "ach_plan_approval_1", PendingID: "apj_plan_approval_1"}, h.Handle)
	assert.Equal(t, "PLAN_APPROVAL_REQUIRED", h.VaultCode)

	for _, body := range []string{
		`{"run_id":"run_1","state":"SUCCEEDED"}`,
		`{"run_id":"run_1","job_id":"job_1","job":{"status":"SUCCEEDED"}}`,
		`{"run":{"run_id":"r","state":"RUNNING"},"job":{"status":"RUNNING"}}`,
		`{"run":{"state":"PENDING_APPROVAL"}}`,
		`{"job":{"status":"PENDING","error":{"code":"PLAN_APPROVAL_REQUIRED"}}}`,
	} {
		_, ok := DetectPlan(Reply{Status: 200, Body: decode(body)})
		assert.False(t, ok, body)
	}
	// Shape A variants: code alone; pending object with a pending job.
	_, ok = DetectPlan(Reply{Status: 202, Body: decode(`{"run":{"run_id":"r","state":"READY","last_error_code":"PLAN_APPROVAL_REQUIRED"}}`)})
	assert.True(t, ok)
	h, ok = DetectPlan(Reply{Status: 202, Body: decode(`{"run_id":"top","run":{"state":"READY"},"job":{"job_id":"j","status":"PENDING","pending_approval":{"challenge":{"challenge_id":"c"}}}}`)})
	require.True(t, ok)
	assert.Equal(t, "top", h.RunID)
	assert.Equal(t, "j", h.JobID)
}

func TestFromErrorSynchronousExecute(t *testing.T) {
	vaultErr := &apperr.Error{Code: apperr.CodeApprovalRequired, Category: apperr.CatApproval, VaultCode: "CONNECTOR_APPROVAL_DECISION_REQUIRED",
		Details: map[string]any{"request_id": "req_s", "vault_http_status": 409, "vault_error": map[string]any{"code": "CONNECTOR_APPROVAL_DECISION_REQUIRED", "message": "approval required",
			"details": map[string]any{"pending_approval": map[string]any{"pending_id": "apj_s", "challenge": map[string]any{"challenge_id": "ach_s"}}}}}}
	h, ok := FromError(vaultErr)
	require.True(t, ok)
	api := &fakeAPI{pending: []scripted{{body: `{"items":[{"pending_id":"apj_other","job_id":"job_o","created_seq":9},{"pending_id":"apj_s","job_id":"job_s","created_seq":1}]}`}}}
	ResolveIDs(context.Background(), api, h)
	assert.Equal(t, Handle{Kind: "JOB", JobID: "job_s", ChallengeID: "ach_s", PendingID: "apj_s"}, h.Handle)
	e := h.Err().Err
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", e.VaultCode)
	assert.Equal(t, 409, e.Details["vault_http_status"])
	assert.NotNil(t, e.Details["vault_error"].(map[string]any)["details"].(map[string]any)["pending_approval"], "reference fallback path kept")
	assert.Equal(t, "req_s", e.Details["request_id"])

	// Grant code without details: no handle (plain error stays).
	_, ok = FromError(&apperr.Error{Code: apperr.CodeApprovalRequired, VaultCode: "CONNECTOR_APPROVAL_GRANT_REQUIRED", Details: map[string]any{"vault_error": map[string]any{"details": nil}}})
	assert.False(t, ok)
	_, ok = FromError(&apperr.Error{Code: apperr.CodeValidation})
	assert.False(t, ok)
	_, ok = FromError(errors.New("x"))
	assert.False(t, ok)
}

func TestOutcomes(t *testing.T) {
	jobs := map[string]string{
		`{"status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"}}`: OutcomePending,
		`{"status":"running","pending_approval":{"x":1}}`:                              OutcomePending,
		`{"status":"RUNNING"}`:   OutcomeUnknown, // V6
		`{"status":"SUCCEEDED"}`: OutcomeAllow,
		`{"status":"DENIED","error":{"code":"CONNECTOR_APPROVAL_RULE_DENIED"}}`: OutcomeDeny,
		`{"status":"DENIED"}`:  OutcomeUnknown, // W3
		`{"status":"FAILED"}`:  OutcomeUnknown,
		`{"status":"EXPIRED"}`: OutcomeDeny, // D3
	}
	for j, want := range jobs {
		assert.Equal(t, want, JobOutcome(decode(j)), j)
	}
	runs := map[string]string{
		`{"run":{"state":"PENDING_APPROVAL"}}`:                                            OutcomePending,
		`{"run":{"state":"RUNNING"}}`:                                                     OutcomePending,
		`{"run":{"state":"SUCCEEDED"}}`:                                                   OutcomeAllow,
		`{"run":{"state":"DENIED","last_error_code":"PLAN_APPROVAL_DENIED"}}`:             OutcomeDeny,
		`{"run":{"state":"DENIED"},"job":{"error":{"code":"APPROVAL_DECISION_EXPIRED"}}}`: OutcomeDeny,
		`{"run":{"state":"DENIED"}}`:                                                      OutcomeUnknown,
		`{"run":{"state":"EXPIRED"}}`:                                                     OutcomeDeny,
	}
	for r, want := range runs {
		b := decode(r)
		assert.Equal(t, want, RunOutcome(obj(b["run"]), obj(b["job"])), r)
	}
	rows := map[string]string{
		`{"state":"waiting"}`:                              OutcomePending,
		`{"state":"SUCCEEDED"}`:                            OutcomeAllow,
		`{"state":"DENIED"}`:                               OutcomeDeny,
		`{"state":"EXPIRED"}`:                              OutcomeDeny,
		`{"state":"DENIED","last_error_code":"SOMETHING"}`: OutcomeUnknown,
		`{"state":"FAILED"}`:                               OutcomeUnknown,
	}
	for r, want := range rows {
		assert.Equal(t, want, PendingOutcome(decode(r)), r)
	}
	v := JobView(decode(`{"job_id":"j1","status":"RUNNING"}`))
	assert.Equal(t, map[string]any{"status": "UNKNOWN", "decision_outcome": "UNKNOWN", "pending_approval": nil}, v["approval_state"])
	v = JobView(decode(`{"job_id":"j1","status":"SUCCEEDED"}`))
	assert.Equal(t, "TERMINAL", v["approval_state"].(map[string]any)["status"])
	rv := RunView(decode(`{"run":{"run_id":"run_9","state":"RUNNING"}}`)) // P5
	assert.Equal(t, "PENDING", rv["decision_outcome"])
	assert.Equal(t, map[string]any{"status": "PENDING_APPROVAL", "decision_outcome": "PENDING"}, rv["approval_state"])
	body := decode(`{"x":1}`)
	assert.Equal(t, body, RunView(body))
}

func TestNormalizeHandle(t *testing.T) {
	_, err := NormalizeHandle(Handle{Kind: "JOB"})
	assert.Equal(t, "handle.job_id is required for JOB wait", requireCode(t, err, apperr.CodeValidation).Message)
	_, err = NormalizeHandle(Handle{Kind: "PLAN_RUN"})
	assert.Equal(t, "handle.run_id is required for PLAN_RUN wait", requireCode(t, err, apperr.CodeValidation).Message)
	_, err = NormalizeHandle(Handle{Kind: "X"})
	assert.Equal(t, "handle.kind must be JOB or PLAN_RUN", requireCode(t, err, apperr.CodeValidation).Message)
	// A missing or non-object handle, or a non-string id, is refused by
	// the tool's schema before this runs (tools: TestTypedArgumentErrors).
	_, err = NormalizeHandle(Handle{})
	requireCode(t, err, apperr.CodeValidation)
	h, err := NormalizeHandle(Handle{Kind: " job ", JobID: " j "})
	require.NoError(t, err)
	assert.Equal(t, Handle{Kind: "JOB", JobID: "j"}, h)
}

func TestParseStatesAndList(t *testing.T) {
	// The CSV string and the string array both arrive as a list (the
	// tools boundary splits the CSV form); non-strings and other types are
	// refused by the schema (tools: TestTypedArgumentErrors).
	_, err := ParseStates([]string{"waiting", "bogus"}, "states", AllPendingStates)
	assert.Equal(t, "states contains invalid value: BOGUS", requireCode(t, err, apperr.CodeValidation).Message) // V2
	_, err = ParseStates([]string{}, "states", AllPendingStates)
	assert.Equal(t, "states cannot be empty", requireCode(t, err, apperr.CodeValidation).Message)
	_, err = ParseStates([]string{" ", ""}, "states", AllPendingStates)
	assert.Equal(t, "states cannot be empty", requireCode(t, err, apperr.CodeValidation).Message)
	s, err := ParseStates([]string{"ready", " waiting", "READY"}, "states", AllPendingStates)
	require.NoError(t, err)
	assert.Equal(t, []string{"READY", "WAITING"}, s)
	s, err = ParseStates(nil, "states", AllPendingStates)
	require.NoError(t, err)
	assert.Equal(t, AllPendingStates, s, "not given: every state")

	// V1
	api := &fakeAPI{pending: []scripted{{body: `{"items":[{"pending_id":"apj_1","state":"WAITING","pending_approval":{"remote_attestation_url":"https://alerts.accords.ai/a/req_1?t=abc"}},{"pending_id":"apj_2","state":"DENIED","created_seq":5}]}`}}}
	items, _, err := List(context.Background(), api, ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, "limit=50&states=WAITING%2CREADY%2CRUNNING%2CSUCCEEDED%2CDENIED%2CFAILED%2CEXPIRED", api.queries[0].Encode())
	require.Len(t, items, 2)
	assert.Equal(t, "apj_2", items[0]["pending_id"])
	assert.Equal(t, "DENY", items[0]["decision_outcome"])
	assert.Equal(t, "PENDING", items[1]["decision_outcome"])
	assert.Equal(t, "https://alerts.accords.ai/a/req_1?t=abc", items[1]["remote_attestation_url"])
	assert.Equal(t, "[https://alerts.accords.ai/a/req_1?t=abc](https://alerts.accords.ai/a/req_1?t=abc)", items[1]["remote_attestation_link_markdown"])

	q := ListQuery{States: []string{"WAITING"}, Limit: 7, ConnectorID: " google ", Verb: "v", AgentID: "a", ChallengeID: "c"}
	assert.Equal(t, "agent_id=a&challenge_id=c&connector_id=google&limit=7&states=WAITING&verb=v", q.Values().Encode())

	// V3 and a match.
	api = &fakeAPI{pending: []scripted{{body: `{"items":[]}`}}}
	_, err = Get(context.Background(), api, "ach_1", "apj_1")
	ae := requireCode(t, err, apperr.CodeApprovalPendingNotFound)
	assert.Equal(t, apperr.CatApproval, ae.Category)
	assert.Equal(t, map[string]any{"challenge_id": "ach_1", "pending_id": "apj_1"}, ae.Details)
	api = &fakeAPI{pending: []scripted{{body: `{"items":[{"pending_id":"APJ_1","state":"SUCCEEDED"}]}`}}}
	item, err := Get(context.Background(), api, "ach_1", "apj_1")
	require.NoError(t, err)
	assert.Equal(t, "ALLOW", item["decision_outcome"])
	assert.Equal(t, "200", api.queries[0].Get("limit"))
}

func TestWaitOptionsNormalize(t *testing.T) {
	assert.Equal(t, WaitOptions{600000, 1500}, WaitOptions{}.Normalize())
	assert.Equal(t, WaitOptions{1000, 250}, WaitOptions{1, 1}.Normalize())
	assert.Equal(t, WaitOptions{3600000, 10000}, WaitOptions{9999999, 99999}.Normalize())
	assert.Equal(t, WaitOptions{600000, 1500}, WaitOptions{-5, -1}.Normalize())
}

const pendingJob = `{"job":{"job_id":"job_1","status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"}}}`

func TestWaitAllowW1(t *testing.T) {
	api := &fakeAPI{jobs: []scripted{{body: pendingJob}, {body: pendingJob}, {body: `{"job":{"job_id":"job_1","status":"SUCCEEDED"}}`}}}
	clk := newClock()
	var progress []float64
	w := Waiter{API: api, Clock: clk, Progress: func(_ context.Context, p, total float64, msg string) {
		progress = append(progress, p)
		assert.Equal(t, 4000.0, total)
		assert.Contains(t, msg, "JOB")
	}}
	res, err := w.Wait(context.Background(), Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{TimeoutMS: 4000, PollIntervalMS: 250})
	require.NoError(t, err)
	d := res.Data()
	assert.Equal(t, true, d["done"])
	assert.Equal(t, "SUCCEEDED", d["terminal_status"])
	assert.Equal(t, "ALLOW", d["decision_outcome"])
	assert.Nil(t, d["run"])
	assert.Equal(t, map[string]any{"kind": "JOB", "job_id": "job_1"}, d["handle"])
	assert.Equal(t, 3, api.jobCalls)
	assert.Equal(t, []float64{0, 250, 500}, progress)
}

func TestWaitTerminalOutcomes(t *testing.T) {
	cases := map[string][2]string{
		`{"job":{"job_id":"job_1","status":"DENIED","error":{"code":"CONNECTOR_APPROVAL_RULE_DENIED"}}}`: {"DENIED", "DENY"},
		`{"job":{"status":"DENIED"}}`:  {"DENIED", "UNKNOWN"},
		`{"job":{"status":"FAILED"}}`:  {"FAILED", "UNKNOWN"},
		`{"job":{"status":"EXPIRED"}}`: {"EXPIRED", "DENY"},
	}
	for body, want := range cases {
		res, err := Waiter{API: &fakeAPI{jobs: []scripted{{body: body}}}, Clock: newClock()}.Wait(context.Background(), Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{})
		require.NoError(t, err, body)
		assert.Equal(t, want[0], res.State)
		assert.Equal(t, want[1], res.Outcome)
		assert.Equal(t, want[0] == "EXPIRED", res.Data()["expired"])
	}
	// P6: plan run denied, job and run set.
	res, err := Waiter{API: &fakeAPI{runs: []scripted{{body: `{"run":{"run_id":"run_1","job_id":"job_1","state":"DENIED","last_error_code":"PLAN_APPROVAL_DENIED"},"job":{"job_id":"job_1","status":"DENIED","error":{"code":"PLAN_APPROVAL_DENIED"}}}`}}}, Clock: newClock()}.
		Wait(context.Background(), Handle{Kind: KindPlanRun, RunID: "run_1"}, WaitOptions{})
	require.NoError(t, err)
	d := res.Data()
	assert.Equal(t, "DENIED", d["terminal_status"])
	assert.Equal(t, "DENY", d["decision_outcome"])
	assert.NotNil(t, d["job"])
	assert.NotNil(t, d["run"])
}

func TestWaitTimeoutDeadlineExact(t *testing.T) {
	// W5: clamped to 1000/250: polls at 0,250,500,750,1000 then timeout.
	api := &fakeAPI{jobs: []scripted{{body: pendingJob}}}
	clk := newClock()
	start := clk.Now()
	_, err := Waiter{API: api, Clock: clk}.Wait(context.Background(), Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{TimeoutMS: 1, PollIntervalMS: 1})
	ae := requireCode(t, err, apperr.CodeWaitTimeout)
	assert.True(t, ae.Retryable)
	assert.Equal(t, apperr.CatApproval, ae.Category)
	assert.Equal(t, map[string]any{"timeout_ms": 1000, "poll_interval_ms": 250}, ae.Details["wait_options"])
	assert.NotNil(t, ae.Details["latest"].(map[string]any)["job"])
	assert.Equal(t, RetryHint, ae.Details["retry_hint"])
	assert.Equal(t, 5, api.jobCalls)
	assert.Equal(t, time.Second, clk.elapsed(start))

	// Interval that does not divide the timeout: the last sleep is shortened.
	api = &fakeAPI{jobs: []scripted{{body: pendingJob}}}
	clk = newClock()
	start = clk.Now()
	_, err = Waiter{API: api, Clock: clk}.Wait(context.Background(), Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{TimeoutMS: 1000, PollIntervalMS: 400})
	requireCode(t, err, apperr.CodeWaitTimeout)
	assert.Equal(t, []time.Duration{400 * time.Millisecond, 400 * time.Millisecond, 200 * time.Millisecond}, clk.sleeps)
	assert.Equal(t, time.Second, clk.elapsed(start), "deadline honoured exactly")
	assert.Equal(t, 4, api.jobCalls)
}

func TestWaitErrors(t *testing.T) {
	// W8
	_, err := Waiter{API: &fakeAPI{jobs: []scripted{{body: `{}`}}}, Clock: newClock()}.Wait(context.Background(), Handle{Kind: KindJob, JobID: "x"}, WaitOptions{})
	assert.Equal(t, "job response missing job object", requireCode(t, err, apperr.CodeInternal).Message)
	_, err = Waiter{API: &fakeAPI{runs: []scripted{{body: `{"job":{}}`}}}, Clock: newClock()}.Wait(context.Background(), Handle{Kind: KindPlanRun, RunID: "x"}, WaitOptions{})
	assert.Equal(t, "plan run response missing run object", requireCode(t, err, apperr.CodeInternal).Message)
	// P7: Vault error returned as is.
	notFound := &apperr.Error{Code: apperr.CodePlanRunNotFound, Category: apperr.CatPlans}
	_, err = Waiter{API: &fakeAPI{runs: []scripted{{err: notFound}}}, Clock: newClock()}.Wait(context.Background(), Handle{Kind: KindPlanRun, RunID: "x"}, WaitOptions{})
	requireCode(t, err, apperr.CodePlanRunNotFound)
}

func TestWaitStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	api := &fakeAPI{jobs: []scripted{{body: pendingJob}}}
	api.onPoll = func() {
		if api.jobCalls == 2 {
			cancel()
		}
	}
	res, err := Waiter{API: api, Clock: newClock()}.Wait(ctx, Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, api.jobCalls)
	assert.Equal(t, "PENDING", res.State)

	// Real clock: a long sleep is interrupted promptly.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = Waiter{API: &fakeAPI{jobs: []scripted{{body: pendingJob}}}}.Wait(ctx, Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{TimeoutMS: 60000, PollIntervalMS: 10000})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// hangingAPI answers the first job poll, then hangs until its context ends.
type hangingAPI struct {
	fakeAPI
	calls int
}

func (h *hangingAPI) JobGet(ctx context.Context, id string) (Reply, error) {
	h.calls++
	if h.calls == 1 {
		return Reply{Status: 200, Body: decode(pendingJob)}, nil
	}
	<-ctx.Done()
	return Reply{}, &apperr.Error{Code: apperr.CodeNetwork, VaultCode: "NETWORK_ERROR", Cause: ctx.Err()}
}

func TestWaitHungPollIsCutOffAtTheDeadline(t *testing.T) {
	start := time.Now()
	res, err := Waiter{API: &hangingAPI{}}.Wait(context.Background(), Handle{Kind: KindJob, JobID: "job_1"}, WaitOptions{TimeoutMS: 1000, PollIntervalMS: 250})
	ae := requireCode(t, err, apperr.CodeWaitTimeout)
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, time.Second)
	assert.Less(t, elapsed, time.Second+PollGrace+1500*time.Millisecond, "a hung Vault cannot stretch the wait past deadline + grace")
	assert.Equal(t, "PENDING", res.State, "the last known state is kept")
	assert.NotNil(t, ae.Details["latest"].(map[string]any)["job"])
}

// mapDetails is details.approval as it was built before Approval was a
// type: a map, which JSON encodes with sorted keys.
func mapDetails(h *Handoff) map[string]any {
	var pa any
	if h.PendingApproval != nil {
		pa = h.PendingApproval
	}
	d := map[string]any{
		"status": "PENDING_APPROVAL", "kind": h.Kind, "job_id": h.JobID, "run_id": h.RunID, "challenge_id": h.ChallengeID,
		"pending_id": h.PendingID, "pending_id_resolved": h.PendingID != "", "pending_expires_at_unix_ms": h.ExpiresAtUnixMS,
		"pending_approval": pa, "decision_outcome": OutcomePending,
		"next_action": map[string]any{"tool": "vaultclaw_approval_wait", "arguments": map[string]any{"handle": h.Full()}},
	}
	if h.RemoteAttestationURL != "" {
		d["remote_attestation_url"] = h.RemoteAttestationURL
		d["remote_attestation_link_markdown"] = "[" + h.RemoteAttestationURL + "](" + h.RemoteAttestationURL + ")"
	}
	return d
}

// The typed approval encodes byte for byte as the map clients always got.
func TestApprovalJSONIsTheMapEncoding(t *testing.T) {
	for _, body := range []string{
		jobPend,
		`{"job":{"job_id":"job_1","status":"pending","pending_approval":{"pending_id":"apj_d","challenge":{"challenge_id":"ach_1"},"remote_attestation_url":"https://a.example/x?a=1&b=<2>"}}}`,
	} {
		h, ok := DetectJob(Reply{Status: 202, Body: decode(body)})
		require.True(t, ok)
		want, err := json.Marshal(mapDetails(h))
		require.NoError(t, err)
		got, err := json.Marshal(h.Approval())
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	h, ok := DetectPlan(Reply{Status: 202, Body: decode(`{"run":{"run_id":"run_9","job_id":"job_9","state":"PENDING_APPROVAL","challenge_id":"ach_run"},"job":{"job_id":"job_9","status":"PENDING","pending_expires_at_unix_ms":42}}`)})
	require.True(t, ok)
	want, _ := json.Marshal(mapDetails(h))
	got, _ := json.Marshal(h.Approval())
	assert.Equal(t, string(want), string(got))
}

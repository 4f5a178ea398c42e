package tools_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The approval and orchestration scenarios that a stateful Vault can
// reproduce, against vaultsim (the exact scripted exchanges live in
// approvals_test.go and vault_jobs_test.go).

func simEnvWith(t *testing.T, opts vaultsim.Options, token string, scopes ...string) (*vaultsim.Sim, *testEnv) {
	t.Helper()
	if opts.AgentToken == "" {
		opts.AgentToken = simToken
	}
	sim := vaultsim.New(opts)
	if token == "" {
		token = opts.AgentToken
	} else {
		sim.AddToken(token, scopes...)
	}
	return sim, newEnvAt(t, sim, filepath.Join(t.TempDir(), "accords.db"), token)
}

func scopesWithout(drop string) []string {
	var out []string
	for _, s := range vaultsim.AllScopes {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func echoRequest(e *testEnv, intent string) map[string]any {
	target := e.vault.URL + "/_sim/echo"
	att := map[string]any{"slot": "api_key", "mode": "read", "target": target}
	if intent != "" {
		att["intent"] = intent
	}
	return map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "policy_version": "1",
		"request": map[string]any{"method": "GET", "url": target, "secret_attachments": []any{att}}}
}

func TestSimProfileOrchestrationU1U2(t *testing.T) {
	t.Parallel()
	sim, e := simEnvWith(t, vaultsim.Options{}, "")
	bind := e.call("vaultclaw_slot_bind", map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "slot": "api_key", "secret_id": "sec_demo_api_key"})
	require.True(t, bind.OK, bind.Raw)

	// U2: nothing matches, so a profile is auto-created and the job runs with it.
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": echoRequest(e, "http.auth")})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "created", at(r.Object(), "preflight", "status"))
	created := at(r.Object(), "preflight", "profile_id").(string)
	assert.Regexp(t, `^mcp\.auto\.[0-9a-f]{12}$`, created)
	assert.Equal(t, "SUCCEEDED", at(r.Object(), "response", "job", "status"))
	up := sim.RequestsTo("POST", "/v0/connectors/unbounded/profiles/upsert")
	require.Len(t, up, 1)
	assert.Equal(t, "mcp-unbounded-profile-"+created[len("mcp.auto."):], up[0].Header.Get("Idempotency-Key"))

	// The same requirements now resolve to the stored profile: no second upsert.
	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": echoRequest(e, "http.auth")})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "resolved", at(r.Object(), "preflight", "status"))
	assert.Equal(t, created, at(r.Object(), "preflight", "profile_id"))
	assert.Len(t, sim.RequestsTo("POST", "/v0/connectors/unbounded/profiles/upsert"), 1)

	// U1: equally good profiles tie-break on the smallest profile_id.
	for _, id := range []string{"zz-last", "aa-first"} {
		p := e.call("vaultclaw_unbounded_profile_upsert", map[string]any{"profile": map[string]any{"type": "connector.unbounded.profile.v1", "profile_id": id,
			"connector_id": "generic.http", "verb": "generic.http.request.v1",
			"slots": []any{map[string]any{"slot": "api_key", "required": true, "allowed_intents": []any{"http.auth"}, "allowed_modes": []any{"read"}, "allowed_targets": []any{e.vault.URL + "/_sim/echo"}}}}})
		require.True(t, p.OK, p.Raw)
	}
	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": echoRequest(e, "http.auth")})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "aa-first", at(r.Object(), "preflight", "profile_id"))
	assert.Equal(t, 4.0, at(r.Object(), "preflight", "profile_match", "score"))
	last := sim.RequestsTo("POST", "/v0/connectors/execute-job")
	assert.Equal(t, "aa-first", at(last[len(last)-1].Body, "request", "profile_id"))

	// U5 via the resolve tool: a mode mismatch never qualifies.
	res := e.call("vaultclaw_unbounded_profile_resolve", map[string]any{"auto_create": false, "requirements": []any{
		map[string]any{"slot": "api_key", "mode": "write", "target": e.vault.URL + "/_sim/echo"}}})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", res.Code())
}

func TestSimAutoCreateWithoutWriteScopeU3(t *testing.T) {
	t.Parallel()
	sim, e := simEnvWith(t, vaultsim.Options{}, "vc_tok_no_profile_write", scopesWithout(vaultsim.ScopeProfilesWrite)...)
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": echoRequest(e, "")})
	require.Equal(t, "MCP_UNBOUNDED_PROFILE_REQUIRED", r.Code(), r.Raw)
	assert.Regexp(t, `^mcp-unbounded-profile-[0-9a-f]{12}$`, r.Details()["idempotency_key"])
	assert.Len(t, r.Details()["requirements"], 1)
	assert.Empty(t, sim.RequestsTo("POST", "/v0/connectors/validate"))
	assert.Empty(t, sim.RequestsTo("POST", "/v0/connectors/execute-job"))
}

func TestSimPendingLookupFailuresKeepTheHandleA3A4(t *testing.T) {
	t.Parallel()
	// A3: the token may not read the pending list.
	sim, e := simEnvWith(t, vaultsim.Options{}, "vc_tok_no_pending", scopesWithout(vaultsim.ScopeApprovalsRead)...)
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("a@example.com")})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code(), r.Raw)
	assert.Equal(t, "", at(r.Details(), "approval", "pending_id"))
	assert.Equal(t, false, at(r.Details(), "approval", "pending_id_resolved"))
	assert.Equal(t, sim.PendingApprovals()[0].JobID, at(r.Details(), "approval", "job_id"))
	assert.Equal(t, 403, sim.RequestsTo("GET", "/v0/connectors/approvals/pending")[0].Status)

	// A4: the pending list fails outright; the caller still gets the handle.
	sim, e = simEnvWith(t, vaultsim.Options{}, "")
	sim.InjectFault(vaultsim.Fault{Method: "GET", Path: "/v0/connectors/approvals/pending", Status: 404})
	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("a@example.com")})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code(), r.Raw)
	handle := at(r.Details(), "approval", "next_action", "arguments", "handle").(map[string]any)
	assert.Equal(t, "", handle["pending_id"])
	assert.Equal(t, sim.PendingApprovals()[0].JobID, handle["job_id"])
	// ... and can wait on it.
	require.NoError(t, sim.Deny(sim.PendingApprovals()[0].PendingID))
	w := e.call("vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": 5000, "poll_interval_ms": 250})
	require.True(t, w.OK, w.Raw)
	assert.Equal(t, "DENY", w.Object()["decision_outcome"])
}

func TestSimPendingIDFromVaultA5AndPendingListV1(t *testing.T) {
	t.Parallel()
	sim, e := simEnvWith(t, vaultsim.Options{IncludePendingIDInJob: true}, "")
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("a@example.com")})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code())
	assert.Equal(t, sim.PendingApprovals()[0].PendingID, at(r.Details(), "approval", "pending_id"))
	assert.Empty(t, sim.RequestsTo("GET", "/v0/connectors/approvals/pending"), "no lookup when Vault gives the id")
	url := at(r.Details(), "approval", "remote_attestation_url").(string)
	assert.NotEmpty(t, url)

	l := e.call("vaultclaw_approvals_pending_list", map[string]any{})
	require.True(t, l.OK)
	items := at(l.Object(), "items").([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "PENDING", at(items[0], "decision_outcome"))
	assert.Equal(t, url, at(items[0], "remote_attestation_url"))
	assert.Equal(t, "["+url+"]("+url+")", at(items[0], "remote_attestation_link_markdown"))
}

func TestSimWaitTimeoutW5AndExpiryW6(t *testing.T) {
	t.Parallel()
	// Vault's clock moves only when the test moves it: the approval cannot
	// expire early on a slow machine.
	const ttl = time.Minute
	var skew atomic.Int64
	sim, e := simEnvWith(t, vaultsim.Options{ApprovalTTL: ttl, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}, "")
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("a@example.com")})
	handle := handoffHandle(t, r, "JOB")
	w := e.call("vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": 1, "poll_interval_ms": 1})
	require.Equal(t, "MCP_WAIT_TIMEOUT", w.Code(), w.Raw)
	assert.Equal(t, "PENDING", at(w.Details(), "latest", "job", "status"))

	// Nobody decides: the approval expires (Vault's clock jumps past its
	// TTL once the wait has polled), and the wait ends (EXPIRED is
	// terminal) instead of polling until its own timeout.
	jobPath := "/v0/jobs/" + handle["job_id"].(string)
	polled := len(sim.RequestsTo("GET", jobPath))
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for len(sim.RequestsTo("GET", jobPath)) == polled {
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
		skew.Store(int64(2 * ttl))
	}()
	start := time.Now()
	w = e.call("vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": 20000, "poll_interval_ms": 250})
	require.True(t, w.OK, w.Raw)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, "EXPIRED", w.Object()["terminal_status"])
	assert.Equal(t, "DENY", w.Object()["decision_outcome"])
	assert.Equal(t, true, w.Object()["expired"])
	h := e.call("vaultclaw_approval_handles_list", map[string]any{"states": "EXPIRED"})
	assert.Len(t, at(h.Object(), "items"), 1)
}

func TestSimPlanPreflightU9U10AndRunNotFoundP7(t *testing.T) {
	t.Parallel()
	sim, e := simEnvWith(t, vaultsim.Options{}, "")
	target := e.vault.URL + "/_sim/echo"
	plan := map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "call", "steps": []any{
		map[string]any{"step_id": "call", "connector_id": "generic.http", "verb": "generic.http.request.v1", "policy_version": "1",
			"request_base":     map[string]any{"method": "GET", "secret_attachments": []any{map[string]any{"slot": "api_key", "mode": "read", "target": target}}},
			"request_bindings": []any{map[string]any{"path": "/url", "ref": map[string]any{"source": "plan_input", "path": "/url"}}}},
	}}
	require.True(t, e.call("vaultclaw_slot_bind", map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "slot": "api_key", "secret_id": "sec_demo_api_key"}).OK)

	sim.ClearRequests()
	r := e.call("vaultclaw_plan_execute", map[string]any{"plan": plan})
	require.Equal(t, "MCP_PLAN_PROFILE_PRECHECK_UNRESOLVED", r.Code())
	assert.Equal(t, []any{"/url"}, r.Details()["required_plan_input_paths"])
	assert.Empty(t, sim.Requests(), "U10: no Vault call")

	r = e.call("vaultclaw_plan_execute", map[string]any{"plan": plan, "plan_input": map[string]any{"url": target}})
	require.True(t, r.OK, r.Raw)
	assert.Equal(t, "CREATED", at(r.Object(), "preflight", "resolutions", 0, "status"))
	sent := sim.RequestsTo("POST", "/v0/connectors/plans/execute")[0].Body
	assert.Equal(t, target, at(sent, "plan", "steps", 0, "request_base", "url"))
	assert.Equal(t, []any{}, at(sent, "plan", "steps", 0, "request_bindings"))
	runID := at(r.Object(), "response", "run_id").(string)
	rg := e.call("vaultclaw_plan_run_get", map[string]any{"run_id": runID})
	require.True(t, rg.OK)
	assert.Equal(t, "ALLOW", rg.Object()["decision_outcome"])

	pv := e.call("vaultclaw_plan_unbounded_profile_preview", map[string]any{"plan": plan, "plan_input": map[string]any{"url": target}})
	require.True(t, pv.OK)
	assert.Equal(t, "RESOLVED", at(pv.Object(), "resolutions", 0, "status"), "the preview sees the profile created above")

	nf := e.call("vaultclaw_plan_run_get", map[string]any{"run_id": "run_missing"})
	assert.Equal(t, "MCP_PLAN_RUN_NOT_FOUND", nf.Code())
}

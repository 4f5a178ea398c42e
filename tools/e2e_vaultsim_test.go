package tools_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const simToken = "vc_tok_e2e"

func newSimEnv(t *testing.T) (*vaultsim.Sim, *testEnv) {
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	return sim, newEnvAt(t, sim, filepath.Join(t.TempDir(), "accords.db"), simToken)
}

func gmailSend(to string) map[string]any {
	return map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{to}, "subject": "Quarterly numbers", "text_plain": "Attached."}}
}

func statusPlan() map[string]any {
	return obj(`{"type":"connector.execution.plan.v1","start_step_id":"create_draft","steps":[
	 {"step_id":"create_draft","connector_id":"google","verb":"google.gmail.drafts.create","policy_version":"1","default_success_next_step_id":"send_draft",
	  "request_base":{"user_id":"me","subject":"Status"},
	  "request_bindings":[{"path":"/to","ref":{"source":"plan_input","path":"/email/to"}},{"path":"/text_plain","ref":{"source":"literal","value":"All green."}}]},
	 {"step_id":"send_draft","connector_id":"google","verb":"google.gmail.drafts.send","policy_version":"1",
	  "request_base":{"user_id":"me"},
	  "request_bindings":[{"path":"/draft_id","ref":{"source":"step_output","step_id":"create_draft","path":"/draft_id"}}]}]}`)
}

// handoffHandle checks an approval handoff and returns its ready handle.
func handoffHandle(t *testing.T, r mcptest.Envelope, kind string) map[string]any {
	t.Helper()
	require.Equal(t, "MCP_APPROVAL_REQUIRED", r.Code(), r.Raw)
	a := at(r.Details(), "approval").(map[string]any)
	assert.Equal(t, kind, a["kind"])
	assert.Equal(t, true, a["pending_id_resolved"], "the pending id is resolved through the pending list")
	assert.NotZero(t, a["pending_expires_at_unix_ms"])
	require.Len(t, r.Result.Content, 1)
	assert.Contains(t, r.Result.Content[0].(*mcp.TextContent).Text, "vaultclaw_approval_wait", "the text names the next step (D22)")
	return at(a, "next_action", "arguments", "handle").(map[string]any)
}

type waitOutcome struct {
	res mcptest.Envelope
	err error
}

// startWait runs vaultclaw_approval_wait in the background with a progress
// token.
func startWait(ctx context.Context, cs *mcp.ClientSession, handle map[string]any) <-chan waitOutcome {
	ch := make(chan waitOutcome, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "vaultclaw_approval_wait", Arguments: map[string]any{"handle": handle, "timeout_ms": 20000, "poll_interval_ms": 250}}
		p.SetProgressToken("wait-1")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			ch <- waitOutcome{err: err}
			return
		}
		raw, err := mcptest.Decode(res)
		ch <- waitOutcome{res: raw, err: err}
	}()
	return ch
}

// assertListWhileWaiting proves other requests are answered while a wait is
// in flight on the same connection.
func assertListWhileWaiting(t *testing.T, cs *mcp.ClientSession, wait <-chan waitOutcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	tl, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
	}
	assert.True(t, names["vaultclaw_approval_wait"])
	assert.True(t, names["vaultclaw_approval_handles_list"])
	select {
	case <-wait:
		t.Fatal("the wait returned before the decision")
	default:
	}
}

func pendingIDOf(t *testing.T, sim *vaultsim.Sim, handle map[string]any) string {
	t.Helper()
	id, _ := handle["pending_id"].(string)
	require.NotEmpty(t, id)
	for _, p := range sim.PendingApprovals() {
		if p.PendingID == id {
			return id
		}
	}
	t.Fatalf("pending approval %s not in the simulator", id)
	return ""
}

func finishWait(t *testing.T, wait <-chan waitOutcome) mcptest.Envelope {
	t.Helper()
	select {
	case w := <-wait:
		require.NoError(t, w.err)
		return w.res
	case <-time.After(15 * time.Second):
		t.Fatal("wait did not finish after the decision")
	}
	return mcptest.Envelope{}
}

func TestE2EGmailSendDeniedInMemory(t *testing.T) {
	t.Parallel()
	sim, e := newSimEnv(t)
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("bob@example.com")})
	handle := handoffHandle(t, r, "JOB")
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", at(r.Details(), "vault", "vault_code"))

	wait := startWait(context.Background(), e.cs, handle)
	assertListWhileWaiting(t, e.cs, wait)
	require.NoError(t, sim.Deny(pendingIDOf(t, sim, handle)))
	res := finishWait(t, wait)
	require.True(t, res.OK, res.Raw)
	assert.Equal(t, "DENIED", res.Object()["terminal_status"])
	assert.Equal(t, "DENY", res.Object()["decision_outcome"])
	assert.Equal(t, "CONNECTOR_APPROVAL_RULE_DENIED", at(res.Object(), "job", "error", "code"))
	assert.Empty(t, sim.SentMessages())

	// The server sends a progress notification at every poll, before its
	// answer; the client hands notifications to its handler on its own
	// goroutine, so the count may trail the answer by a moment.
	assert.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.progress) >= 1
	}, 5*time.Second, 5*time.Millisecond, "progress notifications were sent for the token")

	h := e.call("vaultclaw_approval_handles_list", map[string]any{"states": "DENIED"})
	items := at(h.Object(), "items").([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "DENY", at(items[0], "decision_outcome"))
	assert.Equal(t, true, at(items[0], "terminal"))
}

func TestE2EGmailSendApprovedInMemory(t *testing.T) {
	t.Parallel()
	sim, e := newSimEnv(t)
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("carol@example.com")})
	handle := handoffHandle(t, r, "JOB")
	wait := startWait(context.Background(), e.cs, handle)
	assertListWhileWaiting(t, e.cs, wait)
	require.NoError(t, sim.Approve(pendingIDOf(t, sim, handle)))
	res := finishWait(t, wait)
	require.True(t, res.OK, res.Raw)
	assert.Equal(t, "SUCCEEDED", res.Object()["terminal_status"])
	assert.Equal(t, "ALLOW", res.Object()["decision_outcome"])
	sent := sim.SentMessages()
	require.Len(t, sent, 1)
	assert.Equal(t, []string{"carol@example.com"}, sent[0].To)

	// job_get and pending_get agree.
	jg := e.call("vaultclaw_job_get", map[string]any{"job_id": handle["job_id"]})
	assert.Equal(t, "ALLOW", jg.Object()["decision_outcome"])
	assert.Equal(t, "TERMINAL", at(jg.Object(), "approval_state", "status"))
	pg := e.call("vaultclaw_approvals_pending_get", map[string]any{"challenge_id": handle["challenge_id"], "pending_id": handle["pending_id"]})
	require.True(t, pg.OK, pg.Raw)
	assert.Equal(t, "ALLOW", at(pg.Object(), "item", "decision_outcome"))
}

func TestE2EPlanRunApproveAndDeny(t *testing.T) {
	t.Parallel()
	for _, decide := range []string{"approve", "deny"} {
		sim, e := newSimEnv(t)
		r := e.call("vaultclaw_plan_execute", map[string]any{"plan": statusPlan(), "plan_input": map[string]any{"email": map[string]any{"to": []any{"ops@example.com"}}}})
		handle := handoffHandle(t, r, "PLAN_RUN")
		assert.NotEmpty(t, handle["run_id"])
		assert.NotEmpty(t, handle["job_id"])
		assert.Equal(t, "PLAN_APPROVAL_REQUIRED", at(r.Details(), "vault", "vault_code"))
		req := sim.RequestsTo("POST", "/v0/connectors/plans/execute")
		require.Len(t, req, 1)
		assert.NotContains(t, at(req[0].Body, "plan", "steps", 1, "request_base"), "module_hash", "plans never get a module hash")

		wait := startWait(context.Background(), e.cs, handle)
		assertListWhileWaiting(t, e.cs, wait)
		id := pendingIDOf(t, sim, handle)
		if decide == "approve" {
			require.NoError(t, sim.Approve(id))
		} else {
			require.NoError(t, sim.Deny(id))
		}
		res := finishWait(t, wait)
		require.True(t, res.OK, res.Raw)
		assert.NotNil(t, res.Object()["run"])
		if decide == "approve" {
			assert.Equal(t, "SUCCEEDED", res.Object()["terminal_status"])
			assert.Equal(t, "ALLOW", res.Object()["decision_outcome"])
			require.Len(t, sim.SentMessages(), 1)
		} else {
			assert.Equal(t, "DENIED", res.Object()["terminal_status"])
			assert.Equal(t, "DENY", res.Object()["decision_outcome"])
			assert.Empty(t, sim.SentMessages())
		}
		rg := e.call("vaultclaw_plan_run_get", map[string]any{"run_id": handle["run_id"]})
		require.True(t, rg.OK)
		assert.Equal(t, "TERMINAL", at(rg.Object(), "approval_state", "status"))
	}
}

func TestE2EHandoffSurvivesRestart(t *testing.T) {
	t.Parallel()
	sim, e := newSimEnv(t)
	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("dave@example.com")})
	handle := handoffHandle(t, r, "JOB")

	e.restart()

	h := e.call("vaultclaw_approval_handles_list", map[string]any{})
	items := at(h.Object(), "items").([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "PENDING_APPROVAL", at(items[0], "state"))
	stored := at(items[0], "next_action", "arguments", "handle").(map[string]any)
	assert.Equal(t, handle, stored)

	require.NoError(t, sim.Approve(pendingIDOf(t, sim, stored)))
	res := e.call("vaultclaw_approval_wait", map[string]any{"handle": stored, "timeout_ms": 5000, "poll_interval_ms": 250})
	require.True(t, res.OK, res.Raw)
	assert.Equal(t, "SUCCEEDED", res.Object()["terminal_status"])
	assert.Equal(t, "ALLOW", res.Object()["decision_outcome"])

	e.restart()
	h = e.call("vaultclaw_approval_handles_list", map[string]any{"states": []any{"SUCCEEDED"}})
	require.Len(t, at(h.Object(), "items"), 1, "the wait's outcome was stored too")
}

func TestE2EOverHTTPAndStdio(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			sim, e := newSimEnv(t)
			var cs *mcp.ClientSession
			ctx := context.Background()
			var progressMu sync.Mutex
			progress := 0
			opts := &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					progressMu.Lock()
					defer progressMu.Unlock()
					if r.Params.ProgressToken == "wait-1" {
						progress++
					}
				},
			}
			switch transport {
			case "http":
				srv := httptest.NewServer(e.app.HTTPHandler())
				t.Cleanup(srv.Close)
				cs = mcptest.ConnectHTTP(t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{StandaloneSSE: true, Client: opts})
			case "stdio":
				sIn, cOut := io.Pipe()
				cIn, sOut := io.Pipe()
				var wg sync.WaitGroup
				sctx, stop := context.WithCancel(ctx)
				wg.Go(func() { ; _ = e.app.ServeStdio(sctx, sIn, sOut) })
				t.Cleanup(func() { stop(); cOut.Close(); sOut.Close(); wg.Wait() })
				var err error
				cs, err = mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, &mcp.IOTransport{Reader: cIn, Writer: cOut}, nil)
				require.NoError(t, err)
			}
			t.Cleanup(func() { cs.Close() })

			r := mcptest.Call(t, cs, "vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("erin@example.com")})
			handle := handoffHandle(t, r, "JOB")
			wait := startWait(ctx, cs, handle)
			assertListWhileWaiting(t, cs, wait)
			// A second tool call is served while the wait runs, too.
			other := mcptest.Call(t, cs, "vaultclaw_approval_handles_list", map[string]any{})
			require.True(t, other.OK)
			require.NoError(t, sim.Deny(pendingIDOf(t, sim, handle)))
			res := finishWait(t, wait)
			require.True(t, res.OK, res.Raw)
			assert.Equal(t, "DENIED", res.Object()["terminal_status"])
			assert.Equal(t, "DENY", res.Object()["decision_outcome"])
			// The client handles the notification on its own goroutine: it
			// may land just after the answer.
			assert.Eventually(t, func() bool {
				progressMu.Lock()
				defer progressMu.Unlock()
				return progress >= 1
			}, 5*time.Second, 5*time.Millisecond, "notifications/progress reached the client")
		})
	}
}

func TestE2ESyncExecuteHandoffIsStoredAndWaitable(t *testing.T) {
	t.Parallel()
	sim, e := newSimEnv(t)
	r := e.call("vaultclaw_connector_execute", map[string]any{"request": gmailSend("frank@example.com")})
	handle := handoffHandle(t, r, "JOB")
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", at(r.Raw, "error", "vault_code"))
	assert.NotNil(t, at(r.Details(), "vault_error", "details", "pending_approval"), "the reference fallback path is kept")
	h := e.call("vaultclaw_approval_handles_list", map[string]any{})
	items := at(h.Object(), "items").([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "vaultclaw_connector_execute", at(items[0], "source"))
	require.NoError(t, sim.Approve(pendingIDOf(t, sim, handle)))
	res := e.call("vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": 5000, "poll_interval_ms": 250})
	require.True(t, res.OK, res.Raw)
	assert.Equal(t, "ALLOW", res.Object()["decision_outcome"])
	require.Len(t, sim.SentMessages(), 1)
}

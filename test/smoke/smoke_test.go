//go:build integration

package smoke

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// target is the Vault the suite talks to: live, or an in-process simulator.
type target struct {
	live bool
	sim  *vaultsim.Sim
	cs   *mcptest.Session
	// recipient of the e-mails the suite sends.
	recipient string
}

func envOr(k, def string) string {
	if v := strings.TrimSpace(os.Getenv(k)); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv(k))); err == nil && n > 0 {
		return n
	}
	return def
}

func truthy(k string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(k))) {
	case "1", "true", "yes", "y", "on":
		return true
	}
	return false
}

func liveConfigured() bool {
	return strings.TrimSpace(os.Getenv("VC_AGENT_TOKEN")) != "" &&
		(strings.TrimSpace(os.Getenv("VC_BASE_URL")) != "" || strings.TrimSpace(os.Getenv("VC_UNIX_SOCKET")) != "" || strings.TrimSpace(os.Getenv("VAULT_UNIX_SOCKET")) != "")
}

// setup opens an accords-mcp app on a temporary database, connected either
// to the live Vault named by the environment or to a fresh simulator, and
// returns an MCP client session over an in-memory transport.
func setup(t *testing.T) *target {
	t.Helper()
	tg := &target{live: liveConfigured(), recipient: envOr("VC_SMOKE_RECIPIENT", "smoke-test@example.com")}
	vars := map[string]string{
		"ACCORDS_MCP_DB":         filepath.Join(t.TempDir(), "accords.db"),
		"ACCORDS_MCP_SECRET_KEY": strings.Repeat("5a", 32),
	}
	if tg.live {
		for _, k := range []string{"VC_AGENT_TOKEN", "VC_BASE_URL", "VC_UNIX_SOCKET", "VAULT_UNIX_SOCKET", "VC_TIMEOUT_MS"} {
			vars[k] = os.Getenv(k)
		}
		t.Logf("smoke: live Vaultclaw at %s%s", envOr("VC_BASE_URL", ""), envOr("VC_UNIX_SOCKET", ""))
	} else {
		tg.sim = vaultsim.New(vaultsim.Options{AgentToken: "vc_tok_smoke"})
		srv := httptest.NewServer(tg.sim)
		t.Cleanup(srv.Close)
		vars["VC_AGENT_TOKEN"] = "vc_tok_smoke"
		vars["VC_BASE_URL"] = srv.URL
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Open(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() }) // after the session, which closes first
	tg.cs = mcptest.Connect(t, a.MCPServer(), nil)
	return tg
}

// call invokes a tool. Every tool is registered in every build, so an
// unknown tool fails the test like any other failed exchange.
func (tg *target) call(t *testing.T, name string, args map[string]any) mcptest.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(envInt("VC_SMOKE_WAIT_TIMEOUT_MS", 600000))*time.Millisecond+time.Minute)
	defer cancel()
	return mcptest.CallWith(t, ctx, tg.cs, &mcp.CallToolParams{Name: name, Arguments: args})
}

func get(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

func gmailList() map[string]any {
	return map[string]any{"connector_id": "google", "verb": "google.gmail.messages.list", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "page_limit": 1}}
}

func gmailSend(to string) map[string]any {
	return map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{to}, "subject": "accords-mcp smoke test", "text_plain": "Sent by the accords-mcp smoke suite."}}
}

func TestSmoke_Session(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_session_status", map[string]any{})
	require.True(t, env.OK, env.Error)
	assert.Equal(t, true, get(env.Data, "configured"))
	tok := str(get(env.Data, "token"))
	assert.Contains(t, tok, "***", "the token is masked")
	assert.NotEqual(t, os.Getenv("VC_AGENT_TOKEN"), tok)
}

func TestSmoke_Discovery(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_connectors_list", map[string]any{})
	require.True(t, env.OK, env.Error)
	items, _ := get(env.Data, "items").([]any)
	if items == nil {
		items, _ = get(env.Data, "connectors").([]any)
	}
	require.NotEmpty(t, items, "Vault lists connectors under items or connectors")
	env = tg.call(t, "vaultclaw_connector_get", map[string]any{"connector_id": "google"})
	require.True(t, env.OK, env.Error)
	assert.NotEmpty(t, str(get(env.Data, "policy_hash")))
}

func TestSmoke_Execute(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_connector_validate", map[string]any{"request": gmailList()})
	require.True(t, env.OK, env.Error)
	assert.Equal(t, true, get(env.Data, "module_hash", "applied"), "Gmail requests get a module hash")
	env = tg.call(t, "vaultclaw_connector_execute", map[string]any{"request": gmailList()})
	require.True(t, env.OK, env.Error)
}

func TestSmoke_ExecuteJob(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_connector_execute_job", map[string]any{"request": gmailList()})
	require.True(t, env.OK, env.Error)
	job := get(env.Data, "response", "job")
	require.NotNil(t, job)
	id := str(get(job, "job_id"))
	require.NotEmpty(t, id)
	assert.Equal(t, true, get(env.Data, "preflight", "module_hash", "applied"))
	assert.NotNil(t, get(env.Data, "preflight", "validation"))

	env = tg.call(t, "vaultclaw_job_get", map[string]any{"job_id": id})
	require.True(t, env.OK, env.Error)
	assert.Contains(t, []any{"ALLOW", "UNKNOWN", "PENDING"}, get(env.Data, "decision_outcome"))
}

func listPlan() map[string]any {
	return map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "list", "steps": []any{
		map[string]any{"step_id": "list", "connector_id": "google", "verb": "google.gmail.messages.list", "policy_version": "1",
			"request_base": map[string]any{"user_id": "me", "page_limit": 1}},
	}}
}

func TestSmoke_Plan(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_plan_validate", map[string]any{"plan": listPlan()})
	require.True(t, env.OK, env.Error)
	env = tg.call(t, "vaultclaw_plan_unbounded_profile_preview", map[string]any{"plan": listPlan()})
	require.True(t, env.OK, env.Error)
	env = tg.call(t, "vaultclaw_plan_execute", map[string]any{"plan": listPlan()})
	require.True(t, env.OK, env.Error)
	assert.Equal(t, "module_hash is not injected into plan step request payloads", get(env.Data, "preflight", "module_hash", "note"))
	runID := str(get(env.Data, "response", "run_id"))
	if runID == "" {
		runID = str(get(env.Data, "response", "run", "run_id"))
	}
	require.NotEmpty(t, runID)
	env = tg.call(t, "vaultclaw_plan_run_get", map[string]any{"run_id": runID})
	require.True(t, env.OK, env.Error)
}

func TestSmoke_Approvals(t *testing.T) {
	tg := setup(t)
	env := tg.call(t, "vaultclaw_approvals_pending_list", map[string]any{"limit": 10})
	require.True(t, env.OK, env.Error)
	_, ok := get(env.Data, "items").([]any)
	assert.True(t, ok, "items is a list")
	env = tg.call(t, "vaultclaw_approvals_pending_list", map[string]any{"states": "waiting,bogus"})
	assert.Equal(t, "MCP_VALIDATION_ERROR", env.Code())
	env = tg.call(t, "vaultclaw_approval_handles_list", map[string]any{})
	require.True(t, env.OK, env.Error)
}

// TestSmoke_ApprovalResume sends a Gmail message that needs approval, prints
// the ids a person needs to decide, and waits for the decision. Live, it
// runs only with VC_SMOKE_MANUAL_APPROVAL=1 and expects VC_SMOKE_EXPECT_OUTCOME
// (DENY, the only accepted value, so no mail is actually sent). Against the
// simulator both decisions are scripted: deny for the job, approve for a
// plan run.
func TestSmoke_ApprovalResume(t *testing.T) {
	manual := truthy("VC_SMOKE_MANUAL_APPROVAL")
	if liveConfigured() && !manual {
		t.Skip("live approval-resume test needs VC_SMOKE_MANUAL_APPROVAL=1 and a person to decide")
	}
	expect := strings.ToUpper(envOr("VC_SMOKE_EXPECT_OUTCOME", "DENY"))
	require.Equal(t, "DENY", expect, "VC_SMOKE_EXPECT_OUTCOME: only DENY is accepted")
	timeoutMS := envInt("VC_SMOKE_WAIT_TIMEOUT_MS", 600000)
	pollMS := envInt("VC_SMOKE_POLL_INTERVAL_MS", 1500)
	tg := setup(t)
	if !tg.live {
		timeoutMS, pollMS = min(timeoutMS, 20000), min(pollMS, 250)
	}

	env := tg.call(t, "vaultclaw_connector_execute_job", map[string]any{"request": gmailSend(tg.recipient)})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", env.Code(), "Gmail send must need approval: %v", env.Error)
	approval := get(env.Details(), "approval")
	handle := get(approval, "next_action", "arguments", "handle").(map[string]any)
	t.Logf("APPROVAL REQUIRED: challenge_id=%s pending_id=%s job_id=%s run_id=%s attestation=%s",
		str(handle["challenge_id"]), str(handle["pending_id"]), str(handle["job_id"]), str(handle["run_id"]), str(get(approval, "remote_attestation_url")))
	if tg.live {
		t.Logf("Decide it now (expected: %s); waiting up to %d ms, polling every %d ms", expect, timeoutMS, pollMS)
	} else {
		go func() {
			time.Sleep(300 * time.Millisecond)
			_ = tg.sim.Deny(str(handle["pending_id"]))
		}()
	}
	env = tg.call(t, "vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": timeoutMS, "poll_interval_ms": pollMS})
	require.True(t, env.OK, env.Error)
	assert.Equal(t, true, get(env.Data, "done"))
	assert.Equal(t, expect, get(env.Data, "decision_outcome"))
	t.Logf("decision: %v / %v", get(env.Data, "terminal_status"), get(env.Data, "decision_outcome"))

	if tg.live {
		return
	}
	// Scripted plan run, approved.
	plan := map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "send", "steps": []any{
		map[string]any{"step_id": "send", "connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
			"request_base":     map[string]any{"user_id": "me", "subject": "plan smoke", "text_plain": "ok"},
			"request_bindings": []any{map[string]any{"path": "/to", "ref": map[string]any{"source": "plan_input", "path": "/to"}}}},
	}}
	env = tg.call(t, "vaultclaw_plan_execute", map[string]any{"plan": plan, "plan_input": map[string]any{"to": []any{tg.recipient}}})
	require.Equal(t, "MCP_APPROVAL_REQUIRED", env.Code(), env.Error)
	handle = get(env.Details(), "approval", "next_action", "arguments", "handle").(map[string]any)
	t.Logf("PLAN APPROVAL REQUIRED: challenge_id=%s pending_id=%s run_id=%s", str(handle["challenge_id"]), str(handle["pending_id"]), str(handle["run_id"]))
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = tg.sim.Approve(str(handle["pending_id"]))
	}()
	env = tg.call(t, "vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": timeoutMS, "poll_interval_ms": pollMS})
	require.True(t, env.OK, env.Error)
	assert.Equal(t, "SUCCEEDED", get(env.Data, "terminal_status"))
	assert.Equal(t, "ALLOW", get(env.Data, "decision_outcome"))
	assert.Len(t, tg.sim.SentMessages(), 1)
}

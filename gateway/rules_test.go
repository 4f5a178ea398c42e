package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const rulesPolicy = `
[stdio]
capabilities = ["*"]

[[rules]]
id = "mail-inside"
tools = ["vaultclaw_connector_execute*", "vaultclaw_plan_execute"]
deny_if = 'args.request.connector_id == "google" && args.request.request.to.exists(t, email_domain(t) != "acme.example")'
message = "mail leaves acme.example only with a person's send"
on_error = "allow"

[[rules]]
id = "no-evenings"
tools = ["vaultclaw_connector_execute*", "vaultclaw_plan_execute"]
deny_if = 'local_hour(now, "UTC") >= 18'
message = "no execution after 18:00 UTC"

[[rules]]
id = "plan-size"
tools = ["vaultclaw_plan_execute"]
deny_if = 'size(rendered.plan.steps) > 2'
message = "plans have at most 2 steps"

[[rules]]
id = "who"
tools = ["vaultclaw_session_status"]
deny_if = 'caller == "local" && tenant == "default" && capability == "session_admin" && tool == "vaultclaw_session_status" && has(args.deny) && args.deny'
message = "asked to be denied"
`

func mail(to ...string) map[string]any {
	return map[string]any{"request": map[string]any{"connector_id": "google", "verb": "gmail.send", "policy_version": "1",
		"request": map[string]any{"to": to, "subject": "s", "body": "b"}}}
}

func violated(t *testing.T, env mcptest.Envelope) []string {
	t.Helper()
	require.Equal(t, apperr.CodePolicyViolation, env.Code(), "%+v", env.Error)
	assert.Equal(t, apperr.CatPolicy, env.Error.Category)
	assert.False(t, env.Error.Retryable)
	var ids []string
	for _, v := range env.Details()["violated_rules"].([]any) {
		m := v.(map[string]any)
		assert.NotEmpty(t, m["message"])
		ids = append(ids, m["id"].(string))
	}
	return ids
}

func TestRulesDenyBeforeVaultAndAreReceipted(t *testing.T) {
	h := newHarness(t, setup{policy: rulesPolicy})
	cs := h.stdio()

	// Denied: nothing reaches Vault (the harness has no Vault at all, and
	// no session: a call that got past the rules would fail differently).
	env := call(t, cs, "vaultclaw_connector_execute", mail("bob@acme.example", "eve@evil.example"))
	assert.Equal(t, []string{"mail-inside"}, violated(t, env))
	assert.Contains(t, env.Error.Message, "mail leaves acme.example")

	// Allowed by the rules: the call goes on to the tool.
	env = call(t, cs, "vaultclaw_connector_execute", mail("bob@acme.example"))
	assert.Equal(t, apperr.CodeSessionNotConfigured, env.Code(), "the rules let it through to the tool")

	// Every input: tool, caller, tenant, capability and args.
	assert.Equal(t, []string{"who"}, violated(t, call(t, cs, "vaultclaw_session_status", map[string]any{"deny": true})))
	require.True(t, call(t, cs, "vaultclaw_session_status", map[string]any{"deny": false}).OK)

	// now: the harness clock.
	h.clock.Advance(7 * time.Hour) // 19:00 UTC
	assert.Equal(t, []string{"mail-inside", "no-evenings"}, violated(t, call(t, cs, "vaultclaw_connector_execute_job", mail("eve@evil.example"))))

	rs := h.receipts(audit.Filter{})
	byOutcome := map[string][]audit.Receipt{}
	for _, r := range rs {
		byOutcome[r.Outcome] = append(byOutcome[r.Outcome], r)
	}
	require.Len(t, byOutcome[apperr.CodePolicyViolation], 3)
	newest := byOutcome[apperr.CodePolicyViolation][0]
	assert.Equal(t, []string{"mail-inside", "no-evenings"}, newest.RulesEvaluated)
	assert.Equal(t, []string{"mail-inside", "no-evenings"}, newest.RulesMatched)
	assert.Equal(t, "vault_execute", newest.CapabilityUsed)
	allowed := byOutcome[apperr.CodeSessionNotConfigured][0]
	assert.Equal(t, []string{"mail-inside", "no-evenings"}, allowed.RulesEvaluated, "the decision is recorded on allowed calls too")
	assert.Empty(t, allowed.RulesMatched)
}

func TestRenderedRulesSeeThePlanBeforeItIsSent(t *testing.T) {
	h := newHarness(t, setup{policy: rulesPolicy})
	cs := h.stdio()
	// A session pointing at nothing: a plan that passes the rules fails
	// at the network, one that does not never gets there.
	require.True(t, call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken, "base_url": "http://127.0.0.1:9"}).OK)
	plan := func(n int) map[string]any {
		steps := make([]any, n)
		for i := range steps {
			steps[i] = map[string]any{"id": "s" + string(rune('a'+i)), "connector_id": "google", "verb": "gmail.send", "request": map[string]any{}}
		}
		return map[string]any{"plan": map[string]any{"type": "connector.execution.plan.v1", "steps": steps}, "orchestration": map[string]any{"unbounded_profiles": false}}
	}
	env := call(t, cs, "vaultclaw_plan_execute", plan(3))
	assert.Equal(t, []string{"plan-size"}, violated(t, env))
	env = call(t, cs, "vaultclaw_plan_execute", plan(2))
	assert.NotEqual(t, apperr.CodePolicyViolation, env.Code())
	assert.Equal(t, apperr.CodeNetwork, env.Code(), "allowed: it went on to Vault")

	rs := h.receipts(audit.Filter{Tool: "vaultclaw_plan_execute"})
	require.Len(t, rs, 2)
	assert.Equal(t, []string{"mail-inside", "no-evenings", "plan-size"}, rs[1].RulesEvaluated)
	assert.Equal(t, []string{"plan-size"}, rs[1].RulesMatched)
	assert.Equal(t, []string{"mail-inside", "no-evenings", "plan-size"}, rs[0].RulesEvaluated)
}

func TestRulesReloadAndBadRulesKeepThePreviousPolicy(t *testing.T) {
	h := newHarness(t, setup{policy: rulesPolicy})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)

	h.writePolicy(rulesPolicy + `
[[rules]]
id = "broken"
tools = ["vaultclaw_session_status"]
deny_if = 'tool ==' 
`)
	err := h.gw.Reload()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rules[4] (broken).deny_if")
	assert.Contains(t, err.Error(), "line 33:")
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK, "the previous rules stay")

	h.writePolicy(`
[[rules]]
id = "status-off"
tools = ["vaultclaw_session_status"]
deny_if = 'true'
message = "status is off today"
`)
	require.NoError(t, h.gw.Reload())
	assert.Equal(t, []string{"status-off"}, violated(t, call(t, cs, "vaultclaw_session_status", nil)))
}

func TestToolResultsCarryAProvableReceiptReference(t *testing.T) {
	h := newHarness(t, setup{})
	cs := h.stdio()
	var refs []audit.Ref
	for i := range 5 {
		env := call(t, cs, "vaultclaw_session_status", map[string]any{"n": i})
		raw, err := json.Marshal(env.Result.Meta[MetaReceipt])
		require.NoError(t, err)
		var ref audit.Ref
		require.NoError(t, json.Unmarshal(raw, &ref))
		require.NotZero(t, ref.Seq)
		assert.Regexp(t, `^[0-9a-f]{64}$`, ref.LeafHash)
		assert.Equal(t, h.log.Origin(), ref.Origin)
		_, inStructured := env.Raw["receipt"]
		assert.False(t, inStructured, "the envelope shape is unchanged")
		refs = append(refs, ref)
	}
	require.NoError(t, h.log.Checkpoint())
	for _, ref := range refs {
		p, err := audit.Prove(h.db, ref.Seq)
		require.NoError(t, err)
		cp, err := audit.VerifyProof(p, h.key.Verifier(), ref.LeafHash)
		require.NoError(t, err, "receipt %d", ref.Seq)
		assert.GreaterOrEqual(t, cp.Size, ref.Seq)
	}
}

// integrityRecorder reports a verification failure until acknowledged, or
// a verification that cannot reach the store.
type integrityRecorder struct {
	*audit.Log
	problem *audit.Problem
	err     error
}

func (r *integrityRecorder) Integrity() (*audit.Problem, error) { return r.problem, r.err }

func TestBrokenChainRefusesWriteToolsOnly(t *testing.T) {
	rec := &integrityRecorder{problem: &audit.Problem{Kind: audit.ProblemRemoved, Seq: 812, Message: "receipt 812 removed"}}
	h := newHarness(t, setup{recorder: func(l *audit.Log) Recorder { rec.Log = l; return rec }})
	cs := h.stdio()
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken})
	require.Equal(t, apperr.CodeInternal, env.Code())
	assert.Equal(t, "audit_chain_broken", env.Details()["reason"])
	assert.Contains(t, env.Error.Message, "receipt 812")
	assert.Contains(t, env.Error.Message, "accords-mcp audit acknowledge")
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK, "read tools go on")
	rec.problem = nil
	require.True(t, call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken}).OK)
}

func TestUnverifiedAuditLogRefusesWriteToolsRetryably(t *testing.T) {
	rec := &integrityRecorder{err: &audit.UnverifiedError{Cause: fmt.Errorf("%w: context deadline exceeded", store.ErrUnavailable)}}
	h := newHarness(t, setup{recorder: func(l *audit.Log) Recorder { rec.Log = l; return rec }})
	cs := h.stdio()
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken})
	require.Equal(t, apperr.CodeStoreUnavailable, env.Code(), "not a broken chain: the log is not yet checked")
	assert.True(t, env.Error.Retryable)
	assert.Equal(t, "audit_unverified", env.Details()["reason"])
	assert.NotContains(t, env.Error.Message, "acknowledge")
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK, "read tools go on")
	rec.err = nil
	require.True(t, call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken}).OK)
}

func TestListShowsRuleDeniedToolsStill(t *testing.T) {
	// Rules decide per call; they never hide a tool from tools/list.
	h := newHarness(t, setup{policy: rulesPolicy})
	names := mcptest.ToolNames(t, h.stdio())
	assert.True(t, slices.Contains(names, "vaultclaw_plan_execute"))
}

// On a shared log (replicas on etcd) a receipt is numbered when it is
// committed: a read call answers without waiting for that, so its result
// carries only its call id, by which its receipt is found once committed;
// a write call answers after its receipt's commit and carries the
// reference as on a single process's log.
func TestSharedLogReadCallsCarryTheCallIDWriteCallsTheReceipt(t *testing.T) {
	h := newHarness(t, setup{shared: true})
	cs := h.stdio()
	read := call(t, cs, "vaultclaw_session_status", nil)
	_, numbered := read.Result.Meta[MetaReceipt]
	assert.False(t, numbered, "a read call's receipt has no number before its commit")
	readID, _ := read.Result.Meta["accords/call_id"].(string)
	write := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken, "base_url": "http://127.0.0.1:9"})
	raw, err := json.Marshal(write.Result.Meta[MetaReceipt])
	require.NoError(t, err)
	var ref audit.Ref
	require.NoError(t, json.Unmarshal(raw, &ref))
	require.NotZero(t, ref.Seq, "a write call carries its committed receipt")
	writeID, _ := write.Result.Meta["accords/call_id"].(string)

	rs := h.receipts(audit.Filter{CallID: readID})
	require.Len(t, rs, 1, "the read call's receipt is found by its call id")
	assert.Equal(t, "vaultclaw_session_status", rs[0].Tool)
	rs = h.receipts(audit.Filter{CallID: writeID})
	require.Len(t, rs, 1)
	assert.Equal(t, ref.Seq, rs[0].Seq)
	require.NoError(t, h.log.Checkpoint())
	p, err := audit.Prove(h.db, ref.Seq)
	require.NoError(t, err)
	_, err = audit.VerifyProof(p, h.key.Verifier(), ref.LeafHash)
	require.NoError(t, err)
	assert.Len(t, h.receipts(audit.Filter{}), 2, "one receipt per call")
}

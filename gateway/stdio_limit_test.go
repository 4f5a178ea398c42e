package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gmailSend is a synchronous Gmail send, which the simulator holds for a
// person's approval (one pending approval per call that reaches it).
func gmailSend(i int) map[string]any {
	return map[string]any{"request": map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{fmt.Sprintf("r%d@example.com", i)}, "subject": "s", "text_plain": "t"}}}
}

func simHarness(t *testing.T, policyTOML string) (*harness, *vaultsim.Server) {
	t.Helper()
	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: "vc_tok_stdio_loop"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	// Every refusal gets a receipt of its own (no summaries), so the test
	// counts them one by one.
	h := newHarness(t, setup{policy: policyTOML, refusalWindow: -1,
		vault: session.Defaults{BaseURL: sim.URL, Token: "vc_tok_stdio_loop", TimeoutMS: 5000}})
	return h, sim
}

// TestStdioLoopOfExecuteCallsHitsTheDefaultLimit is the runaway agent loop:
// with no policy file, an agent calling vaultclaw_connector_execute over
// stdio as fast as it can reaches Vault DefaultStdioExecuteBurst times,
// then gets the retryable MCP_RATE_LIMITED, each refusal receipted and none
// reaching Vault; a token comes back every 3 s (20 a minute). Tools that
// start no Vault work stay unlimited on stdio.
func TestStdioLoopOfExecuteCallsHitsTheDefaultLimit(t *testing.T) {
	h, sim := simHarness(t, "")
	cs := h.stdio()
	const calls = 40
	codes := map[string]int{}
	var refusal *apperr.Error
	for i := range calls {
		env := call(t, cs, "vaultclaw_connector_execute", gmailSend(i))
		codes[env.Code()]++
		if env.Code() == apperr.CodeRateLimited && refusal == nil {
			refusal = &apperr.Error{Code: env.Error.Code, Category: env.Error.Category, Retryable: env.Error.Retryable, Details: env.Error.Details}
		}
	}
	assert.Equal(t, map[string]int{
		apperr.CodeApprovalRequired: policy.DefaultStdioExecuteBurst,
		apperr.CodeRateLimited:      calls - policy.DefaultStdioExecuteBurst,
	}, codes)
	assert.Equal(t, policy.DefaultStdioExecuteBurst, len(sim.PendingApprovals()), "refused calls never reach Vault")
	require.NotNil(t, refusal)
	assert.Equal(t, apperr.CatPolicy, refusal.Category)
	assert.True(t, refusal.Retryable)
	assert.EqualValues(t, 3000, refusal.Details["retry_after_ms"], "20 calls a minute: one every 3 s")
	assert.EqualValues(t, policy.DefaultStdioExecuteCallsPerMinute, refusal.Details["calls_per_minute"])
	assert.Equal(t, "vaultclaw_connector_execute", refusal.Details["tool"])
	assert.Len(t, h.receipts(audit.Filter{Outcome: apperr.CodeRateLimited}), calls-policy.DefaultStdioExecuteBurst)

	// Each tool that starts Vault work has a bucket of its own, at the
	// same default.
	for i := range policy.DefaultStdioExecuteBurst {
		require.Equal(t, apperr.CodeApprovalRequired, call(t, cs, "vaultclaw_connector_execute_job", gmailSend(100+i)).Code())
	}
	require.Equal(t, apperr.CodeRateLimited, call(t, cs, "vaultclaw_connector_execute_job", gmailSend(200)).Code())

	// Reading stays unlimited.
	for range 3 * policy.DefaultBurst {
		require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	}

	h.clock.Advance(3 * time.Second)
	assert.Equal(t, apperr.CodeApprovalRequired, call(t, cs, "vaultclaw_connector_execute", gmailSend(300)).Code(), "a token is back after 3 s")
}

// The policy file's [stdio] table lifts the default (calls_per_minute = 0)
// or raises it, for every tool (its own calls_per_minute) or one (the
// tool's entry; unset keys keep the default's).
func TestStdioExecuteLimitFollowsThePolicyFile(t *testing.T) {
	for name, c := range map[string]struct {
		toml                 string
		executeAll, jobBurst int
	}{
		"lifted":       {"[stdio]\ncalls_per_minute = 0\n", 30, 30},
		"raised":       {"[stdio]\ncalls_per_minute = 600\nburst = 25\n", 25, 25},
		"one tool":     {"[stdio.tools.vaultclaw_connector_execute]\nburst = 30\n", 30, policy.DefaultStdioExecuteBurst},
		"burst only":   {"[stdio]\nburst = 3\n", policy.DefaultStdioExecuteBurst, policy.DefaultStdioExecuteBurst},
		"capabilities": {"[stdio]\ncapabilities = [\"*\"]\n", policy.DefaultStdioExecuteBurst, policy.DefaultStdioExecuteBurst},
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := simHarness(t, c.toml)
			cs := h.stdio()
			for tool, want := range map[string]int{"vaultclaw_connector_execute": c.executeAll, "vaultclaw_connector_execute_job": c.jobBurst} {
				reached := 0
				for i := range 30 {
					if call(t, cs, tool, gmailSend(i)).Code() == apperr.CodeApprovalRequired {
						reached++
					}
				}
				assert.Equal(t, want, reached, "%s calls that reached Vault", tool)
			}
		})
	}
}

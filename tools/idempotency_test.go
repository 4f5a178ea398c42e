package tools_test

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyGuard wraps every Vault the tool tests talk to and fails the test
// if an execute-type POST arrives without an Idempotency-Key (D17): run
// over all tool tests, it shows that no path sends one without a key.
func keyGuard(t *testing.T, next http.Handler) http.Handler {
	var mu sync.Mutex
	var missing []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, missing, "execute-type requests sent without an Idempotency-Key")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && vault.IsExecuteType(r.URL.Path) && r.Header.Get("Idempotency-Key") == "" {
			mu.Lock()
			missing = append(missing, r.URL.Path)
			mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// requireKeysInLog is keyGuard for tests that read the simulator's log.
func requireKeysInLog(t *testing.T, log []vaultsim.Request) {
	t.Helper()
	for _, r := range log {
		if r.Method == http.MethodPost && vault.IsExecuteType(r.Path) {
			assert.NotEmpty(t, r.Header.Get("Idempotency-Key"), "%s %s without an Idempotency-Key", r.Method, r.Path)
		}
	}
}

func jobsOf(sim *vaultsim.Sim, path string) (deliveries int, keys map[string]bool) {
	keys = map[string]bool{}
	for _, r := range sim.RequestsTo(http.MethodPost, path) {
		deliveries++
		keys[r.Header.Get("Idempotency-Key")] = true
	}
	return deliveries, keys
}

// TestExecuteResetAfterDeliveryIsOutcomeUnknownAndRetrySafe: Vault ran the
// job but the answer was lost (a reset after the body was written). The
// tool says the outcome is unknown, not retryable, with the key; a retry
// with that key returns the job that ran, and Vault ran it once.
func TestExecuteResetAfterDeliveryIsOutcomeUnknownAndRetrySafe(t *testing.T) {
	t.Parallel()
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	sim.SetApprovalRules() // everything runs without approval
	e := newEnvAt(t, sim, filepath.Join(t.TempDir(), "accords.db"), simToken)
	// Twice: the first delivery goes over the connection the validate
	// call used, so Go's transport replays it once by itself (same key,
	// which Vault recognises); the replay is lost too.
	sim.InjectFault(vaultsim.Fault{Method: http.MethodPost, Path: vault.PathExecuteJob, ResetAfter: true, Times: 2})

	r := e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("gina@example.com")})
	er := mcptest.RequireCode(t, r, "MCP_NETWORK_ERROR")
	assert.False(t, er.Retryable)
	assert.Equal(t, true, er.Details["outcome_unknown"])
	key, _ := er.Details["idempotency_key"].(string)
	require.NotEmpty(t, key)
	assert.Len(t, sim.SentMessages(), 1, "the action ran once")

	r = e.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("gina@example.com"), "idempotency_key": key})
	require.True(t, r.OK, "%+v", r.Error)
	assert.Len(t, sim.SentMessages(), 1, "the retry with the key did not run it again")
	n, keys := jobsOf(sim, vault.PathExecuteJob)
	assert.Equal(t, 3, n, "the original, the transport's replay and the agent's retry")
	assert.Equal(t, map[string]bool{key: true}, keys, "all with one key")
}

// TestExecuteReplayOnReusedConnectionRunsOnce: on a pooled connection Go's
// transport replays the reset POST by itself, with the same key; Vault
// answers the replay from its record, so the call succeeds and the mail
// goes out once.
func TestExecuteReplayOnReusedConnectionRunsOnce(t *testing.T) {
	t.Parallel()
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	sim.SetApprovalRules()
	e := newEnvAt(t, sim, filepath.Join(t.TempDir(), "accords.db"), simToken)
	require.True(t, e.call("vaultclaw_connectors_list", map[string]any{}).OK) // a pooled connection
	sim.InjectFault(vaultsim.Fault{Method: http.MethodPost, Path: vault.PathExecute, ResetAfter: true})

	r := e.call("vaultclaw_connector_execute", map[string]any{"request": gmailSend("hal@example.com"), "idempotency_key": "agent-action-7"})
	require.True(t, r.OK, "%+v", r.Error)
	n, keys := jobsOf(sim, vault.PathExecute)
	assert.Equal(t, 2, n, "delivered twice: the original and the transport's replay")
	assert.Equal(t, map[string]bool{"agent-action-7": true}, keys)
	assert.Len(t, sim.SentMessages(), 1, "and sent once")
}

func TestIdempotencyKeyArgumentIsChecked(t *testing.T) {
	t.Parallel()
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	e := newEnvAt(t, sim, filepath.Join(t.TempDir(), "accords.db"), simToken)
	for _, tool := range []string{"vaultclaw_connector_execute", "vaultclaw_connector_execute_job", "vaultclaw_plan_execute", "vaultclaw_slot_bind", "vaultclaw_unbounded_profile_upsert"} {
		r := e.call(tool, map[string]any{"request": gmailSend("x@example.com"), "plan": statusPlan(), "profile": map[string]any{},
			"connector_id": "c", "verb": "v", "slot": "s", "secret_id": "x", "idempotency_key": "has spaces"})
		er := mcptest.RequireCode(t, r, "MCP_VALIDATION_ERROR")
		assert.Equal(t, "idempotency_key", er.Details["field"], tool)
	}
	assert.Empty(t, sim.Requests(), "nothing reached Vault")
}

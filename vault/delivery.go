package vault

import (
	"github.com/accordsai/accords-mcp/platform/apperr"
)

// executeTypePaths are the POSTs that act (D17): each carries an
// Idempotency-Key so that a replay, by Go's transport or by an agent
// retrying with the key, never runs the action twice.
var executeTypePaths = map[string]bool{
	PathExecute:       true,
	PathExecuteJob:    true,
	PathPlanExecute:   true,
	PathProfileUpsert: true,
	PathSlotBind:      true,
}

// IsExecuteType reports whether a POST to path acts in Vault.
func IsExecuteType(path string) bool { return executeTypePaths[path] }

// RetryHint tells an agent how to retry an execute-type call safely.
const RetryHint = "retry with the same idempotency_key: Vault runs an action at most once per key, and a retry of one that already ran returns its result"

// delivery is what one execute-type call knows about whether it reached
// Vault.
type delivery struct {
	execType bool
	key      string
	// sent: request bytes were written on some attempt.
	sent bool
	// answered: Vault returned a success status (so it acted).
	answered bool
	// proxyFailure: a 5xx that is not Vault's own error answer.
	proxyFailure bool
}

// mark adds the key to an execute-type failure, and when the request may
// have reached Vault without a usable answer makes it MCP_NETWORK_ERROR,
// not retryable, details.outcome_unknown true: the agent must not send the
// action again without the key (or check what happened first).
func (d delivery) mark(e *apperr.Error) *apperr.Error {
	if !d.execType || e == nil {
		return e
	}
	e.With("idempotency_key", d.key)
	transport := e.VaultCode == CodeNetworkError || e.VaultCode == CodeMalformedResponse || e.VaultCode == "RESPONSE_TOO_LARGE"
	if d.sent && (transport || d.answered || d.proxyFailure) {
		if e.Code != apperr.CodeNetwork {
			e.Code, e.Category = apperr.CodeNetwork, apperr.CatNetwork
		}
		e.Retryable = false
		e.Message += "; the request may have reached Vault, so whether the action ran is unknown"
		e.With("outcome_unknown", true).With("retry_hint", RetryHint)
		return e
	}
	if e.Retryable {
		e.With("retry_hint", RetryHint)
	}
	return e
}

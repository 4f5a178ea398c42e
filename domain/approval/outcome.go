// Package approval implements the approval handoff (D3): it recognises a
// pending approval in Vault answers, builds MCP_APPROVAL_REQUIRED, maps
// states to decision outcomes, waits for a decision and keeps durable
// handles (D4). It reaches Vaultclaw only through the API interface.
package approval

import (
	"maps"
	"strings"
)

// Decision outcomes.
const (
	OutcomePending = "PENDING"
	OutcomeAllow   = "ALLOW"
	OutcomeDeny    = "DENY"
	OutcomeUnknown = "UNKNOWN"
)

// Handle kinds.
const (
	KindJob     = "JOB"
	KindPlanRun = "PLAN_RUN"
)

// approvalRequiredCodes signal a pending decision. D3: the grant code counts
// wherever the decision codes do.
var approvalRequiredCodes = map[string]bool{
	"CONNECTOR_APPROVAL_DECISION_REQUIRED": true,
	"PLAN_APPROVAL_REQUIRED":               true,
	"CONNECTOR_APPROVAL_GRANT_REQUIRED":    true,
}

var denyCodes = map[string]bool{
	"CONNECTOR_APPROVAL_RULE_DENIED": true,
	"PLAN_APPROVAL_DENIED":           true,
	"APPROVAL_DECISION_EXPIRED":      true,
}

// IsApprovalRequiredCode reports an approval-required vault code.
func IsApprovalRequiredCode(code string) bool {
	return approvalRequiredCodes[strings.ToUpper(strings.TrimSpace(code))]
}

// IsDenyCode reports a deny vault code.
func IsDenyCode(code string) bool { return denyCodes[strings.ToUpper(strings.TrimSpace(code))] }

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

func upper(v any) string { return strings.ToUpper(str(v)) }

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// nonEmpty reports a non-empty JSON object.
func nonEmpty(v any) bool { return len(obj(v)) > 0 }

// errorCode reads <o>.error.code, falling back to <o>.error.error.code.
func errorCode(o map[string]any) string {
	e := obj(o["error"])
	if c := str(e["code"]); c != "" {
		return c
	}
	return str(obj(e["error"])["code"])
}

func int64Of(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}

// terminalStates of jobs and runs. D3 adds EXPIRED (and the cancel
// spellings) so a wait never polls a finished job until its timeout.
var terminalStates = map[string]bool{
	"SUCCEEDED": true, "FAILED": true, "DENIED": true,
	"EXPIRED": true, "CANCELED": true, "CANCELLED": true,
}

// IsTerminal reports a terminal job status or run state.
func IsTerminal(state string) bool { return terminalStates[strings.ToUpper(strings.TrimSpace(state))] }

// JobOutcome maps a job object to a decision outcome: ALLOW, DENY, PENDING
// or UNKNOWN (D3).
func JobOutcome(job map[string]any) string {
	code := strings.ToUpper(errorCode(job))
	switch upper(job["status"]) {
	case "PENDING", "RUNNING", "READY":
		if nonEmpty(job["pending_approval"]) || IsApprovalRequiredCode(code) {
			return OutcomePending
		}
		return OutcomeUnknown
	case "SUCCEEDED":
		return OutcomeAllow
	case "DENIED":
		if IsDenyCode(code) {
			return OutcomeDeny
		}
		return OutcomeUnknown
	case "EXPIRED":
		return OutcomeDeny
	}
	return OutcomeUnknown
}

// RunOutcome maps a plan run (and its job, possibly nil) to an outcome.
func RunOutcome(run, job map[string]any) string {
	code := str(run["last_error_code"])
	if code == "" {
		code = errorCode(job)
	}
	switch upper(run["state"]) {
	case "PENDING_APPROVAL", "READY", "RUNNING":
		return OutcomePending
	case "SUCCEEDED":
		return OutcomeAllow
	case "DENIED":
		if IsDenyCode(code) {
			return OutcomeDeny
		}
		return OutcomeUnknown
	case "EXPIRED":
		return OutcomeDeny
	}
	return OutcomeUnknown
}

// PendingOutcome maps a pending-approval row to an outcome.
func PendingOutcome(row map[string]any) string {
	code := upper(row["last_error_code"])
	switch upper(row["state"]) {
	case "WAITING", "READY", "RUNNING":
		return OutcomePending
	case "SUCCEEDED":
		return OutcomeAllow
	case "DENIED", "EXPIRED":
		if code == "" || IsDenyCode(code) {
			return OutcomeDeny
		}
		return OutcomeUnknown
	}
	return OutcomeUnknown
}

// StateStatus is approval_state.status: TERMINAL, PENDING_APPROVAL or UNKNOWN.
func StateStatus(state, outcome string) string {
	switch {
	case IsTerminal(state):
		return "TERMINAL"
	case outcome == OutcomePending:
		return "PENDING_APPROVAL"
	}
	return "UNKNOWN"
}

// JobView is the data of vaultclaw_job_get.
func JobView(job map[string]any) map[string]any {
	outcome := JobOutcome(job)
	var pa any
	if p := obj(job["pending_approval"]); p != nil {
		pa = p
	}
	return map[string]any{
		"job":              job,
		"decision_outcome": outcome,
		"approval_state": map[string]any{
			"status":           StateStatus(str(job["status"]), outcome),
			"decision_outcome": outcome,
			"pending_approval": pa,
		},
	}
}

// RunView is vaultclaw_plan_run_get's data: a shallow copy of body with
// decision_outcome and approval_state (body unchanged without a run).
func RunView(body map[string]any) map[string]any {
	run := obj(body["run"])
	if run == nil {
		return body
	}
	out := make(map[string]any, len(body)+2)
	maps.Copy(out, body)
	outcome := RunOutcome(run, obj(body["job"]))
	out["decision_outcome"] = outcome
	out["approval_state"] = map[string]any{"status": StateStatus(str(run["state"]), outcome), "decision_outcome": outcome}
	return out
}

package approval

import (
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Tools whose calls can hand off and be finished later.
const (
	ToolConnectorExecute    = "vaultclaw_connector_execute"
	ToolConnectorExecuteJob = "vaultclaw_connector_execute_job"
	ToolPlanExecute         = "vaultclaw_plan_execute"
	ToolPassportWorkflow    = "vaultclaw_passport_email_workflow"
)

// Continuation is what a handed-off call needs to give the answer it would
// have given had the person decided in time; plain JSON, kept across
// restarts.
type Continuation struct {
	Tool string `json:"tool"`
	// Preflight and Request (execute-job) or Plan (plan execute) are the
	// keys of the tool's success data besides Vault's response.
	Preflight map[string]any `json:"preflight,omitempty"`
	Request   map[string]any `json:"request,omitempty"`
	Plan      map[string]any `json:"plan,omitempty"`
	// ResumeArguments call the tool again to finish (passport workflow);
	// Data is the success data composed before the handoff.
	ResumeArguments map[string]any `json:"resume_arguments,omitempty"`
	Data            map[string]any `json:"data,omitempty"`
}

// Resumable reports whether Vault's decision alone can finish the call.
func (c Continuation) Resumable() bool {
	switch c.Tool {
	case ToolConnectorExecute, ToolConnectorExecuteJob, ToolPlanExecute:
		return true
	case ToolPassportWorkflow:
		id, _ := c.ResumeArguments["run_id"].(string)
		return strings.TrimSpace(id) != ""
	}
	return false
}

// DeniedMessage and ExpiredMessage are the messages of MCP_APPROVAL_DENIED
// for a call finished after the person's decision.
const (
	DeniedMessage  = "the approval was denied in Vaultclaw; nothing was executed"
	ExpiredMessage = "the approval expired in Vaultclaw before anyone decided; nothing was executed"
)

// DeniedError is MCP_APPROVAL_DENIED for a denied or expired handoff, with
// Vault's deny code and the last job and run seen.
func DeniedError(res WaitResult) *apperr.Error {
	msg := DeniedMessage
	if res.Expired {
		msg = ExpiredMessage
	}
	e := apperr.New(apperr.CodeApprovalDenied, "%s", msg)
	code := errorCode(res.Job)
	if c := str(res.Run["last_error_code"]); c != "" {
		code = c
	}
	e.VaultCode = strings.ToUpper(code)
	var job, run any
	if res.Job != nil {
		job = res.Job
	}
	if res.Run != nil {
		run = res.Run
	}
	return e.With("decision_outcome", OutcomeDeny).With("terminal_status", res.State).With("expired", res.Expired).
		With("handle", res.Handle.Compact()).With("job", job).With("run", run).
		With("request_id", res.RequestID).With("vault_http_status", res.HTTPStatus)
}

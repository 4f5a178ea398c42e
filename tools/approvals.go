package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset approvals: what waits on a person, and the wait itself.

type jobGetIn struct {
	JobID string `json:"job_id"`
}

type planRunGetIn struct {
	RunID string `json:"run_id"`
}

type pendingListIn struct {
	States      StringList `json:"states,omitempty" jsonschema:"WAITING, READY, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED"`
	Limit       int        `json:"limit,omitempty"`
	ConnectorID string     `json:"connector_id,omitempty"`
	Verb        string     `json:"verb,omitempty"`
	AgentID     string     `json:"agent_id,omitempty"`
	ChallengeID string     `json:"challenge_id,omitempty"`
}

type pendingGetIn struct {
	ChallengeID string `json:"challenge_id"`
	PendingID   string `json:"pending_id"`
}

type handleIn struct {
	// Not schema-required: the session check comes before the handle's
	// kind and ids are checked.
	Kind        string `json:"kind,omitempty" jsonschema:"JOB or PLAN_RUN"`
	JobID       string `json:"job_id,omitempty"`
	RunID       string `json:"run_id,omitempty"`
	ChallengeID string `json:"challenge_id,omitempty"`
	PendingID   string `json:"pending_id,omitempty"`
}

type waitIn struct {
	Handle         handleIn `json:"handle" jsonschema:"from details.approval.next_action"`
	TimeoutMS      int      `json:"timeout_ms,omitempty"`
	PollIntervalMS int      `json:"poll_interval_ms,omitempty"`
}

type handlesListIn struct {
	States StringList `json:"states,omitempty" jsonschema:"PENDING_APPROVAL, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED, CANCELED"`
	Limit  int        `json:"limit,omitempty"`
}

// needsApprovals are the services of the Vault-backed approval tools.
const needsApprovals = NeedSessions | NeedExecution

var jobGet = Define(Tool{
	Name:        "vaultclaw_job_get",
	Description: "Fetch a job once; to wait for a decision use approval_wait.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsRemote,
	Needs:       needsApprovals,
	Output:      obj("job", obj(), "decision_outcome", str()),
}, nil, getJob)

func getJob(ctx context.Context, d *Deps, c *Call, in jobGetIn) (Result, error) {
	id, err := required("job_id", in.JobID)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	r, err := d.Execution.ApprovalAPI(sess).JobGet(ctx, id)
	if err != nil {
		return Result{}, err
	}
	job, ok := r.Body["job"].(map[string]any)
	if !ok {
		return Result{}, apperr.New(apperr.CodeInternal, "job response missing job object").
			With("request_id", r.RequestID).With("vault_http_status", r.Status)
	}
	return Result{Data: approval.JobView(job), Meta: vaultMeta(r.RequestID, r.Status)}, nil
}

var planRunGet = Define(Tool{
	Name:        "vaultclaw_plan_run_get",
	Description: "Fetch a plan run once; to wait for a decision use approval_wait.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsRemote,
	Needs:       needsApprovals,
	Output:      obj("run", obj(), "decision_outcome", str()),
}, nil, getPlanRun)

func getPlanRun(ctx context.Context, d *Deps, c *Call, in planRunGetIn) (Result, error) {
	id, err := required("run_id", in.RunID)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	r, err := d.Execution.ApprovalAPI(sess).PlanRunGet(ctx, id)
	if err != nil {
		return Result{}, err
	}
	var data any
	if r.Body != nil {
		data = approval.RunView(r.Body)
	}
	return Result{Data: data, Meta: vaultMeta(r.RequestID, r.Status)}, nil
}

var approvalsPendingList = Define(Tool{
	Name:        "vaultclaw_approvals_pending_list",
	Description: "List approval requests, newest first, with approver links.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsRemote,
	Needs:       needsApprovals,
	Narrowed:    map[string]*jsonschema.Schema{"states": strs()},
	Output:      obj("items", objs()),
}, nil, listPendingApprovals)

func listPendingApprovals(ctx context.Context, d *Deps, c *Call, in pendingListIn) (Result, error) {
	states, err := approval.ParseStates(in.States, "states", approval.AllPendingStates)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	items, r, err := approval.List(ctx, d.Execution.ApprovalAPI(sess), approval.ListQuery{States: states, Limit: in.Limit,
		ConnectorID: in.ConnectorID, Verb: in.Verb, AgentID: in.AgentID, ChallengeID: in.ChallengeID})
	if err != nil {
		return Result{}, err
	}
	return Result{Data: map[string]any{"items": items}, Meta: vaultMeta(r.RequestID, r.Status)}, nil
}

var approvalsPendingGet = Define(Tool{
	Name:        "vaultclaw_approvals_pending_get",
	Description: "Fetch one approval request.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsRemote,
	Needs:       needsApprovals,
	Output:      obj("item", obj()),
}, nil, getPendingApproval)

func getPendingApproval(ctx context.Context, d *Deps, c *Call, in pendingGetIn) (Result, error) {
	ch, err := required("challenge_id", in.ChallengeID)
	if err != nil {
		return Result{}, err
	}
	pid, err := required("pending_id", in.PendingID)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	item, err := approval.Get(ctx, d.Execution.ApprovalAPI(sess), ch, pid)
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"item": item})
}

var approvalWait = Define(Tool{
	Name:        "vaultclaw_approval_wait",
	Description: "Wait for a person's decision after MCP_APPROVAL_REQUIRED.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsRemote,
	Needs:       needsApprovals,
	Output:      obj("terminal_status", str(), "decision_outcome", str()),
}, nil, waitForApproval)

func waitForApproval(ctx context.Context, d *Deps, c *Call, in waitIn) (Result, error) {
	// Session first, then the handle's kind and ids, as the predecessor
	// reported them.
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	h, err := approval.NormalizeHandle(approval.Handle{Kind: in.Handle.Kind, JobID: in.Handle.JobID, RunID: in.Handle.RunID,
		ChallengeID: in.Handle.ChallengeID, PendingID: in.Handle.PendingID})
	if err != nil {
		return Result{}, err
	}
	data, err := d.Execution.Wait(ctx, c.Scope(), sess, h, approval.WaitOptions{TimeoutMS: in.TimeoutMS, PollIntervalMS: in.PollIntervalMS}, c.Progress)
	if err != nil {
		return Result{}, err
	}
	return OK(data)
}

var approvalHandlesList = Define(Tool{
	Name:        "vaultclaw_approval_handles_list",
	Description: "List stored approval handles, to resume a wait.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Effect:      ReadsLocal,
	Needs:       NeedHandles,
	Narrowed:    map[string]*jsonschema.Schema{"states": strs()},
	Output:      obj("items", objs()),
}, func(s *jsonschema.Schema) {
	Range(s, "limit", 0, approval.MaxListLimit)
}, listApprovalHandles)

func listApprovalHandles(ctx context.Context, d *Deps, c *Call, in handlesListIn) (Result, error) {
	var states []string
	if in.States != nil {
		var err error
		if states, err = approval.ParseStates(in.States, "states", approval.HandleStates); err != nil {
			return Result{}, err
		}
	}
	recs, err := d.Handles.List(c.Scope(), states, in.Limit)
	if err != nil {
		return Result{}, apperr.Internal("list approval handles", err)
	}
	items := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		items = append(items, handleView(r))
	}
	return OK(map[string]any{"items": items})
}

func handleView(r approval.Record) map[string]any {
	out := map[string]any{
		"handle":                     r.Handle.Full(),
		"state":                      r.State,
		"decision_outcome":           r.DecisionOutcome,
		"terminal":                   r.Terminal,
		"expired":                    r.Expired,
		"pending_expires_at_unix_ms": r.PendingExpiresAtUnixMS,
		"source":                     r.Source,
		"created_at":                 r.CreatedAt,
		"updated_at":                 r.UpdatedAt,
		"next_action":                map[string]any{"tool": approval.WaitTool, "arguments": map[string]any{"handle": r.Handle.Full()}},
	}
	if r.VaultState != "" {
		out["vault_state"] = r.VaultState
	}
	if r.RemoteAttestationURL != "" {
		out["remote_attestation_url"] = r.RemoteAttestationURL
	}
	if r.TerminalAt != nil {
		out["terminal_at"] = *r.TerminalAt
	}
	if r.Task != nil {
		// A Tasks-extension task follows this handle (its id stays with
		// the client that holds it).
		task := map[string]any{"status": r.Task.Status, "updated_at": r.Task.UpdatedAt}
		if r.Task.StatusMessage != "" {
			task["status_message"] = r.Task.StatusMessage
		}
		out["task"] = task
	}
	return out
}

package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset approvals: what waits on a person, and the wait itself.

type jobGetIn struct {
	JobID string `json:"job_id" jsonschema:"Vault job id (job_...)"`
}

type planRunGetIn struct {
	RunID string `json:"run_id" jsonschema:"plan run id"`
}

type pendingListIn struct {
	States      StringList `json:"states,omitempty" jsonschema:"states to list: CSV string or string array of WAITING, READY, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED; default all seven"`
	Limit       int        `json:"limit,omitempty" jsonschema:"maximum rows; default 50"`
	ConnectorID string     `json:"connector_id,omitempty" jsonschema:"only approvals for this connector"`
	Verb        string     `json:"verb,omitempty" jsonschema:"only approvals for this verb"`
	AgentID     string     `json:"agent_id,omitempty" jsonschema:"only approvals requested by this agent"`
	ChallengeID string     `json:"challenge_id,omitempty" jsonschema:"only approvals of this challenge (ach_...)"`
}

type pendingGetIn struct {
	ChallengeID string `json:"challenge_id" jsonschema:"challenge id (ach_...)"`
	PendingID   string `json:"pending_id" jsonschema:"pending approval id (apj_...)"`
}

type handleIn struct {
	// Not schema-required: the session check comes before the handle's
	// kind and ids are checked.
	Kind        string `json:"kind,omitempty" jsonschema:"JOB or PLAN_RUN"`
	JobID       string `json:"job_id,omitempty" jsonschema:"job id; required for JOB"`
	RunID       string `json:"run_id,omitempty" jsonschema:"plan run id; required for PLAN_RUN"`
	ChallengeID string `json:"challenge_id,omitempty" jsonschema:"challenge id (echoed back)"`
	PendingID   string `json:"pending_id,omitempty" jsonschema:"pending approval id (echoed back)"`
}

type waitIn struct {
	Handle         handleIn `json:"handle" jsonschema:"the handle from MCP_APPROVAL_REQUIRED details.approval.next_action.arguments.handle"`
	TimeoutMS      int      `json:"timeout_ms,omitempty" jsonschema:"how long to wait; default 600000, clamped to 1000..3600000"`
	PollIntervalMS int      `json:"poll_interval_ms,omitempty" jsonschema:"poll interval; default 1500, clamped to 250..10000"`
}

type handlesListIn struct {
	States StringList `json:"states,omitempty" jsonschema:"record states: CSV string or string array of PENDING_APPROVAL, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED, CANCELED; default all"`
	Limit  int        `json:"limit,omitempty" jsonschema:"maximum handles, newest first; default 50, at most 500"`
}

// csvOrArray lets a StringList property be a CSV string or a string array.
func csvOrArray(s *jsonschema.Schema, name string) {
	AnyOf(s, name, "string", "array")
	Prop(s, name).Items = &jsonschema.Schema{Type: "string"}
}

// needsApprovals are the services of the Vault-backed approval tools.
const needsApprovals = NeedSessions | NeedExecution

var jobGet = Define(Tool{
	Name:        "vaultclaw_job_get",
	Title:       "Get Vault job",
	Description: "Fetch a Vault job with its decision outcome (ALLOW, DENY, PENDING, UNKNOWN) and approval state.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Hints:       ReadRemote,
	Needs:       needsApprovals,
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
	Title:       "Get a plan run",
	Description: "Fetch a plan run with its decision outcome and approval state.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Hints:       ReadRemote,
	Needs:       needsApprovals,
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
	Title:       "List pending approvals",
	Description: "List Vault approval requests with their decision outcome and attestation link, newest first.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Hints:       ReadRemote,
	Needs:       needsApprovals,
}, func(s *jsonschema.Schema) {
	csvOrArray(s, "states")
}, listPendingApprovals)

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
	Title:       "Get a pending approval",
	Description: "Fetch one approval request by challenge id and pending id, with its decision outcome.",
	Toolset:     ToolsetApprovals,
	Capability:  CapApprovalsView,
	Hints:       ReadRemote,
	Needs:       needsApprovals,
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
	Name:  "vaultclaw_approval_wait",
	Title: "Wait for an approval decision",
	Description: "Wait until the job or plan run of an approval handle is decided (SUCCEEDED, DENIED, FAILED or EXPIRED), " +
		"polling Vault. Sends progress notifications when the request has a progress token; on MCP_WAIT_TIMEOUT call it again with the same handle.",
	Toolset:    ToolsetApprovals,
	Capability: CapApprovalsView,
	Hints:      ReadRemote,
	Needs:      needsApprovals,
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
	Name:  "vaultclaw_approval_handles_list",
	Title: "List approval handles",
	Description: "List this scope's stored approval handles (from execute_job and plan_execute handoffs), newest first, " +
		"with the last state a wait saw. Handles survive restarts; pass one to vaultclaw_approval_wait to resume.",
	Toolset:    ToolsetApprovals,
	Capability: CapApprovalsView,
	Hints:      ReadLocal,
	Needs:      NeedHandles,
}, func(s *jsonschema.Schema) {
	csvOrArray(s, "states")
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

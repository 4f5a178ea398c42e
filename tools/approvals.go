package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/google/jsonschema-go/jsonschema"
)

type jobGetIn struct {
	JobID string `json:"job_id" jsonschema:"Vault job id (job_...)"`
}

type pendingListIn struct {
	States      any    `json:"states,omitempty" jsonschema:"states to list: CSV string or string array of WAITING, READY, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED; default all seven"`
	Limit       int    `json:"limit,omitempty" jsonschema:"maximum rows; default 50"`
	ConnectorID string `json:"connector_id,omitempty" jsonschema:"only approvals for this connector"`
	Verb        string `json:"verb,omitempty" jsonschema:"only approvals for this verb"`
	AgentID     string `json:"agent_id,omitempty" jsonschema:"only approvals requested by this agent"`
	ChallengeID string `json:"challenge_id,omitempty" jsonschema:"only approvals of this challenge (ach_...)"`
}

type pendingGetIn struct {
	ChallengeID string `json:"challenge_id" jsonschema:"challenge id (ach_...)"`
	PendingID   string `json:"pending_id" jsonschema:"pending approval id (apj_...)"`
}

type handleIn struct {
	// Not schema-required: the session check comes before the handle's
	// kind and ids are validated (spec §8.2).
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
	States any `json:"states,omitempty" jsonschema:"record states: CSV string or string array of PENDING_APPROVAL, RUNNING, SUCCEEDED, DENIED, FAILED, EXPIRED, CANCELED; default all"`
	Limit  int `json:"limit,omitempty" jsonschema:"maximum handles, newest first; default 50, at most 500"`
}

// nonBlank trims s and reports a validation error naming field when empty.
func vaultMeta(requestID string, status int) envelope.Meta {
	return envelope.Meta{RequestID: requestID, VaultHTTPStatus: status}
}

func approvalTools(sessions *session.Service, ex *execution.Service, handles *approval.Store) []Tool {
	resolve := func(ctx context.Context, c *Call) (session.Session, error) { return sessions.Resolve(ctx, c.Scope()) }
	return []Tool{
		Typed(Tool{
			Name:        "vaultclaw_job_get",
			Title:       "Get Vault job",
			Description: "Fetch a Vault job with its decision outcome (ALLOW, DENY, PENDING, UNKNOWN) and approval state.",
			Toolset:     ToolsetApprovals,
			Capability:  CapApprovalsView,
			Hints:       ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in jobGetIn) (Result, error) {
			id, err := required("job_id", in.JobID)
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			r, err := ex.ApprovalAPI(sess).JobGet(ctx, id)
			if err != nil {
				return Result{}, err
			}
			job, ok := r.Body["job"].(map[string]any)
			if !ok {
				return Result{}, apperr.New(apperr.CodeInternal, "job response missing job object").
					With("request_id", r.RequestID).With("vault_http_status", r.Status)
			}
			return Result{Data: approval.JobView(job), Meta: vaultMeta(r.RequestID, r.Status)}, nil
		}),
		Typed(Tool{
			Name:        "vaultclaw_approvals_pending_list",
			Title:       "List pending approvals",
			Description: "List Vault approval requests with their decision outcome and attestation link, newest first.",
			Toolset:     ToolsetApprovals,
			Capability:  CapApprovalsView,
			Hints:       ReadRemote,
		}, func(s *jsonschema.Schema) {
			AnyOf(s, "states", "string", "array")
			Prop(s, "states").Items = &jsonschema.Schema{Type: "string"}
		}, func(ctx context.Context, c *Call, in pendingListIn) (Result, error) {
			states, err := approval.ParseStates(c.Args["states"], "states", approval.AllPendingStates)
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			items, r, err := approval.List(ctx, ex.ApprovalAPI(sess), approval.ListQuery{States: states, Limit: in.Limit,
				ConnectorID: in.ConnectorID, Verb: in.Verb, AgentID: in.AgentID, ChallengeID: in.ChallengeID})
			if err != nil {
				return Result{}, err
			}
			return Result{Data: map[string]any{"items": items}, Meta: vaultMeta(r.RequestID, r.Status)}, nil
		}),
		Typed(Tool{
			Name:        "vaultclaw_approvals_pending_get",
			Title:       "Get a pending approval",
			Description: "Fetch one approval request by challenge id and pending id, with its decision outcome.",
			Toolset:     ToolsetApprovals,
			Capability:  CapApprovalsView,
			Hints:       ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in pendingGetIn) (Result, error) {
			ch, err := required("challenge_id", in.ChallengeID)
			if err != nil {
				return Result{}, err
			}
			pid, err := required("pending_id", in.PendingID)
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			item, err := approval.Get(ctx, ex.ApprovalAPI(sess), ch, pid)
			if err != nil {
				return Result{}, err
			}
			return OK(map[string]any{"item": item})
		}),
		Typed(Tool{
			Name:  "vaultclaw_approval_wait",
			Title: "Wait for an approval decision",
			Description: "Wait until the job or plan run of an approval handle is decided (SUCCEEDED, DENIED, FAILED or EXPIRED), " +
				"polling Vault. Sends progress notifications when the request has a progress token; on MCP_WAIT_TIMEOUT call it again with the same handle.",
			Toolset:    ToolsetApprovals,
			Capability: CapApprovalsView,
			Hints:      ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in waitIn) (Result, error) {
			// Session first, then the handle's kind and ids (spec §8.2).
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			h, err := approval.ParseHandle(c.Args["handle"])
			if err != nil {
				return Result{}, err
			}
			data, err := ex.Wait(ctx, c.Scope(), sess, h, approval.WaitOptions{TimeoutMS: in.TimeoutMS, PollIntervalMS: in.PollIntervalMS}, c.Progress)
			if err != nil {
				return Result{}, err
			}
			return OK(data)
		}),
		Typed(Tool{
			Name:  "vaultclaw_approval_handles_list",
			Title: "List approval handles",
			Description: "List this scope's stored approval handles (from execute_job and plan_execute handoffs), newest first, " +
				"with the last state a wait saw. Handles survive restarts; pass one to vaultclaw_approval_wait to resume.",
			Toolset:    ToolsetApprovals,
			Capability: CapApprovalsView,
			Hints:      ReadLocal,
		}, func(s *jsonschema.Schema) {
			AnyOf(s, "states", "string", "array")
			Prop(s, "states").Items = &jsonschema.Schema{Type: "string"}
			Range(s, "limit", 0, approval.MaxListLimit)
		}, func(ctx context.Context, c *Call, in handlesListIn) (Result, error) {
			var states []string
			if c.Args["states"] != nil {
				var err error
				if states, err = approval.ParseStates(c.Args["states"], "states", approval.HandleStates); err != nil {
					return Result{}, err
				}
			}
			recs, err := handles.List(c.Scope(), states, in.Limit)
			if err != nil {
				return Result{}, apperr.Internal("list approval handles", err)
			}
			items := make([]map[string]any, 0, len(recs))
			for _, r := range recs {
				items = append(items, handleView(r))
			}
			return OK(map[string]any{"items": items})
		}),
	}
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
		"next_action":                map[string]any{"tool": "vaultclaw_approval_wait", "arguments": map[string]any{"handle": r.Handle.Full()}},
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
	return out
}

package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodePolicyRefused is the JSON-RPC error of a request outside a tool call
// (tasks/*) that the policy refuses: a caller without the task tool's
// capability, or polling beyond its rate. data is the envelope's error
// object (MCP_PERMISSION_DENIED or MCP_RATE_LIMITED, with retry_after_ms).
const CodePolicyRefused = -32003

// refusedRPC turns a policy refusal into its JSON-RPC error.
func refusedRPC(e *apperr.Error) error {
	data, _ := json.Marshal(map[string]any{"code": e.Code, "category": e.Category, "message": e.Message,
		"retryable": e.Retryable, "details": e.Details})
	return &jsonrpc.Error{Code: CodePolicyRefused, Message: e.Message, Data: data}
}

// MethodLimits rate-limits requests of the methods outside tool calls
// (tasks/*): one bucket per caller and method, so polling does not spend
// the tool's own budget; a refusal is a CodePolicyRefused JSON-RPC error.
// Ownership and the tool's capability are the extension's to check
// (Allowed), which knows the task.
func (g *Gateway) MethodLimits(methods ...string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !slices.Contains(methods, method) {
				return next(ctx, method, req)
			}
			p := caller.From(ctx)
			if refused := g.limit(p, g.callerFor(g.policy.Load(), p), method); refused != nil {
				return nil, refusedRPC(refused)
			}
			return next(ctx, method, req)
		}
	}
}

// Allowed reports whether p may still use tool (capability, read-only,
// toolsets), for a tasks/* request on a task of that tool: a policy reload
// that took the capability away also closes its tasks. Its error is the
// JSON-RPC answer.
func (g *Gateway) Allowed(p caller.Principal, tool string) error {
	t, ok := g.reg.Lookup(tool)
	if !ok {
		return refusedRPC(apperr.New(apperr.CodePermissionDenied, "tool %s is not known to this server", tool).With("tool", tool))
	}
	if e := g.refusal(g.callerFor(g.policy.Load(), p), t); e != nil {
		return refusedRPC(e)
	}
	return nil
}

// Record writes the receipt of a task event: a task that finished,
// with its result's digest and outcome, or one its owner cancelled. The
// receipt names the tools/call that created the task; the returned _meta
// entries reference it as a tool call's result does.
func (g *Gateway) Record(e task.Event) map[string]any {
	rec := audit.Receipt{
		Type:         audit.TypeTask,
		CallID:       newCallID(),
		Timestamp:    g.opts.Now().UTC().Format(time.RFC3339Nano),
		Caller:       e.Owner.Caller,
		Transport:    e.Transport,
		Scope:        e.Owner.Scope,
		Tool:         truncate(e.Tool, MaxToolNameInReceipt),
		ResultHash:   g.opts.Hasher.Sum(e.Envelope),
		Outcome:      truncate(e.Outcome, 64),
		DurationMS:   float64(e.Duration.Microseconds()) / 1000,
		TaskRef:      g.opts.Hasher.Sum([]byte(e.TaskRef)),
		ParentCallID: e.ParentCallID,
	}
	// The parameter of a task event is the task.
	rec.ParamsHash = rec.TaskRef
	if t, ok := g.reg.Lookup(e.Tool); ok {
		rec.CapabilityUsed = t.Capability
	}
	// Like a write tool's receipt, it is durable before the result is
	// visible.
	ref, err := g.opts.Audit.AppendSync(rec)
	if err != nil {
		g.logger.Error("audit receipt not written", "tool", rec.Tool, "call_id", rec.CallID, "task_event", e.Kind, "error", err.Error())
	}
	return receiptMeta(rec.CallID, ref)
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ptr[T any](v T) *T { return &v }

// MCPTool is the protocol description of t: schemas, title and all four
// annotation hints set explicitly.
func (t Tool) MCPTool() *mcp.Tool {
	return &mcp.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: envelope.OutputSchema(),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Title,
			ReadOnlyHint:    t.Hints.ReadOnly,
			DestructiveHint: ptr(t.Hints.Destructive),
			IdempotentHint:  t.Hints.Idempotent,
			OpenWorldHint:   ptr(t.Hints.OpenWorld),
		},
	}
}

// MCPHandler adapts t to the SDK: it validates arguments, runs the handler,
// recovers panics, and maps the outcome to the envelope.
func (t Tool) MCPHandler(logger *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := t.Invoke(ctx, req, logger)
		return Render(env), nil
	}
}

// Invoke runs the tool and returns its envelope (used by the adapter and by
// in-process callers such as the passport workflow and benchmarks).
func (t Tool) Invoke(ctx context.Context, req *mcp.CallToolRequest, logger *slog.Logger) (env envelope.Envelope) {
	defer func() {
		if r := recover(); r != nil {
			if logger != nil {
				logger.Error("tool panicked", "tool", t.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			env = envelope.Failure(apperr.Internal(t.Name, fmt.Errorf("unexpected failure")))
		}
	}()
	var args map[string]any
	if req != nil && req.Params != nil && len(req.Params.Arguments) > 0 {
		raw := req.Params.Arguments
		if s := strings.TrimSpace(string(raw)); s != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return envelope.Failure(apperr.Validation("arguments", "arguments must be a JSON object"))
			}
		}
	}
	args, err := validateArgs(t.InputSchema, args)
	if err != nil {
		return envelope.Failure(err)
	}
	call := &Call{Principal: caller.From(ctx), Args: args, Progress: progressFunc(req)}
	res, err := t.Handle(ctx, call)
	if err != nil {
		ae := apperr.As(err)
		if ae.Code == apperr.CodeInternal && logger != nil {
			logger.Error("tool failed", "tool", t.Name, "error", ae.Details["cause"])
		}
		return envelope.Failure(ae)
	}
	return envelope.Success(res.Data, res.Meta)
}

func progressFunc(req *mcp.CallToolRequest) func(ctx context.Context, progress, total float64, message string) {
	if req == nil || req.Params == nil || req.Session == nil {
		return func(context.Context, float64, float64, string) {}
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func(context.Context, float64, float64, string) {}
	}
	return func(ctx context.Context, progress, total float64, message string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: progress, Total: total, Message: message})
	}
}

// Render turns an envelope into a CallToolResult: the envelope as structured
// content and as JSON text, isError when not ok, plus the human-readable
// approval summary for approval handoffs.
func Render(env envelope.Envelope) *mcp.CallToolResult {
	raw, err := json.Marshal(env)
	if err != nil {
		env = envelope.Failure(apperr.Internal("encode result", err))
		raw, _ = json.Marshal(env)
	}
	res := &mcp.CallToolResult{
		StructuredContent: json.RawMessage(raw),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		IsError:           !env.OK,
	}
	if text := approvalText(env); text != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: text})
	}
	return res
}

// approvalText is the second text item of an approval handoff (spec §8.1).
func approvalText(env envelope.Envelope) string {
	if env.Error == nil || env.Error.Code != apperr.CodeApprovalRequired {
		return ""
	}
	approval, ok := env.Error.Details["approval"].(map[string]any)
	if !ok {
		// Domain code may store a struct; view it through its JSON form.
		raw, err := json.Marshal(env.Error.Details["approval"])
		if err != nil || json.Unmarshal(raw, &approval) != nil || approval == nil {
			return ""
		}
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	lines := []string{"Approval required before execution can continue.", "Kind: " + str(approval, "kind")}
	if id := str(approval, "challenge_id"); id != "" {
		lines = append(lines, "Challenge ID: "+id)
	}
	if id := str(approval, "pending_id"); id != "" {
		lines = append(lines, "Pending ID: "+id)
	}
	url := str(approval, "remote_attestation_url")
	if url == "" {
		if pa, ok := approval["pending_approval"].(map[string]any); ok {
			url = str(pa, "remote_attestation_url")
		}
	}
	if url != "" {
		lines = append(lines, fmt.Sprintf("Attestation URL: [%s](%s)", url, url))
	}
	lines = append(lines, "Next action: call `vaultclaw_approval_wait` with the provided handle.")
	return strings.Join(lines, "\n")
}

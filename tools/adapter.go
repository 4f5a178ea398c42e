package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPTool is the protocol description of t: schemas and all four annotation
// hints set explicitly. No title: clients show the name without one, and
// every agent pays for tools/list on every start (budget test in app).
//
// The input schema goes to the SDK already encoded: its HTTP handler encodes
// the called tool's input schema again on every request to look for header
// annotations, and encoding a *jsonschema.Schema is far dearer than copying
// bytes. The bytes are what tools/list sent before.
func (t Tool) MCPTool() *mcp.Tool {
	var in json.RawMessage
	if t.inputJSON != nil {
		in = t.inputJSON()
	} else {
		in = encodeInputSchema(t.Name, t.InputSchema)
	}
	return &mcp.Tool{
		Name:         t.Name,
		Description:  t.Description,
		InputSchema:  in,
		OutputSchema: envelope.OutputSchema(t.Output),
		Meta:         clientMeta(t.Name),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Hints.ReadOnly,
			DestructiveHint: new(t.Hints.Destructive),
			IdempotentHint:  t.Hints.Idempotent,
			OpenWorldHint:   new(t.Hints.OpenWorld),
		},
	}
}

// encodeInputSchema is the JSON of a tool's input schema.
func encodeInputSchema(name string, s *jsonschema.Schema) json.RawMessage {
	in, err := json.Marshal(s)
	if err != nil {
		// Define built the schema from a Go type; it always encodes.
		panic(fmt.Sprintf("tool %s: encode input schema: %v", name, err))
	}
	return in
}

// MCPHandler adapts t to the SDK: it validates and decodes arguments, runs
// the handler, recovers panics, maps the result to the envelope and
// records the call's Outcome. The SDK's typed AddTool validates with the
// same library, but answers a refused argument with a text error rather
// than the envelope naming the field (D1, D2), decodes without the bounds
// of decodeArguments, and drops unknown arguments without a word (D21).
func (t Tool) MCPHandler(logger *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env, appr := t.invoke(ctx, req, logger)
		return render(ctx, env, appr), nil
	}
}

// Invoke runs the tool and returns its envelope (for in-process callers
// such as tests and benchmarks).
func (t Tool) Invoke(ctx context.Context, req *mcp.CallToolRequest, logger *slog.Logger) envelope.Envelope {
	env, _ := t.invoke(ctx, req, logger)
	return env
}

// invoke returns the envelope and, for an approval handoff, its typed
// approval.
func (t Tool) invoke(ctx context.Context, req *mcp.CallToolRequest, logger *slog.Logger) (env envelope.Envelope, appr *approval.Approval) {
	defer func() {
		if r := recover(); r != nil {
			if logger != nil {
				logger.Error("tool panicked", "tool", t.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			env, appr = failure(apperr.Internal(t.Name, fmt.Errorf("unexpected failure"))), nil
		}
	}()
	if t.args == nil {
		return failure(apperr.Internal(t.Name, fmt.Errorf("tool is not defined"))), nil
	}
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	args, err := decodeArguments(raw)
	if err != nil {
		return failure(err), nil
	}
	warnings := unknownArguments(t.args.known, args)
	// The handler's own warnings (on its result or its error) follow those
	// about the arguments.
	defer func() { env.Meta.Warnings = append(warnings, env.Meta.Warnings...) }()
	prepared, err := t.args.prepare(args)
	if err != nil {
		return failure(err), nil
	}
	if e := refusal(ctx); e != nil {
		return failure(e), nil
	}
	d := t.deps
	if d == nil {
		if t.Needs != 0 {
			return failure(apperr.Internal(t.Name, fmt.Errorf("tool is not bound to its services (%s)", t.Needs))), nil
		}
		d = &Deps{}
	}
	call := &Call{Principal: caller.From(ctx), Progress: progressFunc(req)}
	res, err := t.handle(ctx, d, call, prepared)
	if err != nil {
		ae := apperr.As(err)
		if ae.Code == apperr.CodeInternal && logger != nil {
			logger.Error("tool failed", "tool", t.Name, "error", ae.Details["cause"])
		}
		return failure(ae), approval.ApprovalOf(err)
	}
	return envelope.Success(res.Data, res.Meta), nil
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

// Render turns an envelope into a CallToolResult: the envelope serialised
// once, as structured content and as JSON text, isError when not ok.
func Render(env envelope.Envelope) *mcp.CallToolResult {
	return render(context.Background(), env, nil)
}

// Fail renders the failure envelope of err and records the outcome in ctx,
// for calls refused before their tool runs (the gateway).
func Fail(ctx context.Context, err error) *mcp.CallToolResult {
	return render(ctx, failure(err), approval.ApprovalOf(err))
}

// failure is the envelope of err, its message naming the next step.
func failure(err error) envelope.Envelope {
	return envelope.Failure(withNextStep(apperr.As(err)))
}

// render is the one place an envelope becomes a CallToolResult: the
// envelope serialised once as structured content, and the text the model
// reads (envelope.Text, D22), isError when not ok.
func render(ctx context.Context, env envelope.Envelope, appr *approval.Approval) *mcp.CallToolResult {
	raw, err := json.Marshal(env)
	if err != nil {
		env, appr = envelope.Failure(apperr.Internal("encode result", err)), nil
		raw, _ = json.Marshal(env)
	}
	res := &mcp.CallToolResult{
		StructuredContent: json.RawMessage(raw),
		Content:           []mcp.Content{&mcp.TextContent{Text: envelope.Text(raw)}},
		IsError:           !env.OK,
	}
	record(ctx, &env, appr, raw)
	return res
}

package gateway

import (
	"context"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/tracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// unknownToolSpan names the span of a call to a name the server does not
// have: span names stay a bounded set whatever a client sends.
const unknownToolSpan = "_unknown"

// startCallSpan opens the server span of one tool call. Its parent is the
// caller's trace context: the call's own params._meta first (it travels
// with the message on every transport), then the HTTP request's
// traceparent header. Only names and identities are recorded, never the
// arguments.
func startCallSpan(ctx context.Context, tr trace.Tracer, req *mcp.CallToolRequest, name string, known bool, p caller.Principal) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = withCallerParent(ctx, req)
	}
	tool := unknownToolSpan
	if known {
		tool = name
	}
	return tr.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", tool),
		attribute.String("accords.caller", p.ID),
		attribute.String("accords.scope", p.Scope),
		attribute.String("accords.transport", p.Transport),
	))
}

func withCallerParent(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req.Params != nil {
		if tp, _ := req.Params.Meta[tracing.MetaTraceparent].(string); tp != "" {
			ts, _ := req.Params.Meta[tracing.MetaTracestate].(string)
			if pc := tracing.WithRemoteParent(ctx, tp, ts); trace.SpanContextFromContext(pc).IsValid() {
				return pc
			}
		}
	}
	// No usable parent in _meta (absent or malformed): the HTTP header.
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		return tracing.WithRemoteParent(ctx, ex.Header.Get("Traceparent"), ex.Header.Get("Tracestate"))
	}
	return ctx
}

// endCallSpan records the call's outcome (ok, an error code, or
// protocol_error) and its receipt id, then ends the span.
func endCallSpan(span trace.Span, rec audit.Receipt) {
	span.SetAttributes(attribute.String("accords.call_id", rec.CallID), attribute.String("accords.outcome", rec.Outcome))
	if rec.Outcome != audit.OutcomeOK {
		span.SetAttributes(attribute.String("error.type", rec.Outcome))
		span.SetStatus(codes.Error, rec.Outcome)
	}
	span.End()
}

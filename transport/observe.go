package transport

import (
	"context"
	"log/slog"
	"time"

	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/platform/reqlog"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ObserveOptions configure Observe.
type ObserveOptions struct {
	// Known reports whether a tool name is exposed (nil: every name is).
	Known func(name string) bool
	// Logger receives one line per tool call (nil: no log).
	Logger *slog.Logger
}

// Observe is a receiving middleware that times every tools/call, counts it
// in m by tool and outcome, and logs it with its request id. It reads the
// call's typed outcome, so it is independent of the gateway middleware and
// never parses a result; placed outside the gateway it also counts the
// calls the gateway refuses.
func Observe(m *metrics.Server, o ObserveOptions) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			id := reqlog.From(ctx)
			if id == "" {
				if ex := req.GetExtra(); ex != nil && ex.Header != nil && reqlog.Valid(ex.Header.Get(reqlog.Header)) {
					id = ex.Header.Get(reqlog.Header)
				} else {
					id = reqlog.NewID()
				}
				ctx = reqlog.With(ctx, id)
			}
			tool := metrics.UnknownTool
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				if o.Known == nil || o.Known(p.Name) {
					tool = p.Name
				}
			}
			ctx, out := tools.TrackOutcome(ctx)
			start := time.Now()
			res, err := next(ctx, method, req)
			d := time.Since(start)
			outcome, code := classify(res, err, out)
			m.ObserveToolCall(tool, outcome, code, d)
			if o.Logger != nil {
				p := caller.From(ctx)
				attrs := []any{"request_id", id, "tool", tool, "outcome", outcome, "duration_ms", float64(d.Microseconds()) / 1000,
					"caller", p.ID, "scope", p.Scope, "transport", p.Transport}
				if code != "" {
					attrs = append(attrs, "code", code)
				}
				if out.TraceID != "" {
					attrs = append(attrs, "trace_id", out.TraceID)
				}
				o.Logger.InfoContext(ctx, "tool call", attrs...)
			}
			return res, err
		}
	}
}

// classify is a call's metrics outcome: ok, error (an error envelope, with
// its code) or protocol_error (the SDK refused the call).
func classify(res mcp.Result, err error, o *tools.Outcome) (outcome, code string) {
	if err != nil {
		return metrics.OutcomeProtocolError, ""
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		return metrics.OutcomeProtocolError, ""
	}
	switch {
	case o.Recorded && o.OK, !o.Recorded && !r.IsError:
		return metrics.OutcomeOK, ""
	case o.Recorded && o.Code != "":
		return metrics.OutcomeError, o.Code
	}
	return metrics.OutcomeError, "UNKNOWN"
}

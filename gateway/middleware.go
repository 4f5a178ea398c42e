package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Middleware is the receiving middleware: capability, then rate limit, then
// the call, then the receipt. It sees every tool, including tools other
// teams add later: nothing per tool is needed to have them audited.
func (g *Gateway) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if ctr, ok := req.(*mcp.CallToolRequest); ok {
				return g.call(ctx, method, ctr, next)
			}
		case "tools/list":
			s := g.sessionOf(ctx, req)
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return g.filterList(ctx, s, res), nil
		}
		return next(ctx, method, req)
	}
}

// MaxToolNameInReceipt bounds attacker-chosen names of unknown tools.
const MaxToolNameInReceipt = 128

func (g *Gateway) call(ctx context.Context, method string, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	began := time.Now()
	p := caller.From(ctx)
	ctx, out := tools.TrackOutcome(ctx)
	var name string
	var args json.RawMessage
	if req.Params != nil {
		name, args = req.Params.Name, req.Params.Arguments
	}
	rec := audit.Receipt{
		CallID:     newCallID(),
		Timestamp:  g.opts.Now().UTC().Format(time.RFC3339Nano),
		Caller:     p.ID,
		Transport:  p.Transport,
		Scope:      p.Scope,
		Tool:       truncate(name, MaxToolNameInReceipt),
		ParamsHash: g.opts.Hasher.SumArgs(args),
	}
	var res mcp.Result
	var err error
	t, known := g.reg.Lookup(name)
	writes := known && t.Writes()
	if !known {
		// Unknown names stay protocol errors, but they share one bucket
		// per caller so they cannot flood the log.
		if refused := g.limit(p, g.callerFor(g.policy.Load(), p), unknownToolKey); refused != nil {
			res = tools.Fail(ctx, refused)
		} else {
			res, err = next(ctx, method, req)
		}
	} else {
		rec.CapabilityUsed = t.Capability
		s := g.sessionOf(ctx, req)
		if refused := g.admit(g.policy.Load(), p, t); refused != nil {
			res = tools.Fail(ctx, refused)
		} else if refused := s.notEnabled(t); refused != nil {
			res = tools.Fail(ctx, refused)
		} else {
			if s != nil && t.Toolset == tools.ToolsetDynamic {
				ctx = tools.WithToolsetControl(ctx, control{s: s, ctx: ctx})
			}
			res, err = next(ctx, method, req)
		}
	}
	rec.Outcome, rec.ResultHash = g.outcome(res, err, out)
	rec.DurationMS = float64(time.Since(began).Microseconds()) / 1000
	if ctr, ok := res.(*mcp.CallToolResult); ok && ctr != nil {
		if ctr.Meta == nil {
			ctr.Meta = mcp.Meta{}
		}
		ctr.Meta["accords/call_id"] = rec.CallID
	}
	// Write tools wait for the commit so their result is never returned
	// before their receipt is durable; read tools do not wait.
	var aerr error
	if writes {
		aerr = g.opts.Audit.AppendSync(rec)
	} else {
		aerr = g.opts.Audit.Append(rec)
	}
	if aerr != nil {
		g.logger.Error("audit receipt not written", "tool", rec.Tool, "call_id", rec.CallID, "error", aerr.Error())
	}
	return res, err
}

// admit runs the checks in order: capability (and read-only/toolsets), audit
// health, rate limit.
func (g *Gateway) admit(pol *policy.Policy, p caller.Principal, t tools.Tool) *apperr.Error {
	c := g.callerFor(pol, p)
	if e := g.refusal(c, t); e != nil {
		return e
	}
	if mode := g.opts.OnAuditFailure; mode != OnAuditFailureContinue {
		if ok, why := g.opts.Audit.Healthy(); !ok && (t.Writes() || mode == OnAuditFailureRefuseAll) {
			e := apperr.New(apperr.CodeInternal, "audit receipts cannot be written, so %s is refused until the audit log recovers", t.Name)
			e.Retryable = true
			return e.With("reason", "audit_unavailable").With("operation", "audit append").With("cause", why)
		}
	}
	return g.limit(p, c, t.Name)
}

// unknownToolKey is the rate-limit bucket of calls naming no known tool.
const unknownToolKey = "\x00unknown-tool"

func (g *Gateway) limit(p caller.Principal, c *policy.Caller, tool string) *apperr.Error {
	if c == nil {
		return nil
	}
	l := c.LimitFor(tool)
	if l.Unlimited() {
		return nil
	}
	ok, wait := g.limiter.Allow(limitKey(p, c, tool), l)
	if ok {
		return nil
	}
	ms := wait.Milliseconds()
	if wait%time.Millisecond != 0 {
		ms++
	}
	name := tool
	if tool == unknownToolKey {
		name = "unknown tools"
	}
	e := apperr.New(apperr.CodeRateLimited, "rate limit for %s exceeded (%g calls per minute, burst %d); retry in %d ms", name, l.PerMinute, l.Burst, ms)
	e.Retryable = true
	return e.With("retry_after_ms", ms).With("tool", name).With("calls_per_minute", l.PerMinute).With("burst", l.Burst)
}

// limitKey buckets authenticated callers by caller id and anonymous HTTP by
// tenant; never by MCP session id, which stateless HTTP leaves empty.
func limitKey(p caller.Principal, c *policy.Caller, tool string) string {
	switch {
	case p.Transport == caller.TransportStdio:
		return "stdio|" + tool
	case p.Authenticated:
		return "caller:" + c.ID + "|" + tool
	default:
		return "tenant:" + p.Scope + "|" + tool
	}
}

// outcome is "ok", the envelope's error code, or protocol_error, read from
// the call's typed outcome; the result digest covers the structured content
// the client received.
func (g *Gateway) outcome(res mcp.Result, err error, o *tools.Outcome) (string, string) {
	if err != nil {
		return audit.OutcomeProtocolError, g.opts.Hasher.Sum([]byte(err.Error()))
	}
	ctr, ok := res.(*mcp.CallToolResult)
	if !ok || ctr == nil {
		return audit.OutcomeProtocolError, g.opts.Hasher.Sum(nil)
	}
	if o.Recorded {
		digest := g.opts.Hasher.Sum(o.Envelope)
		switch {
		case o.OK:
			return audit.OutcomeOK, digest
		case o.Code != "":
			return truncate(o.Code, 64), digest
		}
		return "tool_error", digest
	}
	// A result no tool adapter rendered (another handler): digest what the
	// client receives; its outcome is all IsError says.
	var body []byte
	switch sc := ctr.StructuredContent.(type) {
	case json.RawMessage:
		body = sc
	case []byte:
		body = sc
	default:
		body, _ = json.Marshal(ctr)
	}
	if !ctr.IsError {
		return audit.OutcomeOK, g.opts.Hasher.Sum(body)
	}
	return "tool_error", g.opts.Hasher.Sum(body)
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/rules"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// Calls is the tools/call middleware: capability (with read-only,
// toolsets and the session's enabled toolsets), audit health, rate limit
// and the rules that read the call, then the call, then its receipt. It
// sees every tool, including tools added later: nothing per tool is
// needed to have them audited. It needs the principal (caller.From).
func (g *Gateway) Calls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ctr, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" {
			return g.call(ctx, method, ctr, next)
		}
		return next(ctx, method, req)
	}
}

// ListFilter is the tools/list middleware: the answer keeps the tools the
// caller may call and, in a dynamic session, those the session enabled.
func (g *Gateway) ListFilter(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" {
			return next(ctx, method, req)
		}
		s := g.sessionOf(ctx, req)
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		return g.filterList(ctx, s, res), nil
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
		Session:    p.Session,
		Scope:      p.Scope,
		Tool:       truncate(name, MaxToolNameInReceipt),
		ParamsHash: g.opts.Hasher.SumArgs(args),
	}
	var res mcp.Result
	var err error
	t, known := g.reg.Lookup(name)
	if tr := g.opts.Tracer; tr != nil {
		var span trace.Span
		ctx, span = startCallSpan(ctx, tr, req, name, known, p)
		defer func() {
			out.TraceID = span.SpanContext().TraceID().String()
			endCallSpan(span, rec)
		}()
	}
	writes := known && t.Writes()
	var decision rules.Decision
	// summary is the call id of the refusal summary this call is counted
	// into instead of a receipt of its own (refusals.go).
	var summary string
	if !known {
		// Unknown names stay protocol errors, but they share one bucket
		// per caller so they cannot flood the log.
		if refused := g.limit(p, g.callerFor(g.policy.Load(), p), unknownToolKey); refused != nil {
			res = tools.Fail(ctx, refused)
			summary = g.summarise(p, unknownToolsLabel, "", refused)
		} else {
			res, err = next(ctx, method, req)
		}
	} else {
		rec.CapabilityUsed = t.Capability
		s := g.sessionOf(ctx, req)
		pol := g.policy.Load()
		if refused := g.admit(ctx, pol, p, t); refused != nil {
			res = tools.Fail(ctx, refused)
			summary = g.summarise(p, t.Name, t.Capability, refused)
		} else if refused := s.notEnabled(t); refused != nil {
			res = tools.Fail(ctx, refused)
			summary = g.summarise(p, t.Name, t.Capability, refused)
		} else if refused := g.rulesBefore(ctx, pol.Rules, p, t, args, &decision); refused != nil {
			res = tools.Fail(ctx, refused)
		} else {
			if t.Renders && pol.Rules.Applies(t.Name, rules.PhaseRendered) {
				ctx = tools.WithRenderedCheck(ctx, g.renderedCheck(pol.Rules, p, t, args, &decision))
			}
			if s != nil && t.Toolset == tools.ToolsetDynamic {
				ctx = tools.WithToolsetControl(ctx, control{s: s, ctx: ctx})
			}
			ctx = g.control(ctx, req, s, t, rec.CallID)
			res, err = next(ctx, method, req)
		}
	}
	rec.RulesEvaluated, rec.RulesMatched = decision.Evaluated, decision.MatchedIDs()
	rec.Outcome, rec.ResultHash = g.outcome(res, err, out)
	rec.DurationMS = float64(time.Since(began).Microseconds()) / 1000
	g.describe(&rec, req, t, known, args, out)
	if summary != "" {
		if ctr, ok := res.(*mcp.CallToolResult); ok && ctr != nil {
			if ctr.Meta == nil {
				ctr.Meta = mcp.Meta{}
			}
			ctr.Meta["accords/call_id"] = summary
		}
		return res, err
	}
	// Write tools wait for the commit so their result is never returned
	// before their receipt is durable; read tools do not wait. On one
	// process's log both learn their receipt's reference at once; on a
	// shared log (replicas on etcd) a receipt is numbered only when
	// committed, so a read call's result carries its call id alone.
	var ref audit.Ref
	var aerr error
	if writes {
		ref, aerr = g.opts.Audit.AppendSync(rec)
	} else {
		ref, aerr = g.opts.Audit.Append(rec)
	}
	if aerr != nil {
		g.logger.Error("audit receipt not written", "tool", rec.Tool, "call_id", rec.CallID, "error", aerr.Error())
	}
	if ctr, ok := res.(*mcp.CallToolResult); ok && ctr != nil {
		if ctr.Meta == nil {
			ctr.Meta = mcp.Meta{}
		}
		ctr.Meta["accords/call_id"] = rec.CallID
		if ref.Seq != 0 {
			ctr.Meta[MetaReceipt] = ref
		}
	}
	return res, err
}

// MetaReceipt is the _meta key of a tool result's receipt reference
// ({seq, leaf_hash, log}): with `audit prove SEQ` it proves the call against
// a signed checkpoint.
const MetaReceipt = "accords/receipt"

// summarise counts a refusal made before the call reached its rules or
// tool into its window's summary, returning the summary's call id, or ""
// when the refusal gets a receipt of its own.
func (g *Gateway) summarise(p caller.Principal, tool, capability string, refused *apperr.Error) string {
	id, ok := g.refusals.count(refusalKeyOf(p, tool, refused.Code), capability)
	if !ok {
		return ""
	}
	return id
}

// ruleInput is what the rules see of a call.
func (g *Gateway) ruleInput(p caller.Principal, t tools.Tool, args json.RawMessage) rules.Input {
	return rules.Input{Tool: t.Name, Caller: p.ID, Tenant: p.Scope, Capability: t.Capability, Args: args, Now: g.opts.Now()}
}

// rulesBefore evaluates, before the tool runs (so a denial reaches
// nothing), the rules that read only the call; for a tool that builds no
// request to hand over, every rule (`rendered` is then empty).
func (g *Gateway) rulesBefore(_ context.Context, set *rules.Set, p caller.Principal, t tools.Tool, args json.RawMessage, d *rules.Decision) *apperr.Error {
	phase := rules.PhaseArgs
	if !t.Renders {
		phase = rules.PhaseAll
	}
	if !set.Applies(t.Name, phase) {
		return nil
	}
	dec := set.Evaluate(g.ruleInput(p, t, args), phase)
	d.Merge(dec)
	return violation(t, dec)
}

// renderedCheck evaluates the rules that read `rendered` when a plan or
// template path has built its request.
func (g *Gateway) renderedCheck(set *rules.Set, p caller.Principal, t tools.Tool, args json.RawMessage, d *rules.Decision) tools.RenderedCheck {
	return func(_ context.Context, rendered map[string]any) error {
		in := g.ruleInput(p, t, args)
		in.Rendered = rendered
		dec := set.Evaluate(in, rules.PhaseRendered)
		d.Merge(dec)
		if e := violation(t, dec); e != nil {
			return e
		}
		return nil
	}
}

func violation(t tools.Tool, d rules.Decision) *apperr.Error {
	if !d.Denied() {
		return nil
	}
	violated := make([]map[string]any, len(d.Matched))
	msgs := make([]string, len(d.Matched))
	for i, v := range d.Matched {
		violated[i] = map[string]any{"id": v.ID, "message": v.Message}
		msgs[i] = v.ID + ": " + v.Message
	}
	return apperr.New(apperr.CodePolicyViolation, "%s refused by the policy's rules (%s)", t.Name, strings.Join(msgs, "; ")).
		With("violated_rules", violated).With("tool", t.Name)
}

// admit runs the checks in order: capability (and read-only/toolsets), audit
// health, rate limit.
func (g *Gateway) admit(ctx context.Context, pol *policy.Policy, p caller.Principal, t tools.Tool) *apperr.Error {
	c := g.callerFor(pol, p)
	if e := g.refusalIn(ctx, c, t); e != nil {
		return e
	}
	// Only write tools ask: Integrity waits for the start-up verification,
	// which read tools need not.
	if t.Writes() {
		p, err := g.opts.Audit.Integrity()
		if e := chainBroken(p, err, t); e != nil {
			return e
		}
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

// chainBroken refuses t while the audit log has an unacknowledged
// verification failure, or (retryably) while its start-up verification
// waits for an unreachable store.
func chainBroken(p *audit.Problem, err error, t tools.Tool) *apperr.Error {
	if err != nil {
		return apperr.StoreUnavailable("the audit log's start-up verification", err).With("reason", "audit_unverified").With("tool", t.Name)
	}
	if p == nil {
		return nil
	}
	e := apperr.New(apperr.CodeInternal, "the audit log failed verification (%s at receipt %d: %s), so %s is refused until an operator checks it "+
		"(accords-mcp audit verify) and acknowledges it (accords-mcp audit acknowledge)", p.Kind, p.Seq, p.Message, t.Name)
	return e.With("reason", "audit_chain_broken").With("problem", map[string]any{"kind": p.Kind, "seq": p.Seq, "message": p.Message}).
		With("hint", fmt.Sprintf("run accords-mcp audit verify, then accords-mcp audit acknowledge --note %q", "why this is accepted"))
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
	if g.opts.Replicas != nil {
		// Replicas sharing an etcd store each hold their share.
		l = l.Share(g.opts.Replicas())
	}
	ok, wait := true, time.Duration(0)
	for _, key := range limitKeys(p, c, tool) {
		if ok, wait = g.limiter.Allow(key, l); !ok {
			break
		}
	}
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
	full := c.LimitFor(tool)
	e := apperr.New(apperr.CodeRateLimited, "rate limit for %s exceeded (%g calls per minute, burst %d); retry in %d ms", name, full.PerMinute, full.Burst, ms)
	e.Retryable = true
	return e.With("retry_after_ms", ms).With("tool", name).With("calls_per_minute", full.PerMinute).With("burst", full.Burst)
}

// limitKeys are the buckets a call takes a token from: authenticated
// callers by caller id; anonymous HTTP by client address and by tenant
// (a caller rotating tenant headers still drains its address's bucket);
// never by MCP session id, which stateless HTTP leaves empty.
func limitKeys(p caller.Principal, c *policy.Caller, tool string) []string {
	switch {
	case p.Transport == caller.TransportStdio:
		return []string{"stdio|" + tool}
	case p.Authenticated:
		return []string{"caller:" + c.ID + "|" + tool}
	case p.Addr != "":
		return []string{"addr:" + p.Addr + "|" + tool, "tenant:" + p.Scope + "|" + tool}
	default:
		return []string{"tenant:" + p.Scope + "|" + tool}
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

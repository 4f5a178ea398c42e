package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What receipts say about a call beyond its digests (tags, client, logged
// data), and the gateway's side of vaultclaw_whoami and
// vaultclaw_receipt_emit.

// Receipt tags every tool-call receipt carries after its toolset and
// effect.
var toolCallTags = []string{"mcp", "tool-call"}

// describe adds to rec the client, the tags and, when the policy's [audit]
// section asks for them, the call's arguments and result data, redacted
// (audit.Redact). The digests are left as they are.
func (g *Gateway) describe(rec *audit.Receipt, req mcp.Request, t tools.Tool, known bool, args json.RawMessage, out *tools.Outcome) {
	rec.Client = clientOf(req)
	if known {
		rec.Tags = []string{t.Toolset, t.Effect.String(), toolCallTags[0], toolCallTags[1]}
	} else {
		rec.Tags = slices.Clone(toolCallTags)
	}
	a := g.policy.Load().Audit
	if a.LogParams {
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		rec.Params = audit.Redact(args, t.Sensitive)
	}
	if a.LogResults && out.Recorded {
		rec.Result = audit.Redact(resultData(out), t.Sensitive)
	}
}

// resultData is the envelope's data on success, its error otherwise.
func resultData(out *tools.Outcome) json.RawMessage {
	var env struct {
		OK    bool            `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(out.Envelope, &env) != nil {
		return out.Envelope // Redact logs a marker for what is not JSON
	}
	if env.OK {
		return env.Data
	}
	return env.Error
}

// clientOf is "name/version" of the client the request's session
// initialized with, or "".
func clientOf(req mcp.Request) string {
	ci := clientInfo(req)
	if ci == nil {
		return ""
	}
	s := ci.Name
	if ci.Version != "" {
		s += "/" + ci.Version
	}
	return truncate(s, 128)
}

func clientInfo(req mcp.Request) *tools.ClientInfo {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.ClientInfo == nil || ip.ClientInfo.Name == "" {
		return nil
	}
	return &tools.ClientInfo{Name: truncate(ip.ClientInfo.Name, 64), Version: truncate(ip.ClientInfo.Version, 64)}
}

// callControl is the gateway's side of one call of a Tool.Gateway tool.
type callControl struct {
	g      *Gateway
	ctx    context.Context
	req    mcp.Request
	p      caller.Principal
	s      *liveSession
	callID string
}

// control returns ctx carrying the call's control when t acts through
// the gateway.
func (g *Gateway) control(ctx context.Context, req mcp.Request, s *liveSession, t tools.Tool, callID string) context.Context {
	if !t.Gateway {
		return ctx
	}
	return tools.WithGatewayControl(ctx, &callControl{g: g, ctx: ctx, req: req, p: caller.From(ctx), s: s, callID: callID})
}

// logIdentity is the part of the audit log whoami names (audit.Log and
// the composition root's reference to it).
type logIdentity interface {
	Origin() string
	KeyName() string
}

// Whoami implements tools.GatewayControl.
func (cc *callControl) Whoami() tools.Identity {
	g, p := cc.g, cc.p
	pol := g.policy.Load()
	c := g.callerFor(pol, p)
	id := tools.Identity{Caller: p.ID, Authenticated: p.Authenticated, Tenant: p.Scope, Transport: p.Transport,
		Session: p.Session, Client: clientInfo(cc.req), Capabilities: []string{}, Toolsets: []string{},
		Audit: tools.AuditOrigin{LogParams: pol.Audit.LogParams, LogResults: pol.Audit.LogResults}}
	if li, ok := g.opts.Audit.(logIdentity); ok {
		id.Audit.Origin, id.Audit.KeyName = li.Origin(), li.KeyName()
	}
	v, _ := viewFrom(cc.ctx)
	id.ReadOnly = g.opts.ReadOnly || v.ReadOnly || (c != nil && c.ReadOnly)
	if c == nil {
		return id
	}
	for _, cp := range g.known.Capabilities {
		if c.Allows(cp) || slices.Contains(tools.UngatedCapabilities, cp) {
			id.Capabilities = append(id.Capabilities, cp)
		}
	}
	sets := map[string]bool{}
	def := c.DefaultLimit()
	id.RateLimits.Default = limitInfo(def, nil)
	for _, t := range g.reg.Tools() {
		if g.refusalIn(cc.ctx, c, t) != nil || !cc.s.shows(t) {
			continue
		}
		sets[t.Toolset] = true
		l := c.LimitFor(t.Name)
		left := g.tokensLeft(p, c, t.Name, l)
		if l == def && left == nil {
			continue
		}
		if id.RateLimits.Tools == nil {
			id.RateLimits.Tools = map[string]tools.LimitInfo{}
		}
		id.RateLimits.Tools[t.Name] = limitInfo(l, left)
	}
	for _, ts := range tools.SelectableToolsets {
		if sets[ts] {
			id.Toolsets = append(id.Toolsets, ts)
		}
	}
	if sets[tools.ToolsetDynamic] {
		id.Toolsets = append(id.Toolsets, tools.ToolsetDynamic)
	}
	return id
}

// sentBody is the event's body as the client sent it (numbers as
// written), so its digest is the one the sender can compute; body is the
// tool's copy, used when the request's arguments do not hold one.
func (cc *callControl) sentBody(body json.RawMessage) json.RawMessage {
	ctr, ok := cc.req.(*mcp.CallToolRequest)
	if !ok || ctr.Params == nil {
		return body
	}
	var args struct {
		Body json.RawMessage `json:"body"`
	}
	if json.Unmarshal(ctr.Params.Arguments, &args) != nil || len(args.Body) == 0 {
		return body
	}
	return args.Body
}

func limitInfo(l ratelimit.Limit, left *float64) tools.LimitInfo {
	if l.Unlimited() {
		return tools.LimitInfo{Unlimited: true}
	}
	return tools.LimitInfo{CallsPerMinute: l.PerMinute, Burst: max(l.Burst, 1), TokensLeft: left}
}

// tokensLeft is the fewest tokens left in the live buckets a call of tool
// would take from, or nil when none is live (the whole burst is left).
func (g *Gateway) tokensLeft(p caller.Principal, c *policy.Caller, tool string, l ratelimit.Limit) *float64 {
	if l.Unlimited() {
		return nil
	}
	var left *float64
	for _, key := range limitKeys(p, c, tool) {
		if n, ok := g.limiter.Tokens(key); ok && (left == nil || n < *left) {
			v := math.Floor(max(n, 0)*100) / 100
			left = &v
		}
	}
	return left
}

// EmitReceipt implements tools.GatewayControl: an external-event receipt
// for the caller, tied to the emitting call, committed before it returns.
func (cc *callControl) EmitReceipt(ev tools.Event) (tools.Emitted, error) {
	g, p := cc.g, cc.p
	rec := audit.Receipt{
		Type:           audit.TypeExternal,
		CallID:         newCallID(),
		Timestamp:      g.opts.Now().UTC().Format(time.RFC3339Nano),
		Caller:         p.ID,
		Transport:      p.Transport,
		Session:        p.Session,
		Scope:          p.Scope,
		Tool:           tools.ReceiptEmitName,
		CapabilityUsed: tools.CapReceiptsEmit,
		Outcome:        audit.OutcomeOK,
		ParentCallID:   cc.callID,
		Client:         clientOf(cc.req),
		EventType:      ev.Type,
		Scroll:         ev.Scroll,
		Tags:           ev.Tags,
		BodyHash:       g.opts.Hasher.SumArgs(cc.sentBody(ev.Body)),
	}
	if g.policy.Load().Audit.LogParams {
		rec.Body = audit.Redact(ev.Body, nil)
	}
	ref, err := g.opts.Audit.AppendSync(rec)
	if err != nil {
		e := apperr.New(apperr.CodeInternal, "the event's receipt was not written: %v", err)
		e.Retryable = true
		return tools.Emitted{}, e.With("reason", "audit_unavailable").With("call_id", rec.CallID)
	}
	return tools.Emitted{Seq: ref.Seq, CallID: rec.CallID, LeafHash: ref.LeafHash, Log: ref.Origin}, nil
}

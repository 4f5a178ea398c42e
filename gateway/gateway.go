// Package gateway is the MCP glue of the policy layer: it resolves the
// caller of each request, filters what the caller may see, refuses calls
// outside its capabilities or rate limits, and writes one audit receipt for
// every tools/call. Domain logic lives in audit, policy and ratelimit; this
// package only adapts them to go-sdk middleware and HTTP.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What happens to calls while receipts cannot be written.
const (
	// OnAuditFailureRefuseWrites refuses write tools, lets read tools run
	// (the default: fail closed for anything that changes state).
	OnAuditFailureRefuseWrites = "refuse-writes"
	// OnAuditFailureRefuseAll refuses every tool.
	OnAuditFailureRefuseAll = "refuse-all"
	// OnAuditFailureContinue runs every tool and only logs the failure.
	OnAuditFailureContinue = "continue"
)

// Recorder is the audit log as the gateway uses it (audit.Log).
type Recorder interface {
	Append(audit.Receipt) error
	AppendSync(audit.Receipt) error
	Healthy() (bool, string)
}

// Options configure the gateway.
type Options struct {
	// Registry holds every tool the binary has.
	Registry *tools.Registry
	// Builder makes MCP servers; the gateway adds its principal resolver and
	// middleware in front of Builder.Middleware.
	Builder *transport.Builder
	// PolicyFile is ACCORDS_MCP_POLICY_FILE ("" = built-in default policy).
	PolicyFile string
	// ReadOnly removes every write tool on every transport.
	ReadOnly bool
	// Toolsets, when not empty, keeps only tools of these toolsets.
	Toolsets []string
	// Audit receives receipts; Hasher keys their digests. Both required.
	Audit  Recorder
	Hasher *audit.Hasher
	// OnAuditFailure is one of the OnAuditFailure constants (default
	// refuse-writes).
	OnAuditFailure string
	// Now is the clock of rate limits and receipt timestamps.
	Now    func() time.Time
	Logger *slog.Logger
}

// Gateway enforces policy and writes receipts. Safe for concurrent use.
type Gateway struct {
	opts    Options
	reg     *tools.Registry
	visible *tools.Registry // after read-only and toolsets
	policy  atomic.Pointer[policy.Policy]
	limiter *ratelimit.Limiter
	logger  *slog.Logger
	known   policy.Known
	builder transport.Builder

	reloadMu sync.Mutex
	// public is set once the HTTP bridge listens beyond loopback: a reload
	// may then never drop the last caller.
	public atomic.Bool

	servers sync.Map // policy.Caller.ViewKey() -> *mcp.Server
}

// KnownCapabilities are every capability tools may declare.
var KnownCapabilities = []string{
	tools.CapSessionAdmin, tools.CapVaultRead, tools.CapVaultExecute, tools.CapApprovalsView,
	tools.CapCatalogView, tools.CapCatalogWrite, tools.CapRemoteInstall, tools.CapAuditView,
}

// KnownToolsets are every toolset tools may declare.
var KnownToolsets = []string{
	tools.ToolsetSession, tools.ToolsetVault, tools.ToolsetApprovals, tools.ToolsetCatalog,
	tools.ToolsetRemote, tools.ToolsetRouting, tools.ToolsetAudit,
}

// New validates the options and loads the policy file.
func New(o Options) (*Gateway, error) {
	if o.Registry == nil || o.Audit == nil || o.Hasher == nil {
		return nil, errors.New("gateway: registry, audit recorder and hasher are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch o.OnAuditFailure {
	case "":
		o.OnAuditFailure = OnAuditFailureRefuseWrites
	case OnAuditFailureRefuseWrites, OnAuditFailureRefuseAll, OnAuditFailureContinue:
	default:
		return nil, fmt.Errorf("audit failure mode %q: use %s, %s or %s", o.OnAuditFailure,
			OnAuditFailureRefuseWrites, OnAuditFailureRefuseAll, OnAuditFailureContinue)
	}
	g := &Gateway{opts: o, reg: o.Registry, limiter: ratelimit.New(o.Now), logger: o.Logger}
	if o.Builder != nil {
		g.builder = *o.Builder
	}
	g.builder.Logger = o.Logger
	g.builder.Principal = g.Principal
	g.builder.Middleware = append([]mcp.Middleware{g.Middleware}, g.builder.Middleware...)

	capSet, tsSet := map[string]bool{}, map[string]bool{}
	for _, c := range KnownCapabilities {
		capSet[c] = true
	}
	for _, ts := range KnownToolsets {
		tsSet[ts] = true
	}
	for _, t := range o.Registry.Tools() {
		capSet[t.Capability] = true
		tsSet[t.Toolset] = true
		g.known.Tools = append(g.known.Tools, t.Name)
	}
	g.known.Capabilities = keys(capSet)
	wantSets := map[string]bool{}
	for _, ts := range o.Toolsets {
		ts = strings.TrimSpace(ts)
		if ts == "" {
			continue
		}
		if ts != "all" && !tsSet[ts] {
			return nil, fmt.Errorf("unknown toolset %q (known: %s, all)", ts, strings.Join(keys(tsSet), ", "))
		}
		wantSets[ts] = true
	}
	if wantSets["all"] {
		wantSets = map[string]bool{}
	}
	g.visible = o.Registry.Filter(func(t tools.Tool) bool {
		if o.ReadOnly && t.Writes() {
			return false
		}
		return len(wantSets) == 0 || wantSets[t.Toolset]
	})
	p := policy.Default()
	if o.PolicyFile != "" {
		var err error
		if p, err = policy.Load(o.PolicyFile, g.known); err != nil {
			return nil, err
		}
	}
	g.policy.Store(p)
	return g, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Policy is the policy in force.
func (g *Gateway) Policy() *policy.Policy { return g.policy.Load() }

// Reload re-reads the policy file (SIGHUP). On any error the previous policy
// stays in force.
func (g *Gateway) Reload() error {
	if g.opts.PolicyFile == "" {
		return errors.New("no policy file configured (ACCORDS_MCP_POLICY_FILE)")
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	p, err := policy.Load(g.opts.PolicyFile, g.known)
	if err != nil {
		return err
	}
	if g.public.Load() && !p.HasCallers() {
		return errors.New("policy reload refused: the HTTP bridge listens on a non-loopback address and the new policy names no callers")
	}
	g.policy.Store(p)
	g.logger.Info("policy reloaded", "file", g.opts.PolicyFile, "callers", len(p.CallerIDs()))
	return nil
}

// CheckListen refuses a non-loopback HTTP address unless the policy names
// callers (bearer authentication is then mandatory).
func (g *Gateway) CheckListen(addr string) error {
	if isLoopback(addr) {
		return nil
	}
	if !g.policy.Load().HasCallers() {
		return fmt.Errorf("refusing to serve HTTP on %s: a non-loopback address requires bearer authentication; "+
			"list callers with token digests in a policy file (ACCORDS_MCP_POLICY_FILE, see docs/gateway.md) "+
			"or listen on 127.0.0.1", addr)
	}
	g.public.Store(true)
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Visible is the registry after read-only and toolsets.
func (g *Gateway) Visible() *tools.Registry { return g.visible }

// callerFor maps a principal to its policy entry; nil means the principal
// no longer exists in the policy (for example removed by a reload).
func (g *Gateway) callerFor(pol *policy.Policy, p caller.Principal) *policy.Caller {
	switch {
	case p.Transport == caller.TransportStdio:
		return pol.Stdio
	case !p.Authenticated:
		if pol.HasCallers() {
			return nil
		}
		return pol.Anonymous
	}
	c, ok := pol.Lookup(p.ID)
	if !ok || c.ID == policy.LocalID || c.ID == policy.AnonymousID {
		return nil
	}
	return c
}

// refusal explains why c may not call t, or returns nil.
func (g *Gateway) refusal(c *policy.Caller, t tools.Tool) *apperr.Error {
	deny := func(reason, format string, args ...any) *apperr.Error {
		return apperr.New(apperr.CodePermissionDenied, format, args...).
			With("tool", t.Name).With("capability", t.Capability).With("reason", reason)
	}
	if _, ok := g.visible.Lookup(t.Name); !ok {
		if g.opts.ReadOnly && t.Writes() {
			return deny("read_only", "tool %s changes state and the server runs in read-only mode", t.Name)
		}
		return deny("toolset_disabled", "tool %s belongs to toolset %s, which this server does not enable", t.Name, t.Toolset)
	}
	if c == nil {
		return deny("unknown_caller", "caller is not permitted by the current policy")
	}
	if c.ReadOnly && t.Writes() {
		return deny("caller_read_only", "tool %s changes state and caller %s is read-only", t.Name, c.ID)
	}
	if !c.Allows(t.Capability) {
		return deny("missing_capability", "caller %s lacks capability %s required by %s", c.ID, t.Capability, t.Name)
	}
	return nil
}

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
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return g.filterList(ctx, res), nil
		}
		return next(ctx, method, req)
	}
}

func (g *Gateway) filterList(ctx context.Context, res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		return res
	}
	c := g.callerFor(g.policy.Load(), caller.From(ctx))
	kept := make([]*mcp.Tool, 0, len(lr.Tools))
	for _, mt := range lr.Tools {
		if t, ok := g.reg.Lookup(mt.Name); ok && g.refusal(c, t) == nil {
			kept = append(kept, mt)
		}
	}
	out := *lr
	out.Tools = kept
	return &out
}

// MaxToolNameInReceipt bounds attacker-chosen names of unknown tools.
const MaxToolNameInReceipt = 128

func (g *Gateway) call(ctx context.Context, method string, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	began := time.Now()
	p := caller.From(ctx)
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
			res = tools.Render(envelope.Failure(refused))
		} else {
			res, err = next(ctx, method, req)
		}
	} else {
		rec.CapabilityUsed = t.Capability
		if refused := g.admit(g.policy.Load(), p, t); refused != nil {
			res = tools.Render(envelope.Failure(refused))
		} else {
			res, err = next(ctx, method, req)
		}
	}
	rec.Outcome, rec.ResultHash = g.outcome(res, err)
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

// outcome is "ok", the envelope's error code, or protocol_error; the result
// digest covers the structured content the client received.
func (g *Gateway) outcome(res mcp.Result, err error) (string, string) {
	if err != nil {
		return audit.OutcomeProtocolError, g.opts.Hasher.Sum([]byte(err.Error()))
	}
	ctr, ok := res.(*mcp.CallToolResult)
	if !ok || ctr == nil {
		return audit.OutcomeProtocolError, g.opts.Hasher.Sum(nil)
	}
	var body []byte
	switch sc := ctr.StructuredContent.(type) {
	case json.RawMessage:
		body = sc
	case []byte:
		body = sc
	default:
		body, _ = json.Marshal(ctr)
	}
	digest := g.opts.Hasher.Sum(body)
	if !ctr.IsError {
		return audit.OutcomeOK, digest
	}
	var probe struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &probe) == nil && probe.Error != nil && probe.Error.Code != "" {
		return truncate(probe.Error.Code, 64), digest
	}
	return "tool_error", digest
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

// Principal resolves the caller of one MCP request: stdio is the local
// caller; HTTP carries the caller authenticated by Wrap (its tenant fixed by
// the policy) or is anonymous, scoped by its tenant header.
func (g *Gateway) Principal(_ context.Context, extra *mcp.RequestExtra) caller.Principal {
	pol := g.policy.Load()
	if extra == nil || extra.Header == nil {
		p := caller.Local()
		if pol.Stdio.Tenant != "" {
			p.Scope = pol.Stdio.Tenant
		}
		return p
	}
	if ti := extra.TokenInfo; ti != nil && ti.Extra != nil {
		if tenant, ok := ti.Extra[tokenInfoTenant].(string); ok && ti.UserID != "" {
			return caller.Principal{ID: ti.UserID, Scope: tenant, Transport: caller.TransportHTTP, Authenticated: true}
		}
	}
	return anonymousPrincipal(pol, extra.Header)
}

func anonymousPrincipal(pol *policy.Policy, h http.Header) caller.Principal {
	scope := pol.Anonymous.Tenant
	if scope == "" {
		scope = transport.TenantFromHeader(h)
	}
	if scope == "" {
		scope = caller.DefaultScope
	}
	return caller.Principal{ID: policy.AnonymousID, Scope: scope, Transport: caller.TransportHTTP}
}

// StdioServer is the server for the stdio transport: read-only and toolsets
// applied; capabilities are applied per call and per tools/list, so a policy
// reload takes effect without restarting the session.
func (g *Gateway) StdioServer() *mcp.Server {
	return g.builder.Build(g.visible)
}

// serverFor returns the cached server exposing exactly what c may call.
// Servers are shared by callers with equal rights, built once, never per
// request.
func (g *Gateway) serverFor(c *policy.Caller) *mcp.Server {
	key := "\x00none"
	if c != nil {
		key = c.ViewKey()
	}
	if s, ok := g.servers.Load(key); ok {
		return s.(*mcp.Server)
	}
	reg := g.visible.Filter(func(t tools.Tool) bool { return g.refusal(c, t) == nil })
	s, _ := g.servers.LoadOrStore(key, g.builder.Build(reg))
	return s.(*mcp.Server)
}

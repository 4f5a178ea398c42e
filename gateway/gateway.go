// Package gateway is the MCP glue of the policy layer: it resolves the
// caller of each request, filters what the caller may see, refuses calls
// outside its capabilities or rate limits, and writes one audit receipt for
// every tools/call. Domain logic lives in audit, policy, rules and
// ratelimit (and platform/caller); this package adapts them to go-sdk
// middleware and HTTP. It does not build or serve servers: the composition
// root places its middleware in the transport's list and gives it the
// transport's server builder (Servers).
//
// Files: gateway.go (options, policy loading and reload), visibility.go
// (what a caller may see and call), middleware.go (admission and receipts),
// tasks.go (tasks/* limits and task receipts), refusals.go (summaries of
// repeated refusals), servers.go (the per-caller server cache and principal
// resolution), http.go (bearer authentication).
package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
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
	Append(audit.Receipt) (audit.Ref, error)
	AppendSync(audit.Receipt) (audit.Ref, error)
	Healthy() (bool, string)
	// Integrity is the unacknowledged verification failure, if any.
	Integrity() (*audit.Problem, error)
}

// Servers make the MCP servers the gateway hands out (transport.Builder);
// their middleware includes the gateway's (Principal, ListFilter,
// MethodLimits, Calls).
type Servers interface {
	// Build returns a server for stateless requests exposing reg.
	Build(reg *tools.Registry) *mcp.Server
	// BuildSession returns a server for one lasting session exposing reg
	// and advertising list changes; a dynamic one starts with the core
	// tools.
	BuildSession(reg *tools.Registry, dynamic bool) *mcp.Server
	// AnnounceToolsChanged tells s's sessions their tool list changed.
	AnnounceToolsChanged(s *mcp.Server, reg *tools.Registry)
}

// Options configure the gateway.
type Options struct {
	// Registry holds every tool the binary has.
	Registry *tools.Registry
	// Servers builds the servers StdioServer, ClientServer and GetServer
	// return (needed only to serve).
	Servers Servers
	// PolicyFile is ACCORDS_MCP_POLICY_FILE ("" = built-in default policy).
	PolicyFile string
	// ReadOnly removes every write tool on every transport.
	ReadOnly bool
	// Toolsets, when not empty, keeps only tools of these toolsets.
	Toolsets []string
	// Listed, when not empty, is what a session that is not dynamic lists
	// while neither Toolsets nor the client's view selects toolsets (D23:
	// the agent's tools, tools.Agent); every other tool stays callable.
	Listed []string
	// DynamicToolsets starts every stdio session with tools.Core and lets
	// each enable toolsets (vaultclaw_toolset_enable); Toolsets stays the
	// upper bound. An attached client's View can ask for it alone.
	DynamicToolsets bool
	// Audit receives receipts; Hasher keys their digests. Both required.
	Audit  Recorder
	Hasher *audit.Hasher
	// OnAuditFailure is one of the OnAuditFailure constants (default
	// refuse-writes).
	OnAuditFailure string
	// Now is the clock of rate limits and receipt timestamps.
	Now    func() time.Time
	Logger *slog.Logger
	// MaxAnonymousTenants bounds the tenants anonymous HTTP callers can
	// use (DefaultMaxAnonymousTenants when <= 0); StoredTenants lists the
	// tenants that already hold data, which count towards it.
	MaxAnonymousTenants int
	StoredTenants       func() ([]string, error)
	// Replicas is the number of live replicas enforcing rate limits
	// together (store.Fleet.Live); nil means this process alone.
	Replicas func() int
	// Tracer, when set, opens a span per tool call (platform/tracing);
	// nil is tracing off.
	Tracer trace.Tracer
	// RefusalWindow and RefusalsEach shape the refusal summaries
	// (refusals.go): per caller, session, tenant, tool and refusal code,
	// the first RefusalsEach refusals of each window get receipts of their
	// own, the rest one summary receipt. Zero values take
	// DefaultRefusalWindow and DefaultRefusalsEach; a negative window
	// gives every refusal a receipt of its own.
	RefusalWindow time.Duration
	RefusalsEach  int
}

// Gateway enforces policy (capabilities, rate limits, pre-execution rules)
// and writes receipts. Safe for concurrent use.
type Gateway struct {
	opts    Options
	reg     *tools.Registry
	visible *tools.Registry // after read-only and toolsets
	policy  atomic.Pointer[policy.Policy]
	limiter *ratelimit.Limiter
	logger  *slog.Logger
	known   policy.Known

	reloadMu sync.Mutex
	// public is set once the HTTP bridge listens beyond loopback: a reload
	// may then never drop the last caller.
	public atomic.Bool

	servers sync.Map // policy.Caller.ViewKey() -> *mcp.Server
	tenants *tenantGate
	// sessions are the live sessions of stdio servers (dynamic.go).
	sessions sync.Map // *mcp.ServerSession -> *liveSession
	// lists holds encoded tools/list answers (listcache.go).
	lists listCache
	// refusals summarises repeated refusals (refusals.go).
	refusals *refusals
}

// KnownCapabilities are every capability tools may declare.
var KnownCapabilities = []string{
	tools.CapSessionAdmin, tools.CapVaultRead, tools.CapVaultExecute, tools.CapApprovalsView,
	tools.CapCatalogView, tools.CapCatalogWrite, tools.CapRemoteInstall, tools.CapAuditView,
	tools.CapToolDiscovery, tools.CapIdentity, tools.CapReceiptsEmit,
}

// KnownToolsets are every toolset tools may declare.
var KnownToolsets = []string{
	tools.ToolsetSession, tools.ToolsetVault, tools.ToolsetApprovals, tools.ToolsetCatalog,
	tools.ToolsetRemote, tools.ToolsetRouting, tools.ToolsetAudit,
}

// KnownNames are the tool and capability names a policy file may use for
// the tools this binary has (for policy check and policy test, which run
// without a server).
func KnownNames() policy.Known {
	caps := map[string]bool{}
	for _, c := range KnownCapabilities {
		caps[c] = true
	}
	k := policy.Known{Shared: tools.SharedCapabilities, Elevated: tools.ElevatedCapabilities}
	for _, t := range tools.Definitions() {
		caps[t.Capability] = true
		k.Tools = append(k.Tools, t.Name)
		if t.Effect == tools.Executes {
			k.Executing = append(k.Executing, t.Name)
		}
	}
	k.Capabilities = slices.Sorted(maps.Keys(caps))
	return k
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
	g := &Gateway{opts: o, reg: o.Registry, limiter: ratelimit.New(o.Now), logger: o.Logger,
		tenants: newTenantGate(o.MaxAnonymousTenants, o.StoredTenants, o.Logger)}
	g.refusals = newRefusals(o.RefusalWindow, o.RefusalsEach, o.Now, func(rec audit.Receipt) {
		if _, err := o.Audit.Append(rec); err != nil {
			g.logger.Error("audit refusal summary not written", "tool", rec.Tool, "call_id", rec.CallID, "count", rec.Count, "error", err.Error())
		}
	})
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
		if t.Effect == tools.Executes {
			g.known.Executing = append(g.known.Executing, t.Name)
		}
	}
	// The discovery tools come with --dynamic-toolsets, not --toolsets.
	delete(tsSet, tools.ToolsetDynamic)
	g.known.Capabilities = slices.Sorted(maps.Keys(capSet))
	g.known.Shared = tools.SharedCapabilities
	g.known.Elevated = tools.ElevatedCapabilities
	wantSets := map[string]bool{}
	for _, ts := range o.Toolsets {
		ts = strings.TrimSpace(ts)
		if ts == "" {
			continue
		}
		if ts != "all" && !tsSet[ts] {
			return nil, fmt.Errorf("unknown toolset %q (known: %s, all)", ts, strings.Join(slices.Sorted(maps.Keys(tsSet)), ", "))
		}
		wantSets[ts] = true
	}
	if wantSets["all"] {
		wantSets = map[string]bool{}
	}
	g.visible = o.Registry.Filter(func(t tools.Tool) bool {
		if t.Toolset == tools.ToolsetDynamic {
			// Listed and callable only in dynamic sessions (liveSession.shows),
			// which any attached client may ask for.
			return true
		}
		if o.ReadOnly && t.Writes() {
			return false
		}
		return len(wantSets) == 0 || wantSets[t.Toolset]
	})
	p := policy.Default(g.known)
	if o.PolicyFile != "" {
		var err error
		if p, err = policy.Load(o.PolicyFile, g.known); err != nil {
			return nil, err
		}
	}
	g.policy.Store(p)
	return g, nil
}

// FlushRefusals writes the pending refusal summaries now.
func (g *Gateway) FlushRefusals() { g.refusals.Flush() }

// Close writes the pending refusal summaries and stops their writer; call
// it before closing the audit log. Later refusals get receipts of their
// own.
func (g *Gateway) Close() { g.refusals.close() }

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
	old := g.policy.Swap(p)
	g.announceReload(old, p)
	g.logger.Info("policy reloaded", "file", g.opts.PolicyFile, "callers", len(p.CallerIDs()), "rules", len(p.Rules.Rules()))
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

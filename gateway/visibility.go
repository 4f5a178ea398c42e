package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a caller may see and call: the server-wide read-only and toolsets
// settings, then the caller's policy entry.

// Visible is the registry after read-only and toolsets: the most a
// session lists, the discovery tools only when every session is dynamic
// (g.visible has them always, for the clients that ask for dynamic mode).
func (g *Gateway) Visible() *tools.Registry {
	if g.opts.DynamicToolsets {
		return g.visible
	}
	return g.visible.Filter(func(t tools.Tool) bool { return t.Toolset != tools.ToolsetDynamic })
}

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
	return g.refusalIn(context.Background(), c, t)
}

// refusalIn is refusal with the view of the client in ctx applied after
// the server-wide settings.
func (g *Gateway) refusalIn(ctx context.Context, c *policy.Caller, t tools.Tool) *apperr.Error {
	deny := func(reason, format string, args ...any) *apperr.Error {
		return apperr.New(apperr.CodePermissionDenied, format, args...).
			With("tool", t.Name).With("capability", t.Capability).With("reason", reason)
	}
	if reason, format := g.viewRefusal(ctx, t); reason == "read_only" {
		return deny(reason, format, t.Name)
	} else if reason != "" {
		if _, ok := g.visible.Lookup(t.Name); ok {
			return deny(reason, format, t.Name, t.Toolset)
		}
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
	if !slices.Contains(tools.UngatedCapabilities, t.Capability) && !c.Allows(t.Capability) {
		if c.Withholds(t.Capability) && slices.Contains(tools.ElevatedCapabilities, t.Capability) {
			return deny("missing_capability", "caller %s lacks capability %s required by %s: \"*\" grants it to the local stdio caller only; "+
				"an operator grants it by naming it in the caller's capabilities", c.ID, t.Capability, t.Name).With("elevated", true)
		}
		if c.Withholds(t.Capability) {
			return deny("missing_capability", "caller %s lacks capability %s required by %s: it changes the catalog every tenant shares, "+
				"so \"*\" does not grant it to an HTTP caller; an operator grants it by naming it in the caller's capabilities", c.ID, t.Capability, t.Name).
				With("shared", true)
		}
		return deny("missing_capability", "caller %s lacks capability %s required by %s", c.ID, t.Capability, t.Name)
	}
	return nil
}

// filterList keeps the tools the caller may call and, in dynamic mode, the
// session has enabled.
func (g *Gateway) filterList(ctx context.Context, s *liveSession, res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		return res
	}
	c := g.callerFor(g.policy.Load(), caller.From(ctx))
	kept := make([]*mcp.Tool, 0, len(lr.Tools))
	for _, mt := range lr.Tools {
		if t, ok := g.reg.Lookup(mt.Name); ok && g.refusalIn(ctx, c, t) == nil && s.shows(t) && g.listed(ctx, s, t) {
			kept = append(kept, mt)
		}
	}
	out := *lr
	out.Tools = kept
	raw, err := g.lists.encodedTools(kept)
	if err != nil {
		return &out
	}
	return &encodedList{ListToolsResult: &out, tools: raw}
}

// listed reports whether tools/list names t (D23): without a toolset
// selection (--toolsets, ACCORDS_MCP_TOOLSETS, or the client's own) a
// session that is not dynamic lists Options.Listed, when set; "all" or any
// selection lists every tool it selects. Listing is all this decides: a
// tool left off the default list stays callable by name.
func (g *Gateway) listed(ctx context.Context, s *liveSession, t tools.Tool) bool {
	if len(g.opts.Listed) == 0 || (s != nil && s.dynamic) {
		return true
	}
	if selects(g.opts.Toolsets) {
		return true
	}
	if v, ok := viewFrom(ctx); ok && selects(v.Toolsets) {
		return true
	}
	return t.Toolset == tools.ToolsetDynamic || slices.Contains(g.opts.Listed, t.Name)
}

// selects reports whether a toolsets setting names any toolset ("all"
// included).
func selects(toolsets []string) bool {
	for _, ts := range toolsets {
		if strings.TrimSpace(ts) != "" {
			return true
		}
	}
	return false
}

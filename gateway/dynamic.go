package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sessions that can be told their tool list changed: the stdio server's
// (one per process, or one per attached client of a daemon). Each session
// has its own view: with dynamic toolsets, the toolsets it enabled; always,
// the caller it speaks for, so a policy reload that changes what that caller
// may call tells the session (notifications/tools/list_changed). The
// stateless HTTP bridge has no session to tell or to grow: each request
// stands alone and sees every tool its caller may call.

// liveSession is one live MCP session of a stdio server.
type liveSession struct {
	g   *Gateway
	srv *mcp.Server
	// dynamic: the session started with the core tools (its server was
	// built for a dynamic client).
	dynamic bool
	// view is the attached client's own view (none for a standalone
	// session): it bounds what the session lists and may enable.
	view View

	mu        sync.Mutex
	principal caller.Principal
	enabled   map[string]bool // toolsets enabled in dynamic mode
	single    map[string]bool // tools enabled one by one in dynamic mode
}

// boundServer is what a stdio server tells the gateway about itself.
type boundServer struct {
	srv     *mcp.Server
	dynamic bool
}

type serverKey struct{}

// bindServer is the outermost middleware of a stdio server: it tells the
// gateway which server a request's session belongs to (go-sdk does not)
// and whether its sessions start dynamic.
func bindServer(b *boundServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(context.WithValue(ctx, serverKey{}, b), method, req)
		}
	}
}

// viewCtx is a context carrying only the session's view, for checks made
// outside one of its requests (a policy reload).
func (s *liveSession) viewCtx() context.Context {
	return WithView(context.Background(), s.view)
}

// sessionOf returns the view of the request's session, creating it on the
// session's first request; nil for requests of unbound servers (HTTP).
func (g *Gateway) sessionOf(ctx context.Context, req mcp.Request) *liveSession {
	b, _ := ctx.Value(serverKey{}).(*boundServer)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if b == nil || ss == nil {
		return nil
	}
	if v, ok := g.sessions.Load(ss); ok {
		s := v.(*liveSession)
		s.mu.Lock()
		s.principal = caller.From(ctx)
		s.mu.Unlock()
		return s
	}
	s := &liveSession{g: g, srv: b.srv, dynamic: b.dynamic, principal: caller.From(ctx), enabled: map[string]bool{}, single: map[string]bool{}}
	if v, ok := viewFrom(ctx); ok {
		s.view = v
	}
	if v, loaded := g.sessions.LoadOrStore(ss, s); loaded {
		return v.(*liveSession)
	}
	go func() {
		_ = ss.Wait()
		g.sessions.Delete(ss)
	}()
	return s
}

// shows reports whether the session lists t: outside dynamic mode every
// tool its caller may call; in dynamic mode the core tools and the
// toolsets it enabled. s is nil for stateless HTTP requests.
func (s *liveSession) shows(t tools.Tool) bool {
	if t.Toolset == tools.ToolsetDynamic {
		// Nothing to discover without a session to grow.
		return s != nil && s.dynamic
	}
	if s == nil || !s.dynamic || slices.Contains(tools.Core, t.Name) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enabled[t.Toolset] || s.single[t.Name]
}

// listed are the names the session's tools/list holds under pol.
func (s *liveSession) listed(ctx context.Context, pol *policy.Policy) []string {
	s.mu.Lock()
	p := s.principal
	s.mu.Unlock()
	c := s.g.callerFor(pol, p)
	var out []string
	for _, t := range s.g.visible.Tools() {
		if s.g.refusalIn(ctx, c, t) == nil && s.shows(t) && s.g.listed(ctx, s, t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// notEnabled refuses a dynamic session's call of a tool it has not
// enabled, saying which toolset to enable.
func (s *liveSession) notEnabled(t tools.Tool) *apperr.Error {
	if t.Toolset == tools.ToolsetDynamic && (s == nil || !s.dynamic) {
		return apperr.New(apperr.CodePermissionDenied, "dynamic toolsets are off for this session; every tool it may call is listed already").
			With("tool", t.Name).With("reason", "dynamic_toolsets_off")
	}
	if s == nil || s.shows(t) {
		return nil
	}
	return apperr.New(apperr.CodePermissionDenied,
		"tool %s is in toolset %s, which this session has not enabled; call vaultclaw_toolset_enable with toolset %q first, or with tools [%q] for this tool alone",
		t.Name, t.Toolset, t.Toolset, t.Name).
		With("tool", t.Name).With("toolset", t.Toolset).With("reason", "toolset_not_enabled").
		With("next_action", map[string]any{"tool": "vaultclaw_toolset_enable", "arguments": map[string]any{"toolset": t.Toolset}})
}

// control is the session's tools.ToolsetControl for one call.
type control struct {
	s   *liveSession
	ctx context.Context
}

// Toolsets implements tools.ToolsetControl.
func (c control) Toolsets() []tools.ToolsetState {
	var out []tools.ToolsetState
	for _, name := range c.s.offeredToolsets() {
		out = append(out, c.state(name))
	}
	return out
}

// Always implements tools.ToolsetControl: the core tools this caller may
// call on this server.
func (c control) Always() []string {
	g := c.s.g
	callr := g.callerFor(g.policy.Load(), caller.From(c.ctx))
	out := []string{}
	for _, name := range tools.Core {
		if t, ok := g.visible.Lookup(name); ok && g.refusalIn(c.ctx, callr, t) == nil {
			out = append(out, name)
		}
	}
	return out
}

func (c control) state(name string) tools.ToolsetState {
	g := c.s.g
	callr := g.callerFor(g.policy.Load(), caller.From(c.ctx))
	st := tools.ToolsetState{Name: name, Description: tools.ToolsetDescriptions[name], Tools: []string{}}
	c.s.mu.Lock()
	st.Enabled = c.s.enabled[name]
	c.s.mu.Unlock()
	for _, t := range g.visible.Tools() {
		if t.Toolset == name && g.refusalIn(c.ctx, callr, t) == nil {
			st.Tools = append(st.Tools, t.Name)
		}
	}
	return st
}

// Enable implements tools.ToolsetControl. Names are checked before
// anything changes: an unoffered toolset or a tool the inventory does not
// have enables nothing. A named tool the caller may not call (its
// capabilities, read-only mode, the server's or the view's toolsets) is
// recorded like a toolset is, so it stays hidden until the caller may
// call it, and the answer names it with the reason.
func (c control) Enable(toolset string, names []string) (tools.Enabled, error) {
	g := c.s.g
	if toolset != "" {
		if offered := c.s.offeredToolsets(); !slices.Contains(offered, toolset) {
			return tools.Enabled{}, apperr.Validation("toolset", "toolset %s is not offered by this server; offered: %s", toolset, strings.Join(offered, ", ")).
				With("allowed", offered)
		}
	}
	for i, n := range names {
		if _, ok := g.reg.Lookup(n); !ok {
			return tools.Enabled{}, apperr.Validation(fmt.Sprintf("tools[%d]", i), "tool %s does not exist; vaultclaw_toolsets_list names the tools of each toolset", n)
		}
	}
	pol := g.policy.Load()
	callr := g.callerFor(pol, caller.From(c.ctx))
	before := c.s.listed(c.ctx, pol)
	c.s.mu.Lock()
	if toolset != "" {
		c.s.enabled[toolset] = true
	}
	for _, n := range names {
		c.s.single[n] = true
	}
	c.s.mu.Unlock()
	en := tools.Enabled{Toolset: toolset, Tools: []string{}, Added: []string{}}
	if toolset != "" {
		en.Tools = append(en.Tools, c.state(toolset).Tools...)
	}
	for _, n := range names {
		t, _ := g.reg.Lookup(n)
		if refusal := g.refusalIn(c.ctx, callr, t); refusal != nil {
			reason, _ := refusal.Details["reason"].(string)
			en.Hidden = append(en.Hidden, tools.HiddenTool{Tool: n, Reason: reason})
		} else if !slices.Contains(en.Tools, n) {
			en.Tools = append(en.Tools, n)
		}
	}
	for _, n := range c.s.listed(c.ctx, pol) {
		if !slices.Contains(before, n) {
			en.Added = append(en.Added, n)
		}
	}
	if len(en.Added) > 0 {
		g.announce(c.s.srv)
	}
	return en, nil
}

// offeredToolsets are the selectable toolsets the server-wide settings
// and the session's own view leave at least one tool in.
func (s *liveSession) offeredToolsets() []string {
	vctx := s.viewCtx()
	var out []string
	for _, name := range tools.SelectableToolsets {
		for _, t := range s.g.visible.Tools() {
			if reason, _ := s.g.viewRefusal(vctx, t); t.Toolset == name && reason == "" {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// announce tells srv's sessions their tool list changed. Every stdio
// server has one session (a process's own, or one attached client's), so
// it tells exactly the session whose list changed.
func (g *Gateway) announce(srv *mcp.Server) {
	g.opts.Servers.AnnounceToolsChanged(srv, g.visible)
}

// announceReload tells every session whose list differs between the old
// and the new policy.
func (g *Gateway) announceReload(old, cur *policy.Policy) {
	told := map[*mcp.Server]bool{}
	g.sessions.Range(func(_, v any) bool {
		s := v.(*liveSession)
		if told[s.srv] {
			return true
		}
		ctx := s.viewCtx()
		if !slices.Equal(s.listed(ctx, old), s.listed(ctx, cur)) {
			g.announce(s.srv)
			told[s.srv] = true
		}
		return true
	})
}

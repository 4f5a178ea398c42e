package gateway

import (
	"context"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioServer is the server for the stdio transport: read-only and toolsets
// applied; capabilities (and, in dynamic mode, the session's toolsets) are
// applied per call and per tools/list, so a policy reload or an enabled
// toolset takes effect at once, and the session is told with
// notifications/tools/list_changed.
//
// Each call builds a new server, meant for one session: go-sdk can only
// tell all of a server's sessions that the list changed, so a session with
// a server of its own is told exactly when its own list changes.
func (g *Gateway) StdioServer() *mcp.Server {
	return g.ClientServer(View{})
}

// ClientServer is StdioServer for one attached client with view v: its
// sessions start dynamic when the server-wide setting or the view asks,
// and get the instructions that go with it.
func (g *Gateway) ClientServer(v View) *mcp.Server {
	dynamic := g.opts.DynamicToolsets || v.Dynamic
	s := g.opts.Servers.BuildSession(g.visible, dynamic)
	// Outermost, around the list the server was built with.
	s.AddReceivingMiddleware(bindServer(&boundServer{srv: s, dynamic: dynamic}))
	return s
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
	// The discovery tools need a session to grow: never over HTTP.
	reg := g.visible.Filter(func(t tools.Tool) bool { return t.Toolset != tools.ToolsetDynamic && g.refusal(c, t) == nil })
	s, _ := g.servers.LoadOrStore(key, g.opts.Servers.Build(reg))
	return s.(*mcp.Server)
}

// Principal resolves the caller of one MCP request (the rules are
// caller.Resolve's): extra is nil on stdio; on HTTP it carries the caller
// Wrap authenticated, if any. It is the transport's principal resolver.
func (g *Gateway) Principal(ctx context.Context, extra *mcp.RequestExtra) caller.Principal {
	r := caller.Request{}
	if extra != nil && extra.Header != nil {
		r.HTTP, r.Header = true, extra.Header
		r.VerifiedID, r.VerifiedTenant = verified(extra.TokenInfo)
		r.Grants = grantsOf(extra.TokenInfo)
		r.Addr = caller.ClientIP(ctx)
	}
	return caller.Resolve(r, fixedTenants(g.policy.Load()))
}

// fixedTenants are the tenants pol pins for callers without a token.
func fixedTenants(pol *policy.Policy) caller.Fixed {
	return caller.Fixed{Stdio: pol.Stdio.Tenant, Anonymous: pol.Anonymous.Tenant}
}

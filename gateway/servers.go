package gateway

import (
	"context"

	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioServer is the server for the stdio transport: read-only and toolsets
// applied; capabilities (and, in dynamic mode, the session's toolsets) are
// applied per call and per tools/list, so a policy reload or an enabled
// toolset takes effect at once, and the session is told with
// notifications/tools/list_changed.
func (g *Gateway) StdioServer() *mcp.Server {
	b := g.builder
	b.ListChanged = true
	s := b.Build(g.visible)
	s.AddReceivingMiddleware(bindServer(s))
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
	reg := g.visible.Filter(func(t tools.Tool) bool { return g.refusal(c, t) == nil })
	s, _ := g.servers.LoadOrStore(key, g.builder.Build(reg))
	return s.(*mcp.Server)
}

// Principal resolves the caller of one MCP request (the rules are
// caller.Resolve's): extra is nil on stdio; on HTTP it carries the caller
// Wrap authenticated, if any.
func (g *Gateway) Principal(ctx context.Context, extra *mcp.RequestExtra) caller.Principal {
	r := caller.Request{}
	if extra != nil && extra.Header != nil {
		r.HTTP, r.Header = true, extra.Header
		r.VerifiedID, r.VerifiedTenant = verified(extra.TokenInfo)
		r.Addr = transport.ClientIP(ctx)
	}
	return caller.Resolve(r, fixedTenants(g.policy.Load()))
}

// fixedTenants are the tenants pol pins for callers without a token.
func fixedTenants(pol *policy.Policy) caller.Fixed {
	return caller.Fixed{Stdio: pol.Stdio.Tenant, Anonymous: pol.Anonymous.Tenant}
}

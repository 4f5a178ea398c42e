// Package transport assembles MCP servers from the tool registry and serves
// them over stdio and the HTTP bridge.
package transport

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/lifecycle"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PrincipalFunc resolves the caller of one MCP request. extra is nil on stdio.
type PrincipalFunc func(ctx context.Context, extra *mcp.RequestExtra) caller.Principal

// DefaultPrincipal treats stdio as the local caller and an HTTP request as
// an anonymous caller scoped by its tenant header (no policy).
func DefaultPrincipal(_ context.Context, extra *mcp.RequestExtra) caller.Principal {
	r := caller.Request{}
	if extra != nil && extra.Header != nil {
		r.HTTP, r.Header = true, extra.Header
	}
	return caller.Resolve(r, caller.Fixed{})
}

// Builder makes MCP servers exposing a registry.
type Builder struct {
	Logger *slog.Logger
	// Principal resolves the caller of each request (DefaultPrincipal if nil).
	Principal PrincipalFunc
	// Middleware runs after the principal is known, outermost first (the
	// gateway: capability, rate limit, audit).
	Middleware []mcp.Middleware
	// Outer middleware runs before Middleware (right after the principal
	// is resolved), so it sees every call, including refused ones
	// (metrics).
	Outer []mcp.Middleware
	// SDKLogger, when set, is the go-sdk's own logger (it logs every HTTP
	// request at INFO, so operators hold it at WARN); Logger stays the
	// logger of tool handlers.
	SDKLogger *slog.Logger
	// Instructions are sent to clients at initialize and server/discover;
	// DynamicInstructions instead to sessions that start with the core
	// tools only (dynamic toolsets).
	Instructions        string
	DynamicInstructions string
	// ListChanged advertises notifications/tools/list_changed: on for
	// servers whose sessions last (stdio), off for the stateless HTTP
	// bridge, which cannot deliver them.
	ListChanged bool
	// Drain, when set, is the shutdown signal every call can see
	// (lifecycle.Interruptible).
	Drain *lifecycle.Drain
	// First run before the extensions, right after the principal is
	// resolved (the restore gate, the attached client's context): an
	// extension's requests are held and attributed like any other.
	First []mcp.Middleware
	// Extensions plug protocol extensions (the Tasks extension) into every
	// server Build makes; their middleware runs after First, before Outer.
	Extensions []Extension
	// WrapTool, when set, wraps the handler of each tool (URL elicitation
	// of approvals).
	WrapTool func(t tools.Tool, h mcp.ToolHandler) mcp.ToolHandler
}

// Extension is a protocol extension as Build installs it: capabilities to
// advertise, methods to register, and a receiving middleware.
type Extension interface {
	Capabilities(c *mcp.ServerCapabilities)
	Install(s *mcp.Server) error
	Middleware(next mcp.MethodHandler) mcp.MethodHandler
}

// Build returns a server exposing every tool of reg.
func (b *Builder) Build(reg *tools.Registry) *mcp.Server {
	logger := b.logger()
	sdkLogger := b.SDKLogger
	if sdkLogger == nil {
		sdkLogger = logger
	}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: b.ListChanged}}
	for _, x := range b.Extensions {
		x.Capabilities(caps)
	}
	impl := &mcp.Implementation{Name: "accords-mcp", Title: "Accords MCP for Vaultclaw", Version: version.Version}
	s := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: b.Instructions,
		Logger:       sdkLogger,
		Capabilities: caps,
	})
	for _, t := range reg.Tools() {
		s.AddTool(t.MCPTool(), b.toolHandler(t, logger))
	}
	mws := append([]mcp.Middleware{}, b.First...)
	for _, x := range b.Extensions {
		if err := x.Install(s); err != nil {
			// Only a name clash with a standard method fails: a bug.
			panic(fmt.Sprintf("install protocol extension: %v", err))
		}
		mws = append(mws, x.Middleware)
	}
	mws = append(append(mws, b.Outer...), b.Middleware...)
	// Receiving middleware added last runs first, so the principal is
	// resolved before anything else sees the request.
	for _, mw := range slices.Backward(mws) {
		s.AddReceivingMiddleware(mw)
	}
	// Then: every call sees the shutdown signal and ends with its HTTP
	// POST; the principal is resolved before any of that.
	s.AddReceivingMiddleware(CallContext(), drainMiddleware(b.Drain))
	s.AddReceivingMiddleware(principalMiddleware(b.principal()))
	return s
}

// AnnounceToolsChanged makes s send notifications/tools/list_changed to its
// sessions (through their subscriptions/listen stream on 2026-07-28). go-sdk
// sends it only when a tool is added or removed, and has no call for one
// session: re-adding one of reg's tools as it is, with the handler Build
// gave it, is a change to go-sdk and to no client. Sessions whose own list
// did not change list again and get the same answer.
func (b *Builder) AnnounceToolsChanged(s *mcp.Server, reg *tools.Registry) {
	ts := reg.Tools()
	if len(ts) == 0 {
		return
	}
	s.AddTool(ts[0].MCPTool(), b.toolHandler(ts[0], b.logger()))
}

func (b *Builder) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

// toolHandler is t's handler as servers register it.
func (b *Builder) toolHandler(t tools.Tool, logger *slog.Logger) mcp.ToolHandler {
	h := t.MCPHandler(logger)
	if b.WrapTool != nil {
		h = b.WrapTool(t, h)
	}
	return h
}

func drainMiddleware(d *lifecycle.Drain) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(lifecycle.With(ctx, d), method, req)
		}
	}
}

func (b *Builder) principal() PrincipalFunc {
	if b.Principal != nil {
		return b.Principal
	}
	return DefaultPrincipal
}

func principalMiddleware(resolve PrincipalFunc) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := resolve(ctx, req.GetExtra())
			return next(caller.With(ctx, p), method, req)
		}
	}
}

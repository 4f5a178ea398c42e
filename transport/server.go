// Package transport assembles MCP servers from the tool registry and serves
// them over stdio and the HTTP bridge.
package transport

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/lifecycle"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PrincipalFunc resolves the caller of one MCP request. extra is nil on stdio.
type PrincipalFunc func(ctx context.Context, extra *mcp.RequestExtra) caller.Principal

// Builder makes MCP servers exposing a registry.
type Builder struct {
	Logger *slog.Logger
	// Middleware is every receiving middleware of the servers Build makes,
	// outermost first (the composition root orders it). Without one that
	// resolves the principal (Principal), every request is the local
	// caller's.
	Middleware []mcp.Middleware
	// SDKLogger, when set, is the go-sdk's own logger (it logs every HTTP
	// request at INFO, so operators hold it at WARN); Logger stays the
	// logger of tool handlers.
	SDKLogger *slog.Logger
	// Instructions are sent to clients at initialize and server/discover;
	// DynamicInstructions instead to sessions that start with the core
	// tools only (dynamic toolsets).
	Instructions        string
	DynamicInstructions string
	// Extensions plug protocol extensions (the Tasks extension) into every
	// server Build makes: their capabilities and methods. Their middleware,
	// if any, belongs in Middleware.
	Extensions []Extension
	// WrapTool, when set, wraps the handler of each tool (URL elicitation
	// of approvals).
	WrapTool func(t tools.Tool, h mcp.ToolHandler) mcp.ToolHandler
}

// Extension is a protocol extension as Build installs it: capabilities to
// advertise and methods to register.
type Extension interface {
	Capabilities(c *mcp.ServerCapabilities)
	Install(s *mcp.Server) error
}

// Build returns a server for stateless requests (the HTTP bridge) exposing
// every tool of reg. It does not advertise notifications/tools/list_changed,
// which it could not deliver.
func (b *Builder) Build(reg *tools.Registry) *mcp.Server {
	return b.build(reg, false, b.Instructions)
}

// BuildSession returns a server for a session that lasts (stdio, an
// attached client) exposing every tool of reg: it advertises
// notifications/tools/list_changed; a dynamic one gets
// DynamicInstructions.
func (b *Builder) BuildSession(reg *tools.Registry, dynamic bool) *mcp.Server {
	instructions := b.Instructions
	if dynamic {
		instructions = b.DynamicInstructions
	}
	return b.build(reg, true, instructions)
}

func (b *Builder) build(reg *tools.Registry, listChanged bool, instructions string) *mcp.Server {
	logger := b.logger()
	sdkLogger := b.SDKLogger
	if sdkLogger == nil {
		sdkLogger = logger
	}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: listChanged}}
	for _, x := range b.Extensions {
		x.Capabilities(caps)
	}
	impl := &mcp.Implementation{Name: "accords-mcp", Title: "Accords MCP for Vaultclaw", Version: version.Version}
	s := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger,
		Capabilities: caps,
	})
	for _, t := range reg.Tools() {
		s.AddTool(t.MCPTool(), b.toolHandler(t, logger))
	}
	for _, x := range b.Extensions {
		if err := x.Install(s); err != nil {
			// Only a name clash with a standard method fails: a bug.
			panic(fmt.Sprintf("install protocol extension: %v", err))
		}
	}
	// One call, first entry outermost.
	s.AddReceivingMiddleware(b.Middleware...)
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

// Drain makes the shutdown signal d visible to every call
// (lifecycle.Interruptible).
func Drain(d *lifecycle.Drain) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(lifecycle.With(ctx, d), method, req)
		}
	}
}

// Principal resolves the caller of each request with resolve and puts it
// in the request's context (caller.From).
func Principal(resolve PrincipalFunc) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := resolve(ctx, req.GetExtra())
			return next(caller.With(ctx, p), method, req)
		}
	}
}

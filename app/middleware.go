package app

import (
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware is every receiving middleware of the MCP servers the app
// builds (stdio, attached clients and the HTTP bridge alike), outermost
// first. A stdio server also gets the gateway's session binding around it
// all (gateway.ClientServer).
func (a *App) middleware() []mcp.Middleware {
	known := func(name string) bool { _, ok := a.Registry.Lookup(name); return ok }
	return []mcp.Middleware{
		// Who calls, before anything reads caller.From.
		transport.Principal(a.Gateway.Principal),
		// An HTTP call ends with its POST: re-attach the request's
		// cancellation before any work starts.
		transport.CallContext(),
		// Every call can see the shutdown signal (long waits answer at
		// once when it begins).
		transport.Drain(a.Drain),
		// The restore gate: a call held during a restore has not started,
		// tasks/* included.
		gateMiddleware(a.Gate),
		// The attached client's session and view, before the Tasks
		// extension binds a task to its caller and the gateway applies the
		// view.
		a.clients.middleware,
		// Tasks: task-augmented tools/call reserve a working slot and
		// answer with a task; tasks/* are its methods.
		a.Tasks.Middleware,
		// Metrics: outside the gateway, so the calls it refuses are counted.
		transport.Observe(a.Metrics, transport.ObserveOptions{Known: known, Logger: a.Logger}),
		// The gateway. tools/list: only what the caller may call.
		a.Gateway.ListFilter,
		// tasks/*: a rate-limit bucket per caller and method (the
		// extension checks ownership and the tool's capability).
		a.Gateway.MethodLimits(tasks.MethodGet, tasks.MethodUpdate, tasks.MethodCancel),
		// tools/call: capability, rules and rate limits, then the call
		// (innermost: nothing between it and the tool), then its receipt.
		a.Gateway.Calls,
	}
}

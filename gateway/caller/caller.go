// Package caller identifies who is calling a tool: a principal (the local
// stdio user or an authenticated HTTP caller) and the tenant scope whose data
// the call may touch. It travels in the request context.
package caller

import "context"

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// DefaultScope is the tenant of stdio and of HTTP calls without a tenant header.
const DefaultScope = "default"

// Principal is the resolved identity of one tool call.
type Principal struct {
	// ID names the caller: "local" for stdio, the policy file's caller id for
	// an authenticated HTTP caller, "anonymous" otherwise. Never a token.
	ID string
	// Scope is the tenant whose sessions, handles and receipts are visible.
	Scope string
	// Transport is TransportStdio or TransportHTTP.
	Transport string
	// Authenticated is true when a bearer token was verified.
	Authenticated bool
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal in ctx, or the local stdio principal.
func From(ctx context.Context) Principal {
	if p, ok := ctx.Value(ctxKey{}).(Principal); ok {
		return p
	}
	return Local()
}

// Local is the principal of the stdio transport.
func Local() Principal {
	return Principal{ID: "local", Scope: DefaultScope, Transport: TransportStdio}
}

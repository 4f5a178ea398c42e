package tools

import (
	"github.com/accordsai/accords-mcp/routing"
	"github.com/accordsai/accords-mcp/session"
)

// Deps are the domain services tool handlers call.
type Deps struct {
	Sessions *session.Service
	// Router resolves natural-language requests (vaultclaw_route_resolve).
	Router *routing.Resolver
}

// All returns every tool of the server. This is the one place tools are
// registered; each group lives in its own file.
func All(d Deps) (*Registry, error) {
	return NewRegistry(
		sessionTools(d.Sessions),
		routingTools(d.Router),
	)
}

package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
)

// Toolset routing: natural-language requests to cookbook routes. Local
// and read-only.

type routeResolveOptions struct {
	AllowSearchFallback *bool `json:"allow_search_fallback,omitempty" jsonschema:"fall back to catalog search when no registry route matches; default true"`
}

type routeResolveContext struct {
	Facts map[string]any `json:"facts,omitempty" jsonschema:"facts from the agent's normal loop (email_subject, email_body, weather_summary, url, ...) that fill missing inputs"`
}

type routeResolveIn struct {
	RequestText string               `json:"request_text,omitempty" jsonschema:"the natural-language Vault request"`
	Request     string               `json:"request,omitempty" jsonschema:"alias of request_text"`
	Text        string               `json:"text,omitempty" jsonschema:"alias of request_text"`
	Options     *routeResolveOptions `json:"options,omitempty" jsonschema:"resolver options"`
	Context     *routeResolveContext `json:"context,omitempty" jsonschema:"resolution context"`
}

var routeResolve = Define(Tool{
	Name:  "vaultclaw_route_resolve",
	Title: "Resolve a Vault request to a route",
	Description: "Map a natural-language Vault request to a cookbook route (template, recipe, connector job or workflow), " +
		"with extracted inputs, the inputs still missing, and for each one either a question for the user or a fact " +
		"request (AUTO_RETRY_WITH_FACTS) to fetch and retry with context.facts. Local and read-only.",
	Toolset:    ToolsetRouting,
	Capability: CapCatalogView,
	Hints:      ReadLocal,
	Needs:      NeedRouter,
}, nil, resolveRoute)

func resolveRoute(ctx context.Context, d *Deps, _ *Call, in routeResolveIn) (Result, error) {
	text := firstNonBlank(in.RequestText, in.Request, in.Text)
	if text == "" {
		return Result{}, apperr.Validation("request_text", "request_text is required")
	}
	if len(text) > routing.MaxRequestBytes {
		return Result{}, apperr.Validation("request_text", "request_text is longer than %d bytes", routing.MaxRequestBytes)
	}
	req := routing.Request{Text: text, AllowSearch: true}
	if in.Options != nil && in.Options.AllowSearchFallback != nil {
		req.AllowSearch = *in.Options.AllowSearchFallback
	}
	if in.Context != nil {
		req.Facts = in.Context.Facts
	}
	res := d.Router.Resolve(ctx, req)
	return Result{Data: res, Meta: envelope.Meta{Extra: map[string]any{"resolver": routing.ResolverVersion}}}, nil
}

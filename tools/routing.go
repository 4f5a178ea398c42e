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
	AllowSearchFallback *bool `json:"allow_search_fallback,omitempty"`
}

type routeResolveContext struct {
	Facts map[string]any `json:"facts,omitempty" jsonschema:"answers by fact_key or input_key"`
}

type routeResolveIn struct {
	RequestText string               `json:"request_text,omitempty"`
	Request     string               `json:"request,omitempty"`
	Text        string               `json:"text,omitempty"`
	Options     *routeResolveOptions `json:"options,omitempty"`
	Context     *routeResolveContext `json:"context,omitempty"`
}

var routeResolve = Define(Tool{
	Name:        "vaultclaw_route_resolve",
	Description: "Turn a request for the vault into a tool and inputs; call it first.",
	Toolset:     ToolsetRouting,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedRouter,
	Unlisted:    []string{"request", "text"},
	Output:      obj("status", str(), "execution", obj(), "missing_input_guidance", objs()),
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

package tools

import "context"

// RenderedCheck sees the request a tool is about to send to Vault on plan
// and template paths (the gateway's pre-execution rules that read
// `rendered`); an error refuses the call before the request is sent.
type RenderedCheck func(ctx context.Context, rendered map[string]any) error

type renderedCheckKey struct{}

// WithRenderedCheck returns ctx carrying check.
func WithRenderedCheck(ctx context.Context, check RenderedCheck) context.Context {
	return context.WithValue(ctx, renderedCheckKey{}, check)
}

// renderedCheck is the check in ctx, or nil.
func renderedCheck(ctx context.Context) RenderedCheck {
	c, _ := ctx.Value(renderedCheckKey{}).(RenderedCheck)
	return c
}

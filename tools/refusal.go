package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

type refusalKey struct{}

// WithRefusal returns ctx carrying e: the call's handler does not run, and
// the call answers with e's envelope once its arguments are checked. It is
// for refusals decided before the gateway sees the call (the Tasks
// extension's bound on working tasks): the gateway's own checks still come
// first, and its receipt records the refusal like any other outcome.
func WithRefusal(ctx context.Context, e *apperr.Error) context.Context {
	return context.WithValue(ctx, refusalKey{}, e)
}

// refusal is the refusal in ctx, or nil.
func refusal(ctx context.Context) *apperr.Error {
	e, _ := ctx.Value(refusalKey{}).(*apperr.Error)
	return e
}

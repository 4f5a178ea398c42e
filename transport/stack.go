package transport

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stackMiddleware grows a request's stack by 32 KiB before anything else
// runs (growStack: stack_*.s, stack_other.go). go-sdk serves each request
// on a new goroutine, which starts with a few KiB; a tool call then goes 20
// to 40 KiB deep (the middleware, go-sdk's JSON decoder, schema
// validation, bleve's searchers), and the runtime grows the stack by
// doubling, copying every frame each time: three or four copies of an ever
// deeper stack were 8 % of a render's CPU. Growing it once, while it is
// still shallow, costs one copy of a few frames.
func stackMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		growStack()
		return next(ctx, method, req)
	}
}

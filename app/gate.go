package app

import (
	"context"
	"errors"

	"github.com/accordsai/accords-mcp/platform/gate"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gateMiddleware passes every tools/call through g: while a restore swaps
// the database the call waits, and once the daemon is shutting down a call
// that has not started is answered with CodeNotStarted (the front end
// sends it to the next daemon).
func gateMiddleware(g *gate.Gate) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			leave, err := g.Enter(ctx)
			if errors.Is(err, gate.ErrClosed) {
				return nil, &jsonrpc.Error{Code: transport.CodeNotStarted, Message: err.Error()}
			}
			if err != nil {
				return nil, err
			}
			defer leave()
			return next(ctx, method, req)
		}
	}
}

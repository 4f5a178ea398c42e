package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Finished is the envelope of a call finished outside its handler (a task
// or a URL elicitation completing once Vault has decided): the data with
// the Vault call's meta, or err's envelope, as the tool's handler would
// have answered.
func Finished(data any, requestID string, status int, err error) envelope.Envelope {
	if err != nil {
		return envelope.Failure(err)
	}
	return envelope.Success(data, vaultMeta(requestID, status))
}

// Deliver renders env as the result of the call in ctx and records it as
// the call's outcome, for a call answered outside its handler.
func Deliver(ctx context.Context, env envelope.Envelope) *mcp.CallToolResult {
	return render(ctx, env, nil)
}

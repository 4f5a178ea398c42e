package tools

import (
	"github.com/accordsai/accords-mcp/platform/envelope"
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

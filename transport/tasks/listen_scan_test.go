package tasks

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTaskListenIsReadAsTheSDKDecodesIt: a listen naming task ids is one
// whichever way JSON spells its method; anything else goes on to the SDK.
func TestTaskListenIsReadAsTheSDKDecodesIt(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["t1"]}}}`:      true,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen","params":{"notifications":{"taskIds":["t1"]}}}`:     true,
		`{"jsonrpc":"2.0","id":1,"method":"\u0073ubscriptions/listen","params":{"notifications":{"taskIds":["t1"]}}}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`:                                        false,
		`{"jsonrpc":"2.0","method":"subscriptions/listen","params":{"notifications":{"taskIds":["t1"]}}}`:             false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`:                                        false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"p":"C:\\tmp"}}}`:                       false,
	} {
		msg, err := jsonrpc.DecodeMessage([]byte(body))
		require.NoError(t, err, body)
		_, _, ok := taskListen(msg)
		assert.Equal(t, want, ok, body)
	}
}

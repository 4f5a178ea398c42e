package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/transport/wire"
)

func TestMayBeListenKeepsEveryListenRequest(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`:                  true,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen","params":{}}`:                 true,
		`{"jsonrpc":"2.0","id":1,"method":"\u0073ubscriptions/listen","params":{}}`:             true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`:                  false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"p":"C:\\tmp"}}}`: true,
	} {
		assert.Equal(t, want, mayBeListen([]byte(body)), body)
		if want {
			continue
		}
		// What it passes over is not a listen request.
		msg, err := wire.Decode([]byte(body))
		require.NoError(t, err)
		_, _, ok := taskListen(msg)
		assert.False(t, ok)
	}
}

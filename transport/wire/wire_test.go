package wire

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
)

// wireSeeds are messages a server meets, and the odd ones the SDK's decoder
// treats in its own way.
var wireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":2.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":"t\u00e9st"}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
	`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
	`{"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":"\xff"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2,` + "\x00" + `]}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"","method":"ping","params":{}}`,
	` {"jsonrpc":"2.0","id":1,"method":"ping"} `,
	`{}`, `null`, `"x"`, `1`, ``,
}

// sameMessage fails unless Decode gives what the SDK's decoder gives
// for data: the same kind of message with the same fields, or an error
// where it errs.
func sameMessage(t *testing.T, data []byte) {
	want, wantErr := jsonrpc.DecodeMessage(data)
	got, gotErr := Decode(data)
	if wantErr != nil {
		require.Error(t, gotErr, "%q: the SDK refuses it", data)
		return
	}
	require.NoError(t, gotErr, "%q", data)
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := got.(*jsonrpc.Request)
		require.True(t, ok, "%q: a request", data)
		require.Equal(t, w.Method, g.Method, "%q", data)
		require.Equal(t, w.ID, g.ID, "%q", data)
		require.True(t, bytes.Equal(w.Params, g.Params), "%q: params %q, want %q", data, g.Params, w.Params)
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		require.True(t, ok, "%q: a response", data)
		require.Equal(t, w, g, "%q", data)
	}
}

func TestDecodeMessageMatchesTheSDK(t *testing.T) {
	for _, s := range wireSeeds {
		sameMessage(t, []byte(s))
	}
}

// FuzzDecodeMessageMatchesTheSDK: for any input, the transport's decoder and
// the SDK's agree.
func FuzzDecodeMessageMatchesTheSDK(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameMessage(t, data) })
}

// TestDecodeMessageAllocatesLittle: the reason for the decoder, kept: a
// tools/call decodes in a small fraction of the SDK decoder's bytes.
func TestDecodeMessageAllocatesLittle(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"vaultclaw_recipes_search","arguments":{"query":"send email","limit":10},"_meta":{"progressToken":3}}}`)
	bytesOf := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 200 {
			fn()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 200
	}
	ours := bytesOf(func() { _, _ = Decode(msg) })
	sdk := bytesOf(func() { _, _ = jsonrpc.DecodeMessage(msg) })
	require.Less(t, ours*8, sdk, "ours %v B, the SDK's %v B", ours, sdk)
}

package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServerEnv makes this test binary a line server for RawClient: it
// answers initialize, sends a notification and a stray answer before each
// real one, and answers tool calls by name.
const fakeServerEnv = "LOADGEN_FAKE_LINE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) == "1" {
		fakeLineServer()
		return
	}
	os.Exit(m.Run())
}

func fakeLineServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var req struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		fmt.Println(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		fmt.Printf(`{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", *req.ID+1000)
		var result string
		switch {
		case req.Method != "tools/call":
			result = `{}`
		case req.Params.Name == "ok":
			result = `{"content":[],"structuredContent":{"ok":true,"data":{},"error":null}}`
		case req.Params.Name == "refused":
			result = `{"content":[],"structuredContent":{"ok":false,"data":null,"error":{"code":"MCP_VALIDATION_ERROR"}},"isError":true}`
		case req.Params.Name == "bare":
			result = `{"content":[{"type":"text","text":"pong"}]}`
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"unknown tool"}}`+"\n", *req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%d,"result":%s}`+"\n", *req.ID, result)
	}
}

func TestRawClientReadsItsOwnAnswers(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	ctx := context.Background()
	c, err := StartRawClient(ctx, ServerOptions{Bin: self, Args: []string{"-test.run=^$"}, Env: []string{fakeServerEnv + "=1"}})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()

	call := func(tool string, envelopes bool) string {
		d, code := c.Do(ctx, Op{Name: tool, Tool: tool}, nil, envelopes)
		assert.Positive(t, d, tool)
		return code
	}
	assert.Equal(t, "", call("ok", true), "notifications and other ids are skipped")
	assert.Equal(t, "MCP_VALIDATION_ERROR", call("refused", true))
	assert.Equal(t, CodeNoEnvelope, call("bare", true))
	assert.Equal(t, "", call("bare", false), "a server without envelopes is read as CallRaw reads it")
	assert.Equal(t, "is_error", call("refused", false))
	assert.Equal(t, CodeTransport, call("missing", true), "a JSON-RPC error")
	d, code := c.Do(ctx, ListToolsOp(), nil, true)
	assert.Positive(t, d)
	assert.Empty(t, code)
}

package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Reply is an HTTP response with its body read.
type Reply struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Post sends one JSON-RPC message to an MCP endpoint the way simple bridge
// clients do, with Accept: application/json and no initialize, and returns
// the reply. body is sent as is when it is a string or []byte, as JSON
// otherwise.
func Post(t testing.TB, endpoint string, body any, header map[string]string) Reply {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return Reply{StatusCode: resp.StatusCode, Header: resp.Header, Body: out}
}

// ToolsCall is the JSON-RPC tools/call message for tool and args.
func ToolsCall(id int, tool string, args map[string]any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}}
}

// PostCall posts a tools/call with Post and decodes the envelope of the
// reply, which must be HTTP 200 with a result.
func PostCall(t testing.TB, endpoint, tool string, args map[string]any, header map[string]string) Envelope {
	t.Helper()
	rep := Post(t, endpoint, ToolsCall(1, tool, args), header)
	raw := rep.Body
	require.Equal(t, http.StatusOK, rep.StatusCode, string(raw))
	var rpc struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &rpc), string(raw))
	require.NotNil(t, rpc.Result, "no result: %s", raw)
	env, err := Decode(rpc.Result)
	require.NoError(t, err, "call %s", tool)
	return env
}

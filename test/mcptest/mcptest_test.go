package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func result(structured string, text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(structured),
		Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}

const (
	okEnv   = `{"ok":true,"data":{"n":1},"error":null,"meta":{"request_id":"r1","vault_http_status":200,"vault_code":""}}`
	failEnv = `{"ok":false,"data":null,"error":{"code":"MCP_X","category":"validation","message":"m","retryable":true,"vault_code":"V","details":{"field":"f"}},"meta":{}}`
)

func TestDecode(t *testing.T) {
	env, err := Decode(result(okEnv, envelope.Text([]byte(okEnv)), false))
	require.NoError(t, err)
	assert.True(t, env.OK)
	assert.Equal(t, map[string]any{"n": 1.0}, env.Object())
	assert.Equal(t, "r1", env.Meta["request_id"])
	assert.Empty(t, env.Code())
	assert.Nil(t, env.Details())
	assert.Equal(t, true, env.Raw["ok"])
	assert.NotNil(t, env.Result)

	env, err = Decode(result(failEnv, envelope.Text([]byte(failEnv)), true))
	require.NoError(t, err)
	assert.Equal(t, &Error{Code: "MCP_X", Category: "validation", Message: "m", Retryable: true, VaultCode: "V",
		Details: map[string]any{"field": "f"}}, env.Error)
	assert.Equal(t, "MCP_X", env.Code())
	assert.Equal(t, "f", env.Details()["field"])
	assert.Nil(t, env.Object())

	for name, res := range map[string]*mcp.CallToolResult{
		"nil result":        nil,
		"no structure":      {Content: []mcp.Content{&mcp.TextContent{Text: okEnv}}},
		"not an object":     result(`[1]`, `[1]`, false),
		"failure no error":  result(`{"ok":false}`, `{"ok":false}`, true),
		"no content":        {StructuredContent: json.RawMessage(okEnv)},
		"image first":       {StructuredContent: json.RawMessage(okEnv), Content: []mcp.Content{&mcp.ImageContent{}}},
		"text differs":      result(okEnv, `{"ok":true}`, false),
		"isError with ok":   result(okEnv, envelope.Text([]byte(okEnv)), true),
		"no isError failed": result(failEnv, envelope.Text([]byte(failEnv)), false),
	} {
		env, err := Decode(res)
		assert.ErrorIs(t, err, ErrNoEnvelope, name)
		assert.Equal(t, Envelope{}, env, name)
	}
}

type echoIn struct {
	Fail bool `json:"fail,omitempty"`
}

// server has one tool answering with an envelope as the real tools do.
func server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		if in.Fail {
			return result(failEnv, envelope.Text([]byte(failEnv)), true), nil, nil
		}
		return result(okEnv, envelope.Text([]byte(okEnv)), false), nil, nil
	})
	return s
}

func TestConnectAndCall(t *testing.T) {
	cs := Connect(t, server(), nil)
	assert.Equal(t, []string{"echo"}, ToolNames(t, cs.ClientSession))
	assert.Equal(t, map[string]any{"n": 1.0}, RequireOK(t, Call(t, cs, "echo", nil)))
	assert.Equal(t, "m", RequireCode(t, Call(t, cs, "echo", map[string]any{"fail": true}), "MCP_X").Message)
	_, err := TryCall(context.Background(), cs, "missing", nil)
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrNoEnvelope), "a refused call is not a malformed result")
	require.NoError(t, cs.Close())
	require.NoError(t, cs.Close(), "Close is idempotent")
}

func TestConnectHTTP(t *testing.T) {
	s := server()
	var mu sync.Mutex
	var tenants []string
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		mu.Lock()
		tenants = append(tenants, r.Header.Get("X-Tenant-Id"))
		mu.Unlock()
		return s
	}, nil))
	defer srv.Close()
	cs := ConnectHTTP(t, srv.URL, HTTPOptions{Headers: map[string]string{"X-Tenant-Id": "t"}})
	assert.True(t, Call(t, cs, "echo", nil).OK)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, tenants, "t", "the headers reach the server")
}

// TestPost drives a bridge that answers one bare JSON-RPC post, as the
// server's HTTP bridge does for simple clients.
func TestPost(t *testing.T) {
	var got map[string]any
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":` + failEnv +
			`,"content":[{"type":"text","text":` + strconv.Quote(envelope.Text([]byte(failEnv))) + `}],"isError":true}}`))
	}))
	defer srv.Close()

	env := PostCall(t, srv.URL, "echo", map[string]any{"x": 1}, map[string]string{"X-Tenant-Id": "t"})
	assert.Equal(t, "MCP_X", env.Code())
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"x": 1.0}}}, got)
	assert.Equal(t, "application/json", header.Get("Accept"))
	assert.Equal(t, "t", header.Get("X-Tenant-Id"))

	rep := Post(t, srv.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil)
	assert.Equal(t, http.StatusOK, rep.StatusCode)
	assert.Equal(t, "tools/list", got["method"], "a string body is sent as is")
	assert.Contains(t, string(rep.Body), "MCP_X")
}

// Results are checked against the output schema the server lists; a
// result that does not match fails, whatever else it gets right.
func TestValidateOutputChecksTheListedSchema(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	out := json.RawMessage(`{"type":"object","properties":{"data":{"anyOf":[{"type":"object","properties":{"n":{"type":"integer"}}},{"type":"null"}]}}}`)
	serve := func(env string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var e struct{ OK bool }
			_ = json.Unmarshal([]byte(env), &e)
			return result(env, envelope.Text([]byte(env)), !e.OK), nil
		}
	}
	in := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "good", InputSchema: in, OutputSchema: out}, serve(okEnv))
	srv.AddTool(&mcp.Tool{Name: "failing", InputSchema: in, OutputSchema: out}, serve(failEnv))
	srv.AddTool(&mcp.Tool{Name: "bad", InputSchema: in, OutputSchema: out}, serve(`{"ok":true,"data":{"n":"one"},"error":null,"meta":{}}`))
	cs := Connect(t, srv, nil)
	ctx := context.Background()
	for _, name := range []string{"good", "failing"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		require.NoError(t, err)
		assert.NoError(t, ValidateOutput(ctx, cs, name, res), name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad"})
	require.NoError(t, err)
	err = ValidateOutput(ctx, cs, "bad", res)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not match its output schema")
}

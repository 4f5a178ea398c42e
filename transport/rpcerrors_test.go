package transport_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownMethodsGetJSONRPCErrors: whatever the protocol version, a
// JSON-RPC call the server cannot take gets a JSON-RPC error object, never
// a text/plain 400.
func TestUnknownMethodsGetJSONRPCErrors(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	url := srv.URL + "/v1/mcp"
	modern := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	for name, c := range map[string]struct {
		body    string
		headers map[string]string
		code    float64
		status  int
	}{
		"unknown method":            {`{"jsonrpc":"2.0","id":7,"method":"foo/bar"}`, nil, -32601, http.StatusOK},
		"unknown method, string id": {`{"jsonrpc":"2.0","id":"x-1","method":"tasks/list","params":{}}`, nil, -32601, http.StatusOK},
		"call without params":       {`{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, nil, -32600, http.StatusOK},
		"unknown method, 2026-07-28": {mustJSON(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "foo/bar", "params": map[string]any{"_meta": modern}}),
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "foo/bar"}, -32601, http.StatusNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			rep := mcptest.Post(t, url, c.body, c.headers)
			require.Equal(t, c.status, rep.StatusCode, string(rep.Body))
			assert.Contains(t, rep.Header.Get("Content-Type"), "application/json")
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    float64 `json:"code"`
					Message string  `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rep.Body, &msg), string(rep.Body))
			assert.Equal(t, "2.0", msg.JSONRPC)
			var sent struct {
				ID json.RawMessage `json:"id"`
			}
			require.NoError(t, json.Unmarshal([]byte(c.body), &sent))
			assert.JSONEq(t, string(sent.ID), string(msg.ID), "the request's id")
			assert.Equal(t, c.code, msg.Error.Code)
			assert.NotEmpty(t, msg.Error.Message)
		})
	}
	// A call the server knows still works through the same path.
	env := mcptest.PostCall(t, url, "vaultclaw_session_status", nil, nil)
	assert.True(t, env.OK)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

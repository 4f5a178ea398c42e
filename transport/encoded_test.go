package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/transport/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkEncoding is how go-sdk's JSON-RPC layer encodes a result: an encoder
// without HTML escaping, the trailing newline trimmed.
func sdkEncoding(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// rendered is a result as the tool adapter renders it: the envelope as
// structured content and as text, an optional second text item.
func rendered(data any, isError bool, extra ...string) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	r := &mcp.CallToolResult{StructuredContent: json.RawMessage(raw), IsError: isError,
		Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}
	for _, s := range extra {
		r.Content = append(r.Content, &mcp.TextContent{Text: s})
	}
	return r, nil
}

func resultOf(t testing.TB, data any, isError bool, extra ...string) *mcp.CallToolResult {
	r, err := rendered(data, isError, extra...)
	require.NoError(t, err)
	return r
}

var awkwardStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "line\nbreak\ttab\r", "\u2028\u2029",
	"control \x00\x01\x1f", "é, 東京, 🙂", "invalid \xff\xfe utf-8", "\u007f del", strings.Repeat("long ", 2000),
}

func TestEncodedToolResultsAreTheSDKsBytes(t *testing.T) {
	var results []*mcp.CallToolResult
	for i, s := range awkwardStrings {
		results = append(results,
			resultOf(t, map[string]any{"ok": true, "data": map[string]any{"s": s, "n": i, "list": []any{s, 1.5, nil}}}, false),
			resultOf(t, map[string]any{"ok": false, "error": map[string]any{"message": s}}, true, "Approval required.\n"+s))
	}
	handled := 0
	for _, r := range results {
		want := sdkEncoding(t, r)
		raw, ok := encodeToolResult(r, false)
		if !ok {
			continue
		}
		handled++
		er := encodedResult{CallToolResult: r, raw: raw, metaKeys: len(r.Meta)}
		assert.Equal(t, string(want), string(sdkEncoding(t, er)))
		got, err := er.MarshalJSON()
		require.NoError(t, err)
		assert.Same(t, &raw[0], &got[0], "the result is its encoding, not encoded again")
	}
	assert.Equal(t, len(results), handled, "json.Marshal's output is always escaped, so every rendered result is handled")

	// The gateway's _meta, empty or not, with keys to sort and to escape.
	for _, meta := range []mcp.Meta{nil, {}, {"accords/call_id": "call_1", "accords/receipt": map[string]any{"seq": 7, "hash": "<&>"}, "a": nil}} {
		r := resultOf(t, map[string]any{"ok": true}, false)
		r.Meta = meta
		raw, ok := encodeToolResult(r, false)
		require.True(t, ok)
		assert.Equal(t, string(sdkEncoding(t, r)), string(sdkEncoding(t, encodedResult{CallToolResult: r, raw: raw, metaKeys: len(r.Meta)})))
	}

	// A _meta changed after the encoding is the SDK's to encode.
	changed := resultOf(t, map[string]any{"ok": true}, false)
	changed.Meta = mcp.Meta{"accords/call_id": "call_1"}
	raw, ok := encodeToolResult(changed, false)
	require.True(t, ok)
	er := encodedResult{CallToolResult: changed, raw: raw, metaKeys: len(changed.Meta)}
	changed.Meta["later"] = "added"
	assert.Contains(t, string(sdkEncoding(t, er)), `"later":"added"`)
	assert.Equal(t, string(sdkEncoding(t, changed)), string(sdkEncoding(t, er)))

	// What the SDK would encode differently is left to it.
	withMeta := resultOf(t, map[string]any{"ok": true}, false)
	withMeta.Content[0].(*mcp.TextContent).Meta = mcp.Meta{"k": "v"}
	annotated := resultOf(t, map[string]any{"ok": true}, false)
	annotated.Content[0].(*mcp.TextContent).Annotations = &mcp.Annotations{Priority: 1}
	for name, r := range map[string]*mcp.CallToolResult{
		"text meta":       withMeta,
		"annotations":     annotated,
		"unescaped html":  {StructuredContent: json.RawMessage(`{"s":"<b>"}`), Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"unescaped u2028": {StructuredContent: json.RawMessage("{\"s\":\"\u2028\"}"), Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"not raw":         {StructuredContent: map[string]any{"ok": true}, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}},
		"no content":      {StructuredContent: json.RawMessage(`{}`)},
		"image":           {StructuredContent: json.RawMessage(`{}`), Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		"request state":   {StructuredContent: json.RawMessage(`{}`), Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, RequestState: "s"},
	} {
		_, ok := encodeToolResult(r, false)
		assert.False(t, ok, name)
	}
}

func FuzzEncodedToolResult(f *testing.F) {
	for _, s := range awkwardStrings {
		f.Add(s, `{"a":1}`, false)
	}
	f.Add("x", `{ "a" : [ 1 , "<" ] }`, true)
	f.Fuzz(func(t *testing.T, text, structured string, isError bool) {
		if !json.Valid([]byte(structured)) {
			return
		}
		r := &mcp.CallToolResult{StructuredContent: json.RawMessage(structured), IsError: isError,
			Content: []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: structured}}}
		want := sdkEncoding(t, r)
		if raw, ok := encodeToolResult(r, false); ok {
			assert.Equal(t, string(want), string(sdkEncoding(t, encodedResult{CallToolResult: r, raw: raw, metaKeys: len(r.Meta)})))
		}
	})
}

// TestEncodedResultsOverTheWire: the same calls to a server with and
// without the middleware answer the same bytes in every protocol version,
// 2026-07-28 (where go-sdk adds resultType and its server's identity after
// the middleware) included, with and without a _meta of the tool's.
func TestEncodedResultsOverTheWire(t *testing.T) {
	newServer := func(encode bool) *mcp.Server {
		impl := &mcp.Implementation{Name: "enc", Title: "<Encoded & \u2028>", Version: "1"}
		s := mcp.NewServer(impl, nil)
		s.AddTool(&mcp.Tool{Name: "answer", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in struct {
					S     string `json:"s"`
					Error bool   `json:"error"`
					Meta  string `json:"meta"`
				}
				_ = json.Unmarshal(req.Params.Arguments, &in)
				// The handler runs on the SDK's goroutine: errors go back
				// through the call, not through t.
				r, err := rendered(map[string]any{"ok": !in.Error, "s": in.S}, in.Error, "second "+in.S)
				if err != nil {
					return nil, err
				}
				switch in.Meta {
				case "none":
				case "server":
					// A result naming its server already keeps that name.
					r.Meta = mcp.Meta{mcp.MetaKeyServerInfo: map[string]any{"name": "other"}}
				default:
					r.Meta = mcp.Meta{"accords/call_id": "call_" + in.S}
				}
				return r, nil
			})
		if encode {
			s.AddReceivingMiddleware(encodeResults(impl))
		}
		return s
	}
	plain, encoded := newServer(false), newServer(true)
	// Which answers the middleware wrote, so the comparison is known to
	// compare its bytes.
	var wrote []bool
	var written []encodedResult
	encoded.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				er, ok := res.(encodedResult)
				wrote = append(wrote, ok)
				written = append(written, er)
			}
			return res, err
		}
	})
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		for i, s := range awkwardStrings[:6] {
			args, err := json.Marshal(map[string]any{"s": s, "error": i%2 == 1, "meta": []string{"call", "none", "server"}[i%3]})
			require.NoError(t, err)
			params := fmt.Sprintf(`{"name":"answer","arguments":%s}`, args)
			h := map[string]string{"Mcp-Protocol-Version": version}
			if version >= wire.PerRequestVersion {
				params = fmt.Sprintf(`{"name":"answer","arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`, args, version)
				h["Mcp-Method"] = "tools/call"
				h["Mcp-Name"] = "answer"
			}
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
			wrote, written = wrote[:0], written[:0]
			var got [2]string
			for j, srv := range []*mcp.Server{plain, encoded} {
				sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
				w := httptest.NewRecorder()
				sdk.ServeHTTP(w, post(body, h))
				got[j] = w.Body.String()
			}
			assert.Contains(t, got[0], `"result"`, "version %s: %s", version, got[0])
			assert.Equal(t, got[0], got[1], "version %s", version)
			require.Equal(t, []bool{true}, wrote, "version %s", version)
			// The answer is the middleware's bytes, not the SDK's encoding
			// it falls back to when _meta changed after it.
			assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":`+string(written[0].raw)+"}", got[1], "version %s", version)
			if version >= wire.PerRequestVersion {
				assert.Contains(t, got[1], `"resultType":"complete"`)
				assert.Contains(t, got[1], `"io.modelcontextprotocol/serverInfo":`)
			} else {
				assert.NotContains(t, got[1], `"resultType"`)
			}
		}
	}
}

package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
)

// responseSeeds are results as the SDK marshals them (compact JSON) and the
// odd ones Encode leaves to the SDK.
var responseSeeds = []string{
	`{}`,
	`{"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true}}`,
	`{"a":"<&>\u2028 é"}`,
	`[1,2,3]`,
	`"s"`,
	`null`,
	"{\"a\":\n1}",
	`{ "a" : 1 }`,
	"{\"a\":\"\u2028\u2029 \xff\"}",
}

var idSeeds = []any{int64(0), int64(-7), int64(1 << 62), "abc", "", "a\"b", "a\\b", "é", "tab\t", "<&>"}

func FuzzEncodeMatchesSDK(f *testing.F) {
	for _, r := range responseSeeds {
		f.Add(r, int64(1), "", false)
		f.Add(r, int64(0), "x<y", true)
	}
	f.Fuzz(func(t *testing.T, result string, n int64, s string, stringID bool) {
		var id jsonrpc.ID
		var err error
		if stringID {
			id, err = jsonrpc.MakeID(s)
		} else {
			id, err = jsonrpc.MakeID(float64(n % (1 << 53)))
		}
		require.NoError(t, err)
		checkSameAsSDK(t, &jsonrpc.Response{ID: id, Result: json.RawMessage(result)})
	})
}

func TestEncodeMatchesSDK(t *testing.T) {
	for _, r := range responseSeeds {
		for _, raw := range idSeeds {
			id, err := jsonrpc.MakeID(raw)
			if err != nil {
				id, err = jsonrpc.MakeID(float64(raw.(int64)))
			}
			require.NoError(t, err)
			checkSameAsSDK(t, &jsonrpc.Response{ID: id, Result: json.RawMessage(r)})
		}
	}
	// Messages that are not successful responses.
	req, err := jsonrpc.MakeID(float64(3))
	require.NoError(t, err)
	checkSameAsSDK(t, &jsonrpc.Request{ID: req, Method: "ping", Params: json.RawMessage(`{}`)})
	checkSameAsSDK(t, &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"p":1}`)})
	checkSameAsSDK(t, &jsonrpc.Response{ID: req, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}})
	checkSameAsSDK(t, &jsonrpc.Response{ID: req})
	checkSameAsSDK(t, &jsonrpc.Response{Result: json.RawMessage(`{}`)})
}

// checkSameAsSDK requires Encode to give what jsonrpc.EncodeMessage gives,
// for every result the SDK itself would produce: compact, valid JSON (its
// marshaling of a handler's result), so the SDK's second compaction is a
// no-op on it; anything else must be left to the SDK.
func checkSameAsSDK(t *testing.T, msg jsonrpc.Message) {
	t.Helper()
	want, wantErr := jsonrpc.EncodeMessage(msg)
	got, gotErr := Encode(msg)
	// AppendEncode gives the same bytes after what the buffer holds,
	// whichever way Encode took; a small buffer must grow, not be
	// overwritten.
	appended, appendErr := AppendEncode(append(make([]byte, 0, 8), "data: "...), msg)
	require.Equal(t, gotErr != nil, appendErr != nil)
	if appendErr == nil {
		require.Equal(t, "data: "+string(got), string(appended))
	}
	if r, ok := msg.(*jsonrpc.Response); ok && len(r.Result) > 0 && !compactJSON(r.Result) {
		// Not what the SDK hands a transport; Encode must still never
		// frame a newline into the line.
		if gotErr == nil {
			require.NotContains(t, string(got), "\n")
		}
		return
	}
	require.Equal(t, wantErr != nil, gotErr != nil, "error: sdk %v, ours %v", wantErr, gotErr)
	require.Equal(t, string(want), string(got))
}

// compactJSON reports whether raw is valid JSON without insignificant
// whitespace, as the SDK's marshaling writes it.
func compactJSON(raw []byte) bool {
	var buf bytes.Buffer
	return json.Compact(&buf, raw) == nil && bytes.Equal(buf.Bytes(), raw)
}

// BenchmarkEncodeSearchAnswer compares Encode with the SDK's encoder on a
// search answer's size (the structured envelope and its text copy, 6 KB).
func BenchmarkEncodeSearchAnswer(b *testing.B) {
	items := make([]map[string]any, 10)
	for i := range items {
		items[i] = map[string]any{"cookbook_id": "bench.asana-tasks.invoice-02768", "version": "1.0.0", "entry_id": "invoice_send_recipe",
			"title": "Send starred invoices", "tags": []string{"invoice", "onboarding"}, "latest": true, "score": 0.21806415342568575}
	}
	env, _ := json.Marshal(map[string]any{"ok": true, "data": map[string]any{"items": items, "total": 12416}})
	result, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(env)}}, "structuredContent": json.RawMessage(env)})
	id, _ := jsonrpc.MakeID(float64(42))
	msg := &jsonrpc.Response{ID: id, Result: result}
	b.Run("sdk", func(b *testing.B) {
		b.SetBytes(int64(len(result)))
		for b.Loop() {
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(result)))
		for b.Loop() {
			if _, err := Encode(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

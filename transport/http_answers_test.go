package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// answerTestServer has tools that answer, notify about their call and make
// requests of the client, as real tools do.
func answerTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "answers", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}},
			StructuredContent: json.RawMessage(`{"ok":true,"tenant":"` + req.Extra.Header.Get("X-Tenant-Id") + `"}`)}, nil
	})
	s.AddTool(&mcp.Tool{Name: "notify", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		//nolint:staticcheck // deprecated in 2026-07-28, still served to older clients
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "about this call"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		// A request of the client that needs no client capability.
		_, err := req.Session.ListRoots(ctx, nil) //nolint:staticcheck // deprecated in 2026-07-28, still a request older clients get
		text := "answered"
		if err != nil {
			text = "refused"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	return s
}

// answerMessages are the JSON-RPC messages of one POST's answer: the data
// of each event of an event stream, or the JSON body.
func answerMessages(t *testing.T, w *httptest.ResponseRecorder) []any {
	t.Helper()
	var out []any
	add := func(data []byte) {
		var v any
		require.NoError(t, json.Unmarshal(data, &v), "%s", data)
		out = append(out, v)
	}
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		for event := range bytes.SplitSeq(w.Body.Bytes(), []byte("\n\n")) {
			for line := range bytes.SplitSeq(event, []byte("\n")) {
				if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					add(data)
				}
			}
		}
		return out
	}
	add(w.Body.Bytes())
	return out
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

// TestHTTPCallAnswers: a stateless tools/call POST of every protocol era
// before 2026-07-28, with and without a protocol header, is answered with
// an event stream carrying the notifications about the call and then its
// response, or, for a client that accepts only JSON, with the response
// alone as a JSON body. A request the server makes of the client fails
// (no session can answer it) and the call goes on.
func TestHTTPCallAnswers(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	server := answerTestServer()
	h := transport.NewHTTPHandler(transport.HTTPOptions{GetServer: func(*http.Request) *mcp.Server { return server }})
	result := func(id int, text string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
	}
	cases := []struct {
		name, body string
		stream     []string // the event stream's messages; the last is the JSON body
	}{
		{"echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,2,{"b":"c\"d"}]}}}`,
			[]string{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"a\":[1,2,{\"b\":\"c\\\"d\"}]}"}],"structuredContent":{"ok":true,"tenant":"t1"}}}`}},
		{"string id", `{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo"}}`,
			[]string{`{"jsonrpc":"2.0","id":"s-1","result":{"content":[{"type":"text","text":""}],"structuredContent":{"ok":true,"tenant":"t1"}}}`}},
		{"unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"missing","arguments":{}}}`,
			[]string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool \"missing\""}}`}},
		{"notifications", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"notify","arguments":{},"_meta":{"progressToken":"p1"}}}`,
			[]string{
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","message":"half","progress":1,"total":2}}`,
				`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"about this call","level":"warning"}}`,
				result(4, "done"),
			}},
		{"server request", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{}}}`,
			[]string{result(6, "refused")}},
	}
	for _, version := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, c := range cases {
			for _, stream := range []bool{true, false} {
				r := httptest.NewRequest(http.MethodPost, "/v1/mcp", strings.NewReader(c.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json")
				if stream {
					r.Header.Set("Accept", "application/json, text/event-stream")
				}
				r.Header.Set("X-Tenant-Id", "t1")
				if version != "" {
					r.Header.Set("Mcp-Protocol-Version", version)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				what := c.name + " " + version
				require.Equal(t, http.StatusOK, w.Code, "%s: %s", what, w.Body)
				assert.Equal(t, "no-cache, no-transform", w.Header().Get("Cache-Control"), what)
				want := []any{decodeJSON(t, c.stream[len(c.stream)-1])}
				if stream {
					assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"), what)
					want = want[:0]
					for _, m := range c.stream {
						want = append(want, decodeJSON(t, m))
					}
				} else {
					assert.Equal(t, "application/json", w.Header().Get("Content-Type"), what)
				}
				assert.Equal(t, want, answerMessages(t, w), what)
			}
		}
	}
}

// TestHTTPCallEndsWithItsPOST: a call sees its POST end (the client went
// away) as the end of its context, with ErrClientGone as the cause, and
// the POST's handler, its session and its goroutines end with it.
func TestHTTPCallEndsWithItsPOST(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	s.AddReceivingMiddleware(transport.CallContext())
	h := transport.NewHTTPHandler(transport.HTTPOptions{GetServer: func(*http.Request) *mcp.Server { return s }})
	for _, accept := range []string{"application/json, text/event-stream", "application/json"} {
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", accept)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
		<-started
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the POST did not end with its client", accept)
		}
		select {
		case cause := <-ended:
			assert.ErrorIs(t, cause, transport.ErrClientGone, accept)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the call was not cancelled", accept)
		}
	}
}

// TestHTTPCancelledNotificationEndsTheCall: a notifications/cancelled
// POST ends the running call it names (its id as go-sdk reads it: 41.0
// is 41), with ErrCancelledByClient as the cause, only for the same
// client; the call's POST then carries no result.
func TestHTTPCancelledNotificationEndsTheCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCancelledNotification)
}

func testCancelledNotification(t *testing.T) {
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	s.AddReceivingMiddleware(transport.CallContext())
	h := transport.NewHTTPHandler(transport.HTTPOptions{GetServer: func(*http.Request) *mcp.Server { return s }})
	post := func(body, tenant string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json")
		r.Header.Set("X-Tenant-Id", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	got := make(chan *httptest.ResponseRecorder, 1)
	go func() { got <- post(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"slow"}}`, "t1") }()
	<-started
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41.0,"reason":"user"}}`
	assert.Equal(t, http.StatusAccepted, post(cancel, "t2").Code)
	synctest.Wait()
	select {
	case cause := <-ended:
		t.Fatalf("another client cancelled the call: %v", cause)
	default:
	}
	assert.Equal(t, http.StatusAccepted, post(cancel, "t1").Code)
	select {
	case cause := <-ended:
		assert.ErrorIs(t, cause, transport.ErrCancelledByClient)
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled")
	}
	select {
	case w := <-got:
		assert.NotContains(t, w.Body.String(), `"result"`, "a cancelled request gets no result")
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled POST did not end")
	}
}

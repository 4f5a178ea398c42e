package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fastTestServer has tools that answer, fail, notify about their call and
// make requests of the client, as real tools do.
func fastTestServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fast", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}},
			StructuredContent: json.RawMessage(`{"ok":true,"tenant":"` + req.Extra.Header.Get("X-Tenant-Id") + `"}`)}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
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
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + boolText(err != nil)}}}, nil
	})
	return s
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// answer is what a client reads from one POST.
type answer struct {
	status      int
	contentType string
	messages    []any
}

func readAnswer(t *testing.T, w *httptest.ResponseRecorder) answer {
	t.Helper()
	a := answer{status: w.Code, contentType: w.Header().Get("Content-Type")}
	body := w.Body.Bytes()
	if strings.HasPrefix(a.contentType, "text/event-stream") {
		for event := range bytes.SplitSeq(body, []byte("\n\n")) {
			for line := range bytes.SplitSeq(event, []byte("\n")) {
				if name, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
					a.messages = append(a.messages, "event "+string(name))
				}
				if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					var v any
					require.NoError(t, json.Unmarshal(data, &v), "%s", data)
					a.messages = append(a.messages, v)
				}
			}
		}
		return a
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var v any
		if json.Unmarshal(body, &v) == nil {
			a.messages = append(a.messages, v)
		} else {
			a.messages = append(a.messages, strings.TrimSpace(string(body)))
		}
	}
	return a
}

func post(body string, header map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	return r.WithContext(context.WithValue(r.Context(), bodyKey{}, []byte(body)))
}

// TestFastCallsAnswerAsTheSDKDoes sends the same POSTs to the SDK's
// stateless handler and to the fast path: the same status, content type and
// messages, in both answer modes and every protocol version it serves.
func TestFastCallsAnswerAsTheSDKDoes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	server := fastTestServer()
	get := func(*http.Request) *mcp.Server { return server }
	fast := &fastCalls{getServer: get, logger: slog.New(slog.DiscardHandler)}
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,2,{"b":"c\"d"}]}}}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"missing","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"notify","arguments":{},"_meta":{"progressToken":"p1"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"notify"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{}}}`,
	}
	for _, version := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, jsonBody := range []bool{false, true} {
			sdk := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonBody})
			for _, body := range bodies {
				h := map[string]string{"X-Tenant-Id": "t1"}
				if version != "" {
					h["Mcp-Protocol-Version"] = version
				}
				ws := httptest.NewRecorder()
				sdk.ServeHTTP(ws, post(body, h))
				wf := httptest.NewRecorder()
				require.True(t, fast.serve(wf, post(body, h), jsonBody), "%s %s", version, body)
				want, got := readAnswer(t, ws), readAnswer(t, wf)
				assert.Equal(t, want, got, "version %q json %v: %s", version, jsonBody, body)
				assert.Equal(t, ws.Header().Get("Cache-Control"), wf.Header().Get("Cache-Control"))
				// An answer alone is one body of known length; one after
				// notifications about the call is streamed as they were.
				if cl := wf.Header().Get("Content-Length"); !jsonBody && strings.Contains(body, `"notify"`) {
					assert.Empty(t, cl, "version %q: %s", version, body)
				} else {
					assert.Equal(t, strconv.Itoa(wf.Body.Len()), cl, "version %q json %v: %s", version, jsonBody, body)
				}
			}
		}
	}
}

// TestFastCallsLeaveTheRestToTheSDK: every POST the fast path does not
// serve exactly as the SDK would goes to the SDK's handler.
func TestFastCallsLeaveTheRestToTheSDK(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	v := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
		maps.Copy(m, extra)
		return m
	}
	cases := map[string]*http.Request{
		"2026-07-28":            post(call, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}),
		"unsupported version":   post(call, map[string]string{"Mcp-Protocol-Version": "2099-01-01"}),
		"batch":                 post(`[`+call+`]`, v),
		"tools/list":            post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, v),
		"notification":          post(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`, v),
		"initialize":            post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, v),
		"malformed":             post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`, v),
		"not 2.0":               post(`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, v),
		"params not an object":  post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, v),
		"no params":             post(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, v),
		"meta protocol version": post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, v),
		"meta capabilities":     post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, v),
		"escaped meta key":      post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"\u0069o.modelcontextprotocol/protocolVersion":"x"}}}`, v),
		"text/plain":            post(call, with(map[string]string{"Content-Type": "text/plain"})),
		"accept json only":      post(call, with(map[string]string{"Accept": "application/json"})),
		"last event id":         post(call, with(map[string]string{"Last-Event-ID": "1"})),
	}
	get := func(*http.Request) *mcp.Server { return fastTestServer() }
	fast := &fastCalls{getServer: get, logger: slog.New(slog.DiscardHandler)}
	for name, r := range cases {
		w := httptest.NewRecorder()
		assert.False(t, fast.serve(w, r, false), name)
		assert.Zero(t, w.Body.Len(), name)
	}
	// A loopback listener reached under another host name (DNS
	// rebinding): the SDK refuses it.
	r := post(call, v)
	r.Host = "attacker.example:8080"
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &fakeAddr{"127.0.0.1:8080"}))
	assert.False(t, fast.serve(httptest.NewRecorder(), r, false))
	r.Host = "localhost:8080"
	assert.True(t, fast.serve(httptest.NewRecorder(), r, false), "the same request to localhost is served")
	// A progress token is all the _meta the fast path takes.
	ok := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":7}}}`, v)
	assert.True(t, fast.serve(httptest.NewRecorder(), ok, false))
}

type fakeAddr struct{ s string }

func (a *fakeAddr) Network() string { return "tcp" }
func (a *fakeAddr) String() string  { return a.s }

// TestFastCallEndsWithItsPOST: the call sees the POST's context, so the
// bridge's CallContext ends it when the client goes away, and the call's
// session and goroutines end with it.
func TestFastCallEndsWithItsPOST(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started, ended := make(chan struct{}), make(chan error, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	s.AddReceivingMiddleware(CallContext())
	fast := &fastCalls{getServer: func(*http.Request) *mcp.Server { return s }, logger: slog.New(slog.DiscardHandler)}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	carrier, cancel := context.WithCancelCause(context.Background())
	ctx := context.WithValue(context.WithValue(carrier, httpCallKey{}, carrier), bodyKey{}, body)
	r := post(string(body), map[string]string{"Mcp-Protocol-Version": "2025-11-25"}).WithContext(ctx)
	done := make(chan bool)
	go func() { done <- fast.serve(httptest.NewRecorder(), r, false) }()
	<-started
	cancel(context.Canceled)
	select {
	case served := <-done:
		assert.True(t, served)
	case <-time.After(10 * time.Second):
		t.Fatal("the POST did not end with its client")
	}
	select {
	case cause := <-ended:
		assert.ErrorIs(t, cause, ErrClientGone)
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled")
	}
}

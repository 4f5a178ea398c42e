package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCall is what the fake servers read of a request.
type fakeCall struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// fakeHTTPServer answers as a stateless Streamable HTTP server would:
// initialize with a JSON body, tool calls by name, some as an event stream
// whose answer follows a notification and a stray answer.
func fakeHTTPServer(t *testing.T, bearer string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer != "" && r.Header.Get("Authorization") != "Bearer "+bearer {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req fakeCall
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if req.Method != "initialize" {
			calls.Add(1)
			assert.Equal(t, RawProtocol, r.Header.Get("MCP-Protocol-Version"))
		}
		var result string
		switch {
		case req.Method == "initialize":
			result = `{"protocolVersion":"` + RawProtocol + `","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`
		case req.Params.Name == "ok":
			result = `{"content":[],"structuredContent":{"ok":true,"data":{},"error":null}}`
		case req.Params.Name == "refused":
			result = `{"content":[],"structuredContent":{"ok":false,"data":null,"error":{"code":"MCP_RATE_LIMITED"}},"isError":true}`
		case req.Params.Name == "stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n\n", req.ID+1000)
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[],\"structuredContent\":{\"ok\":true,\"data\":{},\"error\":null}}}\n\n", req.ID)
			return
		case req.Params.Name == "empty-stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
			return
		case req.Params.Name == "down":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"unknown tool"}}`, req.ID)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestRawHTTPReadsAnswers(t *testing.T) {
	srv, _ := fakeHTTPServer(t, "tok")
	ctx := context.Background()
	_, err := NewRawHTTP(ctx, srv.URL, "wrong", 2)
	require.Error(t, err, "a refused initialize fails the client")
	c, err := NewRawHTTP(ctx, srv.URL, "tok", 2)
	require.NoError(t, err)
	defer c.Close()

	call := func(tool string) string {
		d, code := c.Do(ctx, Op{Name: tool, Tool: tool}, nil, true)
		if code != CodeTransport {
			assert.Positive(t, d, tool)
		}
		return code
	}
	assert.Equal(t, "", call("ok"))
	assert.Equal(t, "MCP_RATE_LIMITED", call("refused"))
	assert.Equal(t, "", call("stream"), "the event answering the call is found among others")
	assert.Equal(t, CodeTransport, call("empty-stream"), "a stream without the answer")
	assert.Equal(t, CodeTransport, call("down"), "an HTTP error status")
	assert.Equal(t, CodeTransport, call("missing"), "a JSON-RPC error")
}

func TestRunRawHTTPStopsAtTheCallLimit(t *testing.T) {
	srv, calls := fakeHTTPServer(t, "")
	ctx := context.Background()
	c, err := NewRawHTTP(ctx, srv.URL, "", 4)
	require.NoError(t, err)
	defer c.Close()
	var made atomic.Int64
	op := Op{Name: "ok", Tool: "ok", Args: func(*rand.Rand) map[string]any { made.Add(1); return nil }}
	rec := RunRawHTTP(ctx, c, 4, op, Limits{Calls: 37, Duration: time.Minute}, 1)
	sum := rec.Summary("ok", HTTP, 0, 4)
	assert.Equal(t, 37, sum.Calls)
	assert.Empty(t, sum.Errors)
	assert.EqualValues(t, 37, calls.Load())
	assert.EqualValues(t, 37, made.Load())
	assert.Positive(t, sum.PerSecond)

	var r OpResult
	r.SetRaw(sum)
	assert.Equal(t, 37, r.RawCalls)
	assert.Equal(t, sum.PerSecond, r.RawPerSecond)
}

func TestProcessCPUGrowsWithWork(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	x := 0
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		x++
	}
	after, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, 50*time.Millisecond, "150 ms of spinning (%d rounds)", x)
	_, err = (&Server{}).CPUTime()
	assert.Error(t, err, "no process")
	assert.Equal(t, 250.0, PerCallUS(time.Millisecond, 4))
	assert.Zero(t, PerCallUS(time.Millisecond, 0))
}

func TestRunRawHTTPMixedPicksByWeight(t *testing.T) {
	srv, calls := fakeHTTPServer(t, "")
	ctx := context.Background()
	c, err := NewRawHTTP(ctx, srv.URL, "", 2)
	require.NoError(t, err)
	defer c.Close()
	s := &Server{Tools: map[string]*mcp.Tool{"ok": {}, "refused": {}}}
	ops := map[string]Op{
		"a": {Name: "a", Tool: "ok", Args: func(*rand.Rand) map[string]any { return nil }},
		"b": {Name: "b", Tool: "refused", Args: func(*rand.Rand) map[string]any { return nil }},
		"c": {Name: "c", Tool: "unregistered", Args: func(*rand.Rand) map[string]any { return nil }},
	}
	rec := RunRawHTTPMixed(ctx, c, s, 2, ops, []Weight{{"a", 3}, {"b", 1}, {"c", 100}}, Limits{Calls: 400, Duration: time.Minute}, 1)
	sum := rec.Summary("mix", HTTP, 0, 2)
	assert.Equal(t, 400, sum.Calls)
	assert.EqualValues(t, 400, calls.Load(), "the unregistered tool is never called")
	refused := sum.Errors["MCP_RATE_LIMITED"]
	assert.InDelta(t, 100, refused, 40, "about a quarter of the calls go to the weight-1 operation")

	none := RunRawHTTPMixed(ctx, c, s, 2, ops, []Weight{{"c", 1}}, Limits{Calls: 10, Duration: time.Minute}, 1)
	assert.Zero(t, none.Summary("none", HTTP, 0, 2).Calls)
}

// TestReadCallReadsAsOutcome holds the one-pass reading of an answer to the
// general one (the message decoded, then its result into maps) for answers
// of every shape, as a JSON body and as an event stream.
func TestReadCallReadsAsOutcome(t *testing.T) {
	results := []string{
		`{"content":[],"structuredContent":{"ok":true,"data":{"x":[1,2]},"error":null}}`,
		`{"structuredContent":{"ok":false,"error":{"code":"MCP_NOT_FOUND","message":"m"}},"isError":true}`,
		`{"structuredContent":{"ok":false,"error":null},"isError":true}`,
		`{"structuredContent":{"ok":false}}`,
		`{"structuredContent":{"ok":false,"error":{"message":"no code"}}}`,
		`{"structuredContent":{"ok":"yes"}}`,
		`{"structuredContent":{"ok":true,"error":"a string"}}`,
		`{"structuredContent":{"ok":false,"error":"a string"}}`,
		`{"structuredContent":{"ok":false,"error":{"code":7}}}`,
		`{"structuredContent":{"data":{}}}`,
		`{"structuredContent":{"OK":true}}`,
		`{"structuredContent":{"ok":false,"Error":{"code":"X"}}}`,
		`{"structuredContent":{"ok":false,"error":{"Code":"X"}}}`,
		`{"structuredContent":{"ok":true,"ok":false,"error":{"code":"LAST"}}}`,
		`{"StructuredContent":{"ok":true},"IsError":true}`,
		`{"structuredContent":[1,2]}`,
		`{"structuredContent":"text"}`,
		`{"structuredContent":null}`,
		`{"content":[{"type":"text","text":"{\"ok\":true}"}]}`,
		`{"isError":true}`,
		`{"isError":"true","structuredContent":{"ok":true}}`,
		`{}`,
		`null`,
		`[]`,
		`"result"`,
	}
	for _, result := range results {
		for _, envelopes := range []bool{true, false} {
			msg := `{"jsonrpc":"2.0","id":7,"result":` + result + `}`
			want := outcome(json.RawMessage(result), envelopes)
			assert.Equal(t, want, readCall([]byte(msg), false, 7, envelopes), "%s (envelopes %v)", result, envelopes)
			stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"event: message\ndata: " + msg + "\n\n"
			assert.Equal(t, want, readCall([]byte(stream), true, 7, envelopes), "streamed %s", result)
		}
	}

	assert.Equal(t, "", outcome(json.RawMessage(`{"IsError":true}`), false), "keys match exactly, as the go-sdk client matches them")
	assert.Equal(t, CodeNoEnvelope, outcome(json.RawMessage(`{"structuredContent":{"OK":true}}`), true))

	errAnswer := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool"}}`
	assert.Equal(t, CodeTransport, readCall([]byte(errAnswer), false, 7, true), "a JSON-RPC error")
	assert.Equal(t, CodeTransport, readCall([]byte(`{"jsonrpc":"2.0","id":8,"result":{}}`), false, 7, true), "another call's answer")
	assert.Equal(t, CodeTransport, readCall([]byte(`{"jsonrpc":"2.0","id":7,"result":`), false, 7, true), "a cut answer")
	assert.Equal(t, CodeTransport, readCall([]byte(`{"jsonrpc":"2.0","id":7}`), false, 7, true), "no result")
	assert.Equal(t, CodeTransport, readCall([]byte(`{"jsonrpc":"2.0","ID":7,"result":{"structuredContent":{"ok":true}}}`), false, 7, true), "an id spelled otherwise")
	assert.Equal(t, CodeTransport, readCall([]byte(`{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"ok":true}}} {}`), false, 7, true), "bytes after the answer")

	ok := `{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"ok":true}}}`
	stray := `{"jsonrpc":"2.0","id":9,"result":{"structuredContent":{"ok":false,"error":{"code":"X"}}}}`
	split := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"structuredContent\":{\"ok\":false,\"error\":{\"code\":\"SPLIT\"}}}}\n\n"
	for name, c := range map[string]struct {
		body, want string
	}{
		"answer before a stray one": {"data: " + ok + "\n\ndata: " + stray + "\n\n", ""},
		"answer after a stray one":  {"data: " + stray + "\n\ndata: " + ok + "\n\n\n", ""},
		"data split over lines":     {split, "SPLIT"},
		"no data":                   {"event: message\n\n: comment\n\n", CodeTransport},
		"empty":                     {"", CodeTransport},
	} {
		assert.Equal(t, c.want, readCall([]byte(c.body), true, 7, true), name)
	}
}

// TestRawHTTPConnections: the bare client keeps connections alive, dials
// anew when the server closes one (at once, or idle past its timeout), and
// gives up a call whose server hangs when its context ends.
func TestRawHTTPConnections(t *testing.T) {
	var conns, closed, calls atomic.Int64
	hang := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req fakeCall
		body, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(body, &req))
		calls.Add(1)
		switch req.Params.Name {
		case "close":
			w.Header().Set("Connection", "close")
		case "hang":
			<-hang
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"structuredContent":{"ok":true}}}`, req.ID)
	}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	defer close(hang)

	ctx := context.Background()
	c, err := NewRawHTTP(ctx, srv.URL+"/v1/mcp", "", 2)
	require.NoError(t, err)
	defer c.Close()
	do := func(tool string) string {
		_, code := c.Do(ctx, Op{Name: tool, Tool: tool}, nil, true)
		return code
	}
	for range 5 {
		assert.Equal(t, "", do("ok"))
	}
	assert.EqualValues(t, 1, conns.Load(), "one connection kept alive for initialize and five calls")

	assert.Equal(t, "", do("close"))
	assert.Equal(t, "", do("ok"))
	assert.EqualValues(t, 2, conns.Load(), "a new connection after the server closed one")

	// The server closes the idle connection after its idle timeout; the
	// client has not noticed.
	require.Eventually(t, func() bool { return closed.Load() == 2 }, 10*time.Second, 10*time.Millisecond)
	before := calls.Load()
	assert.Equal(t, "", do("ok"), "a connection closed while idle is replaced, the call made once")
	assert.EqualValues(t, before+1, calls.Load())
	assert.EqualValues(t, 3, conns.Load())

	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, code := c.Do(cctx, Op{Name: "hang", Tool: "hang"}, nil, true)
	assert.Equal(t, CodeTransport, code)
	assert.Less(t, time.Since(start), 5*time.Second, "the call ends with its context")

	_, err = NewRawHTTP(ctx, "https://"+srv.Listener.Addr().String(), "", 1)
	assert.ErrorContains(t, err, "http:// endpoint")
}

// TestTailBufferKeepsTheLastBytes: the server's log tail is its last 64 KiB,
// however it was written.
func TestTailBufferKeepsTheLastBytes(t *testing.T) {
	var tb tailBuffer
	var all []byte
	for i := range 5000 {
		line := fmt.Appendf(nil, "line %d %s\n", i, strings.Repeat("x", i%300))
		all = append(all, line...)
		n, err := tb.Write(line)
		require.NoError(t, err)
		require.Equal(t, len(line), n)
		if i%997 == 0 {
			want := all[max(len(all)-tailKeep, 0):]
			require.Equal(t, string(want), tb.String(), "after line %d", i)
		}
	}
	assert.Equal(t, string(all[len(all)-tailKeep:]), tb.String())
	assert.LessOrEqual(t, len(tb.b), 2*tailKeep)
	big := []byte(strings.Repeat("y", 3*tailKeep))
	_, _ = tb.Write(big)
	assert.Equal(t, string(big[len(big)-tailKeep:]), tb.String())
}

package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/transport/frontend"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// daemons is a row of fake daemons: each dial connects to a new one, an MCP
// server with a few tools, over an in-memory pipe, as the real daemon
// serves an attached stream.
type daemons struct {
	t       *testing.T
	mu      sync.Mutex
	started []*fakeDaemon
	// refuse makes dials fail while set.
	refuse atomic.Bool
	// notStarted makes the next daemon answer every tools/call with
	// CodeNotStarted (a daemon shutting down).
	notStarted atomic.Bool
	// entered receives the name of each blocking call when it starts.
	entered chan string
}

type fakeDaemon struct {
	n    int
	conn net.Conn
	ss   *mcp.ServerSession
	// calls counts tools/call requests that reached this daemon.
	calls atomic.Int64
	// grown are the arguments of the "grow" calls it received.
	growMu sync.Mutex
	grown  []string
}

func (fd *fakeDaemon) grownArgs() []string {
	fd.growMu.Lock()
	defer fd.growMu.Unlock()
	return append([]string(nil), fd.grown...)
}

func (d *daemons) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	if d.refuse.Load() {
		return nil, errors.New("no daemon (test)")
	}
	d.mu.Lock()
	fd := &fakeDaemon{n: len(d.started) + 1}
	d.started = append(d.started, fd)
	d.mu.Unlock()
	notStarted := d.notStarted.Swap(false)
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-daemon", Version: fmt.Sprint(fd.n)}, nil)
	obj := &mcp.Tool{InputSchema: map[string]any{"type": "object"}}
	add := func(name string, h mcp.ToolHandler) {
		tool := *obj
		tool.Name = name
		srv.AddTool(&tool, h)
	}
	add("echo", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("daemon %d", fd.n)}}}, nil
	})
	// grow stands for vaultclaw_toolset_enable: a call that shapes the
	// session, which a new daemon must get again.
	add("grow", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fd.growMu.Lock()
		fd.grown = append(fd.grown, string(req.Params.Arguments))
		fd.growMu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil
	})
	block := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		d.entered <- req.Params.Name
		<-ctx.Done()
		return nil, ctx.Err()
	}
	add("block_read", block)
	add("block_write", block)
	add("progress", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 3 {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	add("ask", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "open it", URL: "https://vault.example/approve", ElicitationID: "e1"})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "elicit failed: " + err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: " + res.Action}}}, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				fd.calls.Add(1)
				if notStarted {
					return nil, &jsonrpc.Error{Code: transport.CodeNotStarted, Message: "shutting down"}
				}
			}
			return next(ctx, method, req)
		}
	})
	a, b := net.Pipe()
	fd.conn = b
	ss, err := srv.Connect(context.Background(), &transport.AttachTransport{Conn: b, Session: fmt.Sprintf("c-%d", fd.n)}, nil)
	require.NoError(d.t, err)
	fd.ss = ss
	return a, nil
}

func (d *daemons) get(i int) *fakeDaemon {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started[i]
}

func (d *daemons) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.started)
}

// kill drops daemon i's end of the stream, as a SIGKILL does.
func (d *daemons) kill(i int) { d.get(i).conn.Close() }

type harness struct {
	d       *daemons
	cs      *mcp.ClientSession
	done    chan error
	prog    chan *mcp.ProgressNotificationParams
	changed chan struct{}
}

// writes is the front end's view of which tools change state.
func writes(name string) bool { return name != "block_read" && name != "echo" && name != "progress" }

func start(t *testing.T) *harness {
	t.Helper()
	return startAt(t, "2025-11-25")
}

// startAt is start with a client of protocol version (go-sdk's latest,
// 2026-07-28, when empty).
func startAt(t *testing.T, version string) *harness {
	t.Helper()
	d := &daemons{t: t, entered: make(chan string, 8)}
	cin, feIn := io.Pipe()
	feOut, cout := io.Pipe()
	h := &harness{d: d, done: make(chan error, 1), prog: make(chan *mcp.ProgressNotificationParams, 16), changed: make(chan struct{}, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		h.done <- frontend.Run(ctx, frontend.Options{In: cin, Out: cout, Dial: d.dial, Writes: writes, ReplayTimeout: 5 * time.Second,
			SessionTools: []string{"grow"}})
		cout.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "7"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { h.prog <- r.Params },
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { h.changed <- struct{}{} },
	})
	// start: 2025-11-25, the protocol of today's clients, with a session
	// that initializes (a handler of list_changed would otherwise make
	// go-sdk speak 2026-07-28).
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: feOut, Writer: feIn}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	h.cs = cs
	t.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case err := <-h.done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("the front end did not stop")
		}
	})
	return h
}

func (h *harness) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

func TestForwardsToTheDaemon(t *testing.T) {
	h := start(t)
	assert.Equal(t, "daemon 1", text(h.call(t, "echo", nil)))
	ip := h.d.get(0).ss.InitializeParams()
	require.NotNil(t, ip)
	assert.Equal(t, "test-client", ip.ClientInfo.Name, "the client's own initialize reached the daemon")
	assert.Equal(t, 1, h.d.count(), "one stream for the session")
}

func TestProgressReachesTheClient(t *testing.T) {
	h := start(t)
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	p.SetProgressToken("tok-1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.cs.CallTool(ctx, p)
	require.NoError(t, err)
	for i := range 3 {
		select {
		case n := <-h.prog:
			assert.Equal(t, "tok-1", n.ProgressToken)
			assert.Equal(t, float64(i+1), n.Progress)
		case <-time.After(5 * time.Second):
			t.Fatalf("progress notification %d missing", i+1)
		}
	}
}

// startBlocking runs a blocking call in the background and waits until
// the daemon has it.
func (h *harness) startBlocking(t *testing.T, name string, args map[string]any) <-chan *mcp.CallToolResult {
	t.Helper()
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		assert.NoError(t, err)
		out <- res
	}()
	select {
	case got := <-h.d.entered:
		require.Equal(t, name, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never reached the daemon", name)
	}
	return out
}

func envelopeOf(t *testing.T, ch <-chan *mcp.CallToolResult) mcptest.Envelope {
	t.Helper()
	select {
	case res := <-ch:
		require.NotNil(t, res)
		env, err := mcptest.Decode(res)
		require.NoError(t, err)
		return env
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was never answered")
	}
	return mcptest.Envelope{}
}

func TestDaemonDeathFailsInFlightCallsAndTheNextOneGoesThrough(t *testing.T) {
	h := start(t)
	read := h.startBlocking(t, "block_read", nil)
	write := h.startBlocking(t, "block_write", map[string]any{"idempotency_key": "idem-1"})
	h.d.kill(0)

	r := envelopeOf(t, read)
	assert.Equal(t, "MCP_NETWORK_ERROR", r.Code())
	assert.Equal(t, "network", r.Error.Category)
	assert.True(t, r.Error.Retryable, "a read call cut off can simply be retried")
	assert.Equal(t, frontend.ReasonConnectionLost, r.Details()["reason"])

	w := envelopeOf(t, write)
	assert.Equal(t, "MCP_NETWORK_ERROR", w.Code())
	assert.False(t, w.Error.Retryable, "a write cut off may have run")
	assert.Equal(t, true, w.Details()["outcome_unknown"])
	assert.Equal(t, "idem-1", w.Details()["idempotency_key"], "the key to retry with is handed back")

	// The session goes on against a new daemon, re-initialised for the
	// client.
	assert.Equal(t, "daemon 2", text(h.call(t, "echo", nil)))
	ip := h.d.get(1).ss.InitializeParams()
	require.NotNil(t, ip, "the front end replayed initialize")
	assert.Equal(t, "test-client", ip.ClientInfo.Name)
	assert.Equal(t, "7", ip.ClientInfo.Version)
	// And it still lists tools (an ordinary request after the replay).
	tl, err := h.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, tl.Tools, 6)
}

func TestNoDaemonFailsTheRequestRetryablyUntilOneIsBack(t *testing.T) {
	h := start(t)
	h.d.refuse.Store(true)
	h.d.kill(0)
	// Wait until the front end has noticed.
	require.Eventually(t, func() bool {
		res := h.call(t, "echo", nil)
		return res.IsError
	}, 5*time.Second, 20*time.Millisecond)
	env, err := mcptest.Decode(h.call(t, "echo", nil))
	require.NoError(t, err)
	assert.Equal(t, "MCP_NETWORK_ERROR", env.Code())
	assert.True(t, env.Error.Retryable)
	assert.Equal(t, frontend.ReasonDaemonUnavailable, env.Details()["reason"])
	assert.Contains(t, env.Error.Message, "no daemon (test)", "says why")

	// Other requests get a JSON-RPC error with the same facts.
	_, err = h.cs.ListTools(context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not be reached")

	h.d.refuse.Store(false)
	assert.Equal(t, "daemon 2", text(h.call(t, "echo", nil)))
}

func TestCallANotStartingDaemonRefusesIsSentToTheNextOne(t *testing.T) {
	h := start(t)
	assert.Equal(t, "daemon 1", text(h.call(t, "echo", nil)))
	// Daemon 1 starts shutting down: it answers "not started".
	h.d.kill(0)
	require.Eventually(t, func() bool {
		h.d.refuse.Store(true)
		defer h.d.refuse.Store(false)
		return h.call(t, "echo", nil).IsError
	}, 5*time.Second, 20*time.Millisecond)
	h.d.notStarted.Store(true) // daemon 2 will refuse
	res := h.call(t, "echo", nil)
	assert.False(t, res.IsError)
	assert.Equal(t, "daemon 3", text(res), "the refused call went to the next daemon, invisibly")
	assert.Equal(t, int64(1), h.d.get(1).calls.Load(), "daemon 2 saw it once and refused it")
}

// rawFrontend drives a front end with raw lines, as a client's stdin.
func rawFrontend(t *testing.T) (*daemons, io.Writer, *bufio.Reader) {
	t.Helper()
	d := &daemons{t: t, entered: make(chan string, 8)}
	cin, feIn := io.Pipe()
	feOut, cout := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- frontend.Run(ctx, frontend.Options{In: cin, Out: cout, Dial: d.dial, Writes: writes}) }()
	t.Cleanup(func() {
		cancel()
		feIn.Close()
		feOut.Close()
		assert.NoError(t, <-done)
	})
	return d, feIn, bufio.NewReader(feOut)
}

func recvLine(t *testing.T, r *bufio.Reader) map[string]any {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		ch <- l
	}()
	select {
	case l := <-ch:
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
	return nil
}

func TestGarbageGetsAParseErrorAndTheSessionGoesOn(t *testing.T) {
	_, w, r := rawFrontend(t)
	_, err := io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, 1.0, recvLine(t, r)["id"])
	_, err = io.WriteString(w, "this is not json {\n")
	require.NoError(t, err)
	perr := recvLine(t, r)
	assert.Nil(t, perr["id"])
	assert.Equal(t, -32700.0, perr["error"].(map[string]any)["code"])
	_, err = io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`+"\n")
	require.NoError(t, err)
	list := recvLine(t, r)
	assert.Equal(t, "two", list["id"], "the front end keeps serving after a parse error")
	assert.NotEmpty(t, list["result"].(map[string]any)["tools"])
	// A Content-Length framed request gets a framed answer.
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	_, err = fmt.Fprintf(w, "Content-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	assert.Equal(t, 3.0, recvFramed(t, r)["id"])
	// A pretty-printed framed request (one message over several lines)
	// reaches the daemon whole and is answered.
	body = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"four\",\n  \"method\": \"tools/call\",\n  \"params\": {\"name\": \"echo\", \"arguments\": {}}\n}"
	_, err = fmt.Fprintf(w, "Content-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	four := recvFramed(t, r)
	assert.Equal(t, "four", four["id"])
	assert.NotNil(t, four["result"], "%v", four)
}

// recvFramed reads one Content-Length framed message.
func recvFramed(t *testing.T, r *bufio.Reader) map[string]any {
	t.Helper()
	type framed struct {
		header, blank string
		body          []byte
		err           error
	}
	ch := make(chan framed, 1)
	go func() {
		var f framed
		defer func() { ch <- f }()
		if f.header, f.err = r.ReadString('\n'); f.err != nil {
			return
		}
		if f.blank, f.err = r.ReadString('\n'); f.err != nil {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(f.header, "Content-Length: ")))
		if f.err = err; err != nil {
			return
		}
		f.body = make([]byte, n)
		_, f.err = io.ReadFull(r, f.body)
	}()
	select {
	case f := <-ch:
		require.NoError(t, f.err, "%q", f.header)
		require.True(t, strings.HasPrefix(f.header, "Content-Length: "), f.header)
		require.Equal(t, "\r\n", f.blank)
		var m map[string]any
		require.NoError(t, json.Unmarshal(f.body, &m), string(f.body))
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no framed reply")
	}
	return nil
}

func TestDialFailureAtLaunchIsTheError(t *testing.T) {
	d := &daemons{t: t}
	d.refuse.Store(true)
	err := frontend.Run(context.Background(), frontend.Options{In: strings.NewReader(""), Out: io.Discard, Dial: d.dial})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no daemon (test)")
}

// A session shaped by calls (toolsets enabled) keeps its shape on the next
// daemon: each distinct call is replayed after initialize, and the client
// is told to list again.
func TestANewDaemonGetsTheCallsThatShapedTheSession(t *testing.T) {
	h := start(t)
	p := &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{"toolset": "catalog"}}
	p.SetProgressToken("first-call-only")
	_, err := h.cs.CallTool(context.Background(), p)
	require.NoError(t, err)
	h.call(t, "grow", map[string]any{"toolset": "vault"})
	h.call(t, "grow", map[string]any{"toolset": "catalog"})
	h.call(t, "echo", nil)
	assert.Len(t, h.d.get(0).grownArgs(), 3)
	select {
	case <-h.changed:
		t.Fatal("no list_changed while the daemon stays")
	default:
	}

	h.d.kill(0)
	// A call sent before the front end notices is answered retryably.
	require.Eventually(t, func() bool { return text(h.call(t, "echo", nil)) == "daemon 2" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{`{"toolset":"catalog"}`, `{"toolset":"vault"}`}, h.d.get(1).grownArgs(),
		"each distinct call once, in order, before the client's own request")
	select {
	case <-h.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the client was not told to list again on the new daemon")
	}
}

// A 2026-07-28 client never initializes; its shaping calls are replayed
// all the same.
func TestANewDaemonGetsTheShapingCallsOfANewProtocolClient(t *testing.T) {
	h := startAt(t, "")
	require.Equal(t, "2026-07-28", h.cs.InitializeResult().ProtocolVersion)
	h.call(t, "grow", map[string]any{"toolset": "vault"})
	h.d.kill(0)
	require.Eventually(t, func() bool { return text(h.call(t, "echo", nil)) == "daemon 2" }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{`{"toolset":"vault"}`}, h.d.get(1).grownArgs())
}

// TestEndOfInputAnswersTheDaemonsRequests: a daemon request (a URL
// elicitation) waiting on the client when its input ends is answered
// CodeClientGone at once, so the call it belongs to answers and the front
// end ends, instead of both waiting on an answer that cannot come.
func TestEndOfInputAnswersTheDaemonsRequests(t *testing.T) {
	_, w, r := rawFrontend(t)
	_, err := io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	require.NoError(t, err)
	require.NotNil(t, recvLine(t, r)["result"])
	_, err = io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`+"\n")
	require.NoError(t, err)
	ask := recvLine(t, r)
	require.Equal(t, "elicitation/create", ask["method"], "%v", ask)
	require.NoError(t, w.(io.Closer).Close())
	res := recvLine(t, r)
	assert.EqualValues(t, 2, res["id"])
	text := res["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	assert.Contains(t, text, "elicit failed")
	assert.Contains(t, text, "input has ended")
}

// slowOut is a client's stdout that takes a while to accept each write
// (a busy client, a full pipe).
type slowOut struct{ syncbuf.Buffer }

func (s *slowOut) Write(p []byte) (int, error) {
	time.Sleep(150 * time.Millisecond)
	return s.Buffer.Write(p)
}

// A client that writes its requests and closes its input (a script piping
// into a launch) gets every answer: Run returns, and the process exits,
// only after the last one is written.
func TestEndOfInputReturnsAfterTheLastAnswerIsWritten(t *testing.T) {
	d := &daemons{t: t, entered: make(chan string, 8)}
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}` + "\n")
	out := &slowOut{}
	require.NoError(t, frontend.Run(context.Background(), frontend.Options{In: in, Out: out, Dial: d.dial, Writes: writes}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, "both answers written before Run returned: %q", out.String())
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &last))
	assert.EqualValues(t, 2, last["id"])
	assert.Contains(t, lines[1], "daemon 1")
}

package transport

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/accordsai/accords-mcp/transport/wire"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastCalls serves the POST nearly every HTTP client sends, one tools/call
// of an initialize-era protocol (2025-11-25 and before), without the SDK's Streamable
// HTTP handler, which decodes such a body six or seven times (each with a
// fresh 32 KiB buffer) and encodes the answer once more: about a quarter of
// an HTTP call's server CPU, and more through the GC. The call still runs
// in an ephemeral SDK session with the state the SDK's stateless handler
// gives it, so everything from the session inwards (middleware, gateway,
// tool) is the same code. Any other POST (another method or protocol
// version, a batch, a malformed body, request _meta beyond a progress
// token, a header the SDK would refuse) goes to the SDK's handler.
type fastCalls struct {
	getServer func(*http.Request) *mcp.Server
	logger    *slog.Logger
}

// fastVersions are the protocol versions served here, by the
// Mcp-Protocol-Version header, with the version the session is given: the
// initialize era's, the header's absence meaning 2025-03-26 as it does to
// the SDK. 2026-07-28 brings per-request state and header checks the SDK's
// handler applies. Only versions the SDK supports are kept.
var fastVersions = func() map[string]string {
	m := map[string]string{}
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		if slices.Contains(mcp.SupportedProtocolVersions(), v) {
			m[v] = v
		}
	}
	if v, ok := m["2025-03-26"]; ok {
		m[""] = v
	}
	return m
}()

// bodyKey carries the POST body, read once by the bridge, to the dispatch.
type bodyKey struct{}

// serve answers r if it is a fast call and reports whether it did. jsonBody
// selects an application/json answer (bridge clients that do not accept an
// event stream) over a one-event SSE stream.
func (f *fastCalls) serve(w http.ResponseWriter, r *http.Request, jsonBody bool) bool {
	body, _ := r.Context().Value(bodyKey{}).([]byte)
	req, version, ok := fastCall(r, body)
	if !ok {
		return false
	}
	server := f.getServer(r)
	if server == nil {
		return false
	}
	req.Extra = &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	conn := newPostConn(req, w, jsonBody)
	// The state the SDK's stateless handler synthesizes for a request
	// without initialize.
	state := &mcp.ServerSessionState{
		InitializeParams:  &mcp.InitializeParams{ProtocolVersion: version},
		InitializedParams: &mcp.InitializedParams{},
		LogLevel:          "info",
	}
	ss, err := server.Connect(r.Context(), postTransport{conn}, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		f.logger.Error("failed to connect a call's session", "error", err.Error())
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return true
	}
	select {
	case <-conn.answered:
	case <-r.Context().Done():
	}
	conn.finish()
	_ = ss.Close()
	return true
}

// fastCall returns the request of a fast call and its protocol version.
func fastCall(r *http.Request, body []byte) (*jsonrpc.Request, string, bool) {
	version, ok := fastVersions[r.Header.Get("Mcp-Protocol-Version")]
	if !ok || r.Method != http.MethodPost || len(body) == 0 ||
		len(r.Header.Values("Last-Event-ID")) > 0 || !jsonContent(r.Header.Get("Content-Type")) ||
		!acceptsBoth(r.Header.Values("Accept")) || foreignHost(r) {
		return nil, "", false
	}
	msg, err := wire.Decode(body)
	if err != nil {
		return nil, "", false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() || !plainParams(req.Params) {
		return nil, "", false
	}
	return req, version, true
}

// plainParams reports whether params is an object whose _meta, if any,
// holds nothing but a progress token: no per-request protocol version (the
// SDK checks it against the header) and no client capabilities.
func plainParams(params json.RawMessage) bool {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return false
	}
	raw, ok := p["_meta"]
	if !ok {
		return true
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil || meta == nil {
		return false
	}
	for k := range meta {
		if k != "progressToken" {
			return false
		}
	}
	return true
}

func jsonContent(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// acceptsBoth is the SDK's own test of Accept: both JSON and an event
// stream, by exact type, by type wildcard or by */*.
func acceptsBoth(values []string) bool {
	jsonOK, streamOK := false, false
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// foreignHost: a request to a loopback listener naming another host, which
// the SDK's handler refuses (DNS rebinding); it is left to refuse it.
func foreignHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopbackHost(local.String()) {
		return false
	}
	return !isLoopbackHost(r.Host)
}

// postTransport hands the SDK a connection made already.
type postTransport struct{ c *postConn }

func (t postTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// postConn is the connection of one POST: it reads the request, then the
// answers of any request the server makes (refused: a stateless client
// cannot answer), and writes the response and the notifications about the
// call before it to the POST's answer.
type postConn struct {
	req      *jsonrpc.Request
	w        http.ResponseWriter
	jsonBody bool

	mu       sync.Mutex
	read     bool
	finished bool
	started  bool
	answered chan struct{}
	// replies are errors answering the server's own requests.
	replies chan jsonrpc.Message
	closed  chan struct{}
	once    sync.Once
}

func newPostConn(req *jsonrpc.Request, w http.ResponseWriter, jsonBody bool) *postConn {
	return &postConn{req: req, w: w, jsonBody: jsonBody, answered: make(chan struct{}),
		replies: make(chan jsonrpc.Message, 4), closed: make(chan struct{})}
}

func (c *postConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	first := !c.read
	c.read = true
	c.mu.Unlock()
	if first {
		return c.req, nil
	}
	select {
	case m := <-c.replies:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *postConn) Write(_ context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if m.ID != c.req.ID {
			return nil
		}
		return c.answer(m)
	case *jsonrpc.Request:
		if m.IsCall() {
			// As the SDK's stateless handler: the server cannot make
			// requests of a client that keeps no session. Answered with
			// an error here, so only that request fails.
			select {
			case c.replies <- &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "stateless servers cannot make requests"}}:
			case <-c.closed:
			}
			return nil
		}
		if c.jsonBody || broadcast(m.Method) {
			// A JSON answer carries only the response; a change
			// notification is about no call (the SDK drops both).
			return nil
		}
		data, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return err
		}
		c.deliver(data, false)
	}
	return nil
}

// broadcast reports notifications a server sends every session, about no
// call in particular.
func broadcast(method string) bool {
	return strings.HasSuffix(method, "/list_changed") || method == "notifications/resources/updated"
}

// deliver writes one message to the POST's answer, unless the answer is
// over.
func (c *postConn) deliver(data []byte, final bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	if !c.started {
		c.started = true
		c.setHeaders()
	}
	if c.jsonBody {
		_, _ = c.w.Write(data)
	} else {
		buf := make([]byte, 0, len(sseHead)+len(data)+len(sseTail))
		buf = append(append(append(buf, sseHead...), data...), sseTail...)
		_, _ = c.w.Write(buf)
		_ = http.NewResponseController(c.w).Flush()
	}
	if final {
		c.finished = true
		close(c.answered)
	}
}

// answerBuffers hold a call's answer while it is written: net/http has
// copied it or written it out when Write returns.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// answer writes the response. When nothing was written before it, the
// usual case, the answer is one body of known length (one SSE event, or
// the JSON) written once from a pooled buffer: the stream needs neither
// chunked framing nor a flush of its own, and the answer goes out in about
// one write(2) instead of two or three.
func (c *postConn) answer(m *jsonrpc.Response) error {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		data, err := wire.Encode(m)
		if err != nil {
			return err
		}
		c.deliver(data, true)
		return nil
	}
	bp := answerBuffers.Get().(*[]byte)
	defer answerBuffers.Put(bp)
	buf := (*bp)[:0]
	if !c.jsonBody {
		buf = append(buf, sseHead...)
	}
	buf, err := wire.AppendEncode(buf, m)
	if err != nil {
		return err
	}
	if !c.jsonBody {
		buf = append(buf, sseTail...)
	}
	if cap(buf) <= maxPooledAnswer {
		*bp = buf
	}
	c.deliverWhole(buf)
	return nil
}

const (
	sseHead = "event: message\ndata: "
	sseTail = "\n\n"
	// maxPooledAnswer keeps a rare huge answer's buffer out of the pool.
	maxPooledAnswer = 256 << 10
)

// deliverWhole writes the whole answer, framed already: with its length
// when nothing was written before it, else as the stream's last event.
func (c *postConn) deliverWhole(body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	if c.started {
		// A notification got in first: body is already framed.
		_, _ = c.w.Write(body)
		if !c.jsonBody {
			_ = http.NewResponseController(c.w).Flush()
		}
	} else {
		c.started = true
		c.setHeaders()
		c.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = c.w.Write(body)
	}
	c.finished = true
	close(c.answered)
}

func (c *postConn) setHeaders() {
	h := c.w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	if c.jsonBody {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
	}
}

// finish ends the answer: nothing is written to it after the handler
// returns.
func (c *postConn) finish() {
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
}

func (c *postConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *postConn) SessionID() string { return "" }

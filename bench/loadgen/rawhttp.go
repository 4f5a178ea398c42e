package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RawHTTP is the leanest Streamable HTTP client there can be, as RawClient
// is over stdio: a request is encoded before its clock starts, written on a
// kept-alive connection of its own in one write with the headers a
// 2025-11-25 client sends, and its answer (a JSON body or the SSE event
// holding it) is read whole before the clock stops and decoded after, once.
// It speaks HTTP/1.1 on its connections itself, reading answers with
// net/http's parser: net/http's Transport hands every request and answer
// between goroutines, which on two cores shared with the server cost a call
// more CPU than the server's fast path spends on it. The go-sdk client
// takes about as much CPU per call as the server, so the SDK sessions'
// throughput is the client's; this one's is the server's.
type RawHTTP struct {
	addr   string // host:port
	head   []byte // the request line and headers, but Content-Length
	init   []byte // the same for initialize, without the protocol header
	next   atomic.Int64
	idle   chan *rawConn
	closed atomic.Bool
}

// rawConn is a kept-alive connection and the reader of its answers.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

// NewRawHTTP returns a client of endpoint keeping up to conns connections
// alive, after an initialize round trip that checks the server answers.
func NewRawHTTP(ctx context.Context, endpoint, bearer string, conns int) (*RawHTTP, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("the bare HTTP client needs an http:// endpoint, not %q", endpoint)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	head := func(version bool) []byte {
		h := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
		if version {
			h += "MCP-Protocol-Version: " + RawProtocol + "\r\n"
		}
		if bearer != "" {
			h += "Authorization: Bearer " + bearer + "\r\n"
		}
		return []byte(h)
	}
	c := &RawHTTP{addr: addr, head: head(true), init: head(false), idle: make(chan *rawConn, conns+4)}
	init := map[string]any{"protocolVersion": RawProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "accords-bench-raw", "version": "1"}}
	if _, _, err := c.roundTrip(ctx, "initialize", init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize over HTTP: %w", err)
	}
	return c, nil
}

// Close drops the kept-alive connections.
func (c *RawHTTP) Close() {
	c.closed.Store(true)
	for {
		select {
		case rc := <-c.idle:
			_ = rc.c.Close()
		default:
			return
		}
	}
}

// conn returns an idle connection, or a new one, and whether it was idle.
func (c *RawHTTP) conn(ctx context.Context, fresh bool) (*rawConn, bool, error) {
	if !fresh {
		select {
		case rc := <-c.idle:
			return rc, true, nil
		default:
		}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, false, err
	}
	return &rawConn{c: nc, br: bufio.NewReaderSize(nc, 16<<10)}, false, nil
}

// release keeps rc for the next call, unless the server is closing it or
// enough are kept.
func (c *RawHTTP) release(rc *rawConn, reuse bool) {
	if reuse && !c.closed.Load() {
		select {
		case c.idle <- rc:
			return
		default:
		}
	}
	_ = rc.c.Close()
}

// rawCallTimeout bounds a call whose server stopped answering.
const rawCallTimeout = time.Minute

// post sends one request and returns the time until its answer was read
// whole into into, and the answer: the body of a JSON answer, or the SSE
// body.
func (c *RawHTTP) post(ctx context.Context, into *bytes.Buffer, method string, params any) (time.Duration, int64, []byte, bool, error) {
	id := c.next.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return 0, id, nil, false, err
	}
	head := c.head
	if method == "initialize" {
		head = c.init
	}
	req := make([]byte, 0, len(head)+40+len(body))
	req = append(req, head...)
	req = append(strconv.AppendInt(append(req, "Content-Length: "...), int64(len(body)), 10), "\r\n\r\n"...)
	req = append(req, body...)
	for fresh := false; ; fresh = true {
		rc, reused, err := c.conn(ctx, fresh)
		if err != nil {
			return 0, id, nil, false, err
		}
		d, status, contentType, err := c.exchange(ctx, rc, req, into)
		if err != nil && reused && into.Len() == 0 && ctx.Err() == nil {
			// The server closed a connection kept idle too long (its idle
			// timeout) before it read the request: once more on a new one,
			// as net/http's Transport does.
			continue
		}
		if err != nil {
			return d, id, nil, false, err
		}
		got := into.Bytes()
		if status != http.StatusOK {
			return d, id, nil, false, fmt.Errorf("%s: HTTP %d: %s", method, status, strings.TrimSpace(string(got)))
		}
		return d, id, got, strings.HasPrefix(contentType, "text/event-stream"), nil
	}
}

// exchange writes req on rc and reads its answer's body into into, and
// returns the time from the write to the body's end, the answer's status
// and content type.
func (c *RawHTTP) exchange(ctx context.Context, rc *rawConn, req []byte, into *bytes.Buffer) (time.Duration, int, string, error) {
	stop := context.AfterFunc(ctx, func() { _ = rc.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = rc.c.SetDeadline(time.Now().Add(rawCallTimeout))
	t0 := time.Now()
	if _, err := rc.c.Write(req); err != nil {
		c.release(rc, false)
		return 0, 0, "", err
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		c.release(rc, false)
		return 0, 0, "", err
	}
	_, err = into.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	d := time.Since(t0)
	c.release(rc, err == nil && !resp.Close)
	return d, resp.StatusCode, resp.Header.Get("Content-Type"), err
}

func (c *RawHTTP) roundTrip(ctx context.Context, method string, params any) (time.Duration, json.RawMessage, error) {
	d, id, got, stream, err := c.post(ctx, new(bytes.Buffer), method, params)
	if err != nil {
		return d, nil, err
	}
	for data := range answerData(got, stream) {
		if a, ok := answerTo(data, id); ok {
			if a.Error != nil {
				return d, nil, fmt.Errorf("%s: %s", method, a.Error.Message)
			}
			return d, a.Result, nil
		}
	}
	return d, nil, fmt.Errorf("%s: no answer to the request", method)
}

// answerTo reads data as the answer to request id, if it is one.
func answerTo(data []byte, id int64) (rawAnswer, bool) {
	var a rawAnswer
	if decodeExact(data, &a) != nil || a.ID == nil || *a.ID != id || a.Method != "" {
		return rawAnswer{}, false
	}
	return a, true
}

// answerData yields the JSON-RPC messages of an answer: a JSON body, or the
// data of an SSE body's events from the last to the first (a call's answer
// ends the stream; notifications about it come first).
func answerData(body []byte, stream bool) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !stream {
			yield(body)
			return
		}
		var events [][]byte
		for rest := body; len(rest) > 0; {
			i := bytes.Index(rest, []byte("\n\n"))
			if i < 0 {
				events = append(events, rest)
				break
			}
			events = append(events, rest[:i])
			rest = rest[i+2:]
		}
		for _, event := range slices.Backward(events) {
			if data := eventData(event); len(data) > 0 && !yield(data) {
				return
			}
		}
	}
}

// eventData joins an SSE event's data lines; one line, the usual case, is
// returned in place.
func eventData(event []byte) []byte {
	var data []byte
	lines := 0
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		switch lines++; lines {
		case 1:
			data = v
		case 2:
			data = append(append(append([]byte(nil), data...), '\n'), v...)
		default:
			data = append(append(data, '\n'), v...)
		}
	}
	return data
}

// callAnswer is what the bare client reads of a tools/call answer, decoded
// in one pass that builds nothing else, by segmentio's decoder (the go-sdk's
// own), which skips the fields it does not keep several times faster than
// encoding/json. Reading the message, then its result, then the result into
// maps, as outcome does, cost this client about as much CPU a call as the
// server spends answering it, on the two cores the two share.
type callAnswer struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		IsError           bool `json:"isError"`
		StructuredContent *struct {
			OK    *bool `json:"ok"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"structuredContent"`
	} `json:"result"`
}

// code is the answer's outcome as outcome reads it, and whether this form
// could tell (an answer of another shape is read the general way).
func (a *callAnswer) code(envelopes bool) (string, bool) {
	switch {
	case a.Error != nil:
		return CodeTransport, true
	case a.Result == nil:
		return "", false
	case !envelopes:
		if a.Result.IsError {
			return "is_error", true
		}
		return "", true
	}
	sc := a.Result.StructuredContent
	switch {
	case sc == nil || sc.OK == nil || (!*sc.OK && sc.Error == nil):
		return CodeNoEnvelope, true
	case *sc.OK:
		return "", true
	default:
		return sc.Error.Code, true
	}
}

// Do makes one call of op and returns its time and outcome code, as
// RawClient.Do does.
func (c *RawHTTP) Do(ctx context.Context, op Op, args map[string]any, envelopes bool) (time.Duration, string) {
	if args == nil {
		args = map[string]any{}
	}
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); answerBuffers.Put(buf) }()
	d, id, got, stream, err := c.post(ctx, buf, "tools/call", map[string]any{"name": op.Tool, "arguments": args})
	if err != nil {
		return d, CodeTransport
	}
	return d, readCall(got, stream, id, envelopes)
}

// answerBuffers hold answers while they are read: nothing of one is kept
// after its outcome is known.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readCall returns the outcome of the answer to call id in an answer body.
func readCall(got []byte, stream bool, id int64, envelopes bool) string {
	for data := range answerData(got, stream) {
		var a callAnswer
		if decodeExact(data, &a) == nil {
			if a.ID == nil || *a.ID != id || a.Method != "" {
				continue
			}
			if code, ok := a.code(envelopes); ok {
				return code
			}
		}
		// A message of a shape this form does not expect: read as outcome
		// reads any answer.
		r, ok := answerTo(data, id)
		if !ok {
			continue
		}
		if r.Error != nil {
			return CodeTransport
		}
		return outcome(r.Result, envelopes)
	}
	return CodeTransport
}

// RunRawHTTPMixed runs the weighted mix through c as RunMixed runs it
// through the SDK sessions of s (whose tool list decides what is skipped).
func RunRawHTTPMixed(ctx context.Context, c *RawHTTP, s *Server, clients int, ops map[string]Op, weights []Weight, lim Limits, seed uint64) *Recorder {
	m := newMix(s, ops, weights)
	if m.total == 0 {
		rec := NewRecorder()
		rec.Stop()
		return rec
	}
	return runRawHTTP(ctx, c, clients, m.pick, lim, seed)
}

// RunRawHTTP calls op from clients goroutines through c until lim.Calls
// calls have been made or lim.Duration has passed, with the arguments Run
// would make from the same seed.
func RunRawHTTP(ctx context.Context, c *RawHTTP, clients int, op Op, lim Limits, seed uint64) *Recorder {
	return runRawHTTP(ctx, c, clients, func(*rand.Rand) Op { return op }, lim, seed)
}

// runRawHTTP is the calling loop of both: pick chooses each call's
// operation.
func runRawHTTP(ctx context.Context, c *RawHTTP, clients int, pick func(*rand.Rand) Op, lim Limits, seed uint64) *Recorder {
	rec := NewRecorder()
	var issued atomic.Int64
	deadline := time.Now().Add(lim.Duration)
	var wg sync.WaitGroup
	for wi := range max(clients, 1) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(wi)+1))
			for ctx.Err() == nil && time.Now().Before(deadline) && issued.Add(1) <= int64(lim.Calls) {
				op := pick(r)
				d, code := c.Do(ctx, op, op.Args(r), true)
				rec.Add(d, code)
			}
		})
	}
	wg.Wait()
	rec.Stop()
	return rec
}

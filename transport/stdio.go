package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes caps one incoming stdio message (8 MiB: a
// largest cookbook bundle, 4 MiB, fits with room for JSON escaping). A
// longer message is refused with a JSON-RPC error and skipped without being
// buffered; the session goes on.
const DefaultMaxMessageBytes = 8 << 20

// StdioTransport speaks newline-delimited JSON-RPC (or Content-Length framed
// messages, as some clients send) on a reader and writer. Unlike the SDK's
// stdio transport, a malformed or oversized message gets an error reply and
// the session goes on; end of input ends the session cleanly; a request the
// client cancelled (notifications/cancelled) gets no response, as MCP asks.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
	// MaxMessageBytes caps one message (DefaultMaxMessageBytes when <= 0).
	MaxMessageBytes int

	mu   sync.Mutex
	conn *stdioConn
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	c := &stdioConn{
		in:       bufio.NewReaderSize(t.In, 64<<10),
		out:      t.Out,
		limit:    limit,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		pending:  map[jsonrpc.ID]bool{},
		drained:  make(chan struct{}),
		idle:     make(chan struct{}, 1),
	}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	go c.readLoop()
	return c, nil
}

// WaitIdle blocks until every request received so far has been answered
// (or dropped as cancelled), or ctx ends. Shutdown uses it to let in-flight
// answers out before the connection closes.
func (t *StdioTransport) WaitIdle(ctx context.Context) error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	for {
		c.pendingMu.Lock()
		n := len(c.pending)
		c.pendingMu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-c.idle:
		case <-c.closed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	in       *bufio.Reader
	out      io.Writer
	limit    int
	outMu    sync.Mutex
	framed   atomic.Bool // the last input message was Content-Length framed
	incoming chan readResult
	closed   chan struct{}
	once     sync.Once

	// pending holds requests delivered but not yet answered, so end of
	// input waits for their responses instead of dropping them; the value
	// is true once the client cancelled the request (its response is then
	// dropped).
	pendingMu sync.Mutex
	pending   map[jsonrpc.ID]bool
	drained   chan struct{} // closed when pending empties after EOF
	idle      chan struct{} // signalled whenever a response leaves pending
	eof       bool
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	if !isResp {
		return c.writeRaw(data)
	}
	c.pendingMu.Lock()
	cancelled := c.pending[resp.ID]
	c.pendingMu.Unlock()
	if !cancelled {
		err = c.writeRaw(data)
	}
	c.pendingMu.Lock()
	delete(c.pending, resp.ID)
	if c.eof && len(c.pending) == 0 {
		c.closeDrained()
	}
	c.pendingMu.Unlock()
	select {
	case c.idle <- struct{}{}:
	default:
	}
	return err
}

// markCancelled records a notifications/cancelled for a pending request,
// so that its response (the SDK still produces one) is never written.
func (c *stdioConn) markCancelled(n *jsonrpc.Request) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.pendingMu.Lock()
	if _, ok := c.pending[id]; ok {
		c.pending[id] = true
	}
	c.pendingMu.Unlock()
}

func (c *stdioConn) closeDrained() {
	select {
	case <-c.drained:
	default:
		close(c.drained)
	}
}

// waitDrained blocks until every delivered request has been answered.
func (c *stdioConn) waitDrained() {
	c.pendingMu.Lock()
	c.eof = true
	if len(c.pending) == 0 {
		c.closeDrained()
	}
	c.pendingMu.Unlock()
	select {
	case <-c.drained:
	case <-c.closed:
	}
}

func (c *stdioConn) writeRaw(data []byte) error {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	var err error
	if c.framed.Load() {
		_, err = fmt.Fprintf(c.out, "Content-Length: %d\r\n\r\n%s", len(data), data)
	} else {
		_, err = c.out.Write(append(data, '\n'))
	}
	return err
}

func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *stdioConn) readLoop() {
	for {
		body, framed, err := c.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.waitDrained()
				c.deliver(readResult{err: io.EOF})
				return
			}
			if tl, ok := errors.AsType[*tooLongError](err); ok {
				c.replyError(tl.id, -32600, fmt.Sprintf("invalid request: message exceeds the %d-byte limit", c.limit))
				continue
			}
			if errors.Is(err, errBadHeader) {
				c.replyError(nil, -32700, "parse error")
				continue
			}
			c.deliver(readResult{err: err})
			return
		}
		c.framed.Store(framed)
		msg, derr := jsonrpc.DecodeMessage(body)
		if derr != nil {
			if !json.Valid(body) {
				c.replyError(nil, -32700, "parse error")
			} else {
				c.replyError(rawID(body), -32600, "invalid request")
			}
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.IsCall():
				c.pendingMu.Lock()
				c.pending[req.ID] = false
				c.pendingMu.Unlock()
			case req.Method == "notifications/cancelled":
				c.markCancelled(req)
			}
		}
		if !c.deliver(readResult{msg: msg}) {
			return
		}
	}
}

var errBadHeader = errors.New("bad Content-Length header")

// tooLongError is a message over the cap; id is the request id read from
// its beginning, when there is one, so the refusal can be correlated.
type tooLongError struct{ id any }

func (e *tooLongError) Error() string { return "message too long" }

// next reads one message body. Blank lines are skipped; a line starting with
// "Content-Length:" begins a framed message, anything else is one NDJSON line.
func (c *stdioConn) next() ([]byte, bool, error) {
	for {
		line, err := c.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0 {
				return bytes.TrimSpace(line), false, nil
			}
			return nil, false, err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		if len(trimmed) > 15 && strings.EqualFold(string(trimmed[:15]), "content-length:") {
			n, perr := strconv.Atoi(strings.TrimSpace(string(trimmed[15:])))
			// Skip the remaining headers up to the blank line.
			for {
				h, herr := c.readLine()
				if herr != nil {
					return nil, false, herr
				}
				if len(bytes.TrimSpace(h)) == 0 {
					break
				}
			}
			if perr != nil || n < 0 {
				return nil, false, errBadHeader
			}
			if n > c.limit {
				// Keep the beginning (for the id), discard the rest.
				head := make([]byte, min(n, headBytes))
				if _, err := io.ReadFull(c.in, head); err != nil {
					return nil, false, err
				}
				if _, err := io.CopyN(io.Discard, c.in, int64(n-len(head))); err != nil {
					return nil, false, err
				}
				c.framed.Store(true)
				return nil, true, &tooLongError{id: headID(head)}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(c.in, body); err != nil {
				return nil, false, err
			}
			return body, true, nil
		}
		return trimmed, false, nil
	}
}

// headBytes is how much of an oversized message is kept to find its id.
const headBytes = 4 << 10

// readLine reads through the next newline, refusing lines over the cap: the
// rest of such a line is discarded as it arrives, never buffered.
func (c *stdioConn) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(buf)+len(chunk) > c.limit {
			if len(buf) < headBytes {
				buf = append(buf, chunk[:min(len(chunk), headBytes-len(buf))]...)
			}
			head := buf[:min(len(buf), headBytes)]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = c.in.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			c.framed.Store(false)
			return nil, &tooLongError{id: headID(head)}
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

// headID reads the top-level "id" of a JSON-RPC message from its first
// bytes, if it comes before the point where they stop (clients put
// jsonrpc, id and method before params).
func headID(head []byte) any {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(head)))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := kt.(string)
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		vt, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := vt.(type) {
		case string:
			return v
		case json.Number:
			if n, err := v.Int64(); err == nil {
				return n
			}
		}
		return nil
	}
	return nil
}

func (c *stdioConn) replyError(id any, code int, message string) {
	resp := map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}}
	data, _ := json.Marshal(resp)
	_ = c.writeRaw(data)
}

// rawID extracts the id of a JSON object that is not a valid message, so
// the error reply can still be correlated.
func rawID(body []byte) any {
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	switch probe.ID.(type) {
	case string, float64:
		return probe.ID
	}
	return nil
}

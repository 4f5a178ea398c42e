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

// MaxStdioMessageBytes caps one incoming message; longer input is answered
// with a parse error and skipped rather than buffered without bound.
const MaxStdioMessageBytes = 32 << 20

// StdioTransport speaks newline-delimited JSON-RPC (or Content-Length framed
// messages, as some clients send) on a reader and writer. Unlike the SDK's
// stdio transport, a malformed message gets a -32700 reply and the session
// goes on; end of input ends the session cleanly.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &stdioConn{
		in:       bufio.NewReaderSize(t.In, 64<<10),
		out:      t.Out,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		pending:  map[jsonrpc.ID]bool{},
		drained:  make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	in       *bufio.Reader
	out      io.Writer
	outMu    sync.Mutex
	framed   atomic.Bool // the last input message was Content-Length framed
	incoming chan readResult
	closed   chan struct{}
	once     sync.Once

	// pending counts requests delivered but not yet answered, so end of input
	// waits for their responses instead of dropping them.
	pendingMu sync.Mutex
	pending   map[jsonrpc.ID]bool
	drained   chan struct{} // closed when pending empties after EOF
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
	err = c.writeRaw(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.pendingMu.Lock()
		delete(c.pending, resp.ID)
		if c.eof && len(c.pending) == 0 {
			c.closeDrained()
		}
		c.pendingMu.Unlock()
	}
	return err
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
			if errors.Is(err, errTooLong) || errors.Is(err, errBadHeader) {
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
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.pendingMu.Lock()
			c.pending[req.ID] = true
			c.pendingMu.Unlock()
		}
		if !c.deliver(readResult{msg: msg}) {
			return
		}
	}
}

var (
	errTooLong   = errors.New("message too long")
	errBadHeader = errors.New("bad Content-Length header")
)

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
			if perr != nil || n < 0 || n > MaxStdioMessageBytes {
				return nil, false, errBadHeader
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

// readLine reads through the next newline, refusing lines over the cap (the
// rest of such a line is discarded).
func (c *stdioConn) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxStdioMessageBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = c.in.ReadSlice('\n')
			}
			return nil, errTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
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

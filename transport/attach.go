package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeNotStarted is the JSON-RPC error a daemon answers a call with when it
// is shutting down and the call never started. The stdio front end sends
// such a call again to the daemon that replaces it, so the client never
// sees it.
const CodeNotStarted = -32010

// CodeDaemonLost is the JSON-RPC error the stdio front end answers a
// request other than tools/call with when the daemon went away while it
// was in flight (a tools/call gets an MCP_NETWORK_ERROR envelope instead).
const CodeDaemonLost = -32011

// AttachTransport serves one attached stdio client on the daemon: the
// upgraded control-socket connection carries newline-delimited JSON-RPC,
// already framed and checked by the client's front end. SessionID names
// the client, so receipts and logs can tell attached clients apart.
type AttachTransport struct {
	Conn    net.Conn
	Session string
	// MaxMessageBytes caps one message (DefaultMaxMessageBytes when <= 0);
	// the front end already refused longer ones from its client.
	MaxMessageBytes int
	// Inflight, when set, counts the stream's tools/call requests whose
	// answers are not written yet (the daemon's shutdown waits for them).
	Inflight *Inflight
}

// Inflight counts tools/call requests read from attached streams and not
// answered yet. The SDK writes an answer after the call's handler (and
// the daemon's gate) has returned; a shutdown that cancelled the sessions
// as soon as the gate was empty would drop answers being written.
type Inflight struct {
	mu sync.Mutex
	n  int
}

func (f *Inflight) add(d int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.n += d
	f.mu.Unlock()
}

// Wait returns once every counted answer is written, or after timeout
// (false).
func (f *Inflight) Wait(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		n := f.n
		f.mu.Unlock()
		if n <= 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Connect implements mcp.Transport.
func (t *AttachTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	return &attachConn{conn: t.Conn, r: bufio.NewReaderSize(t.Conn, 64<<10), id: t.Session, limit: limit, closed: make(chan struct{}),
		inflight: t.Inflight}, nil
}

type attachConn struct {
	conn   net.Conn
	r      *bufio.Reader
	id     string
	limit  int
	wmu    sync.Mutex
	once   sync.Once
	closed chan struct{}

	inflight *Inflight
	pmu      sync.Mutex
	pending  map[any]bool // ids of tools/call requests not answered yet
}

func (c *attachConn) SessionID() string { return c.id }

// Read returns the next message. A line that is not a message (the front
// end never sends one) is answered with a parse error and skipped; a line
// over the stdio cap ends the stream.
func (c *attachConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := readLine(c.r, c.limit)
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return nil, io.EOF
			}
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			resp := map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}}
			if json.Valid(line) {
				resp["id"], resp["error"] = rawID(line), map[string]any{"code": -32600, "message": "invalid request"}
			}
			data, _ := json.Marshal(resp)
			if werr := c.writeRaw(data); werr != nil {
				return nil, werr
			}
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() && req.Method == "tools/call" && c.inflight != nil {
			c.pmu.Lock()
			if c.pending == nil {
				c.pending = map[any]bool{}
			}
			if !c.pending[req.ID.Raw()] {
				c.pending[req.ID.Raw()] = true
				c.inflight.add(1)
			}
			c.pmu.Unlock()
		}
		return msg, nil
	}
}

// errLineTooLong ends an attached stream whose line is over the cap.
var errLineTooLong = errors.New("attached stream: message over the size cap")

// readLine reads one newline-terminated line without the newline, refusing
// lines over limit (with room for the newline).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > limit+1 {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			buf = append(buf, chunk...)
			continue
		}
		if err != nil {
			return nil, err
		}
		// ReadSlice's bytes are overwritten by the next read: copy.
		buf = append(buf, chunk...)
		return buf[:len(buf)-1], nil
	}
}

func (c *attachConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeRaw(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp.ID.Raw())
	}
	return err
}

func (c *attachConn) answered(id any) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending[id] {
		delete(c.pending, id)
		c.inflight.add(-1)
	}
}

func (c *attachConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(append(data, '\n'))
	return err
}

func (c *attachConn) Close() error {
	c.pmu.Lock()
	c.inflight.add(-len(c.pending))
	c.pending = nil
	c.pmu.Unlock()
	c.once.Do(func() { close(c.closed) })
	return c.conn.Close()
}

package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

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

	conn atomic.Pointer[attachConn]
}

// Unanswered is how many requests read from the stream have had no
// response written yet. A daemon stopping waits for it to reach zero
// before it closes the session: go-sdk drops a response still to be
// written once the session is closing, though the call has returned.
func (t *AttachTransport) Unanswered() int64 {
	if c := t.conn.Load(); c != nil {
		return c.open.Load()
	}
	return 0
}

// Connect implements mcp.Transport.
func (t *AttachTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	c := &attachConn{conn: t.Conn, r: bufio.NewReaderSize(t.Conn, 64<<10), id: t.Session, limit: limit, closed: make(chan struct{}), listens: map[any]bool{}}
	t.conn.Store(c)
	return c, nil
}

type attachConn struct {
	conn   net.Conn
	r      *bufio.Reader
	id     string
	limit  int
	wmu    sync.Mutex
	once   sync.Once
	closed chan struct{}
	// open counts requests read and not yet answered, listens aside.
	open    atomic.Int64
	lmu     sync.Mutex
	listens map[any]bool
}

const methodListen = "subscriptions/listen"

// listenAnswer reports (and forgets) whether r answers a listen.
func (c *attachConn) listenAnswer(r *jsonrpc.Response) bool {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.listens[r.ID.Raw()] {
		delete(c.listens, r.ID.Raw())
		return true
	}
	return false
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
		if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
			if r.Method == methodListen {
				// A listen lasts until cancelled: no call awaits its answer.
				c.lmu.Lock()
				c.listens[r.ID.Raw()] = true
				c.lmu.Unlock()
			} else {
				c.open.Add(1)
			}
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
	if r, ok := msg.(*jsonrpc.Response); ok && !c.listenAnswer(r) {
		defer c.open.Add(-1)
	}
	return c.writeRaw(data)
}

func (c *attachConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(append(data, '\n'))
	return err
}

func (c *attachConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.conn.Close()
}

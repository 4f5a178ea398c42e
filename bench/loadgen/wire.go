package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireTransport times each request on the wire: from the client handing
// the message to the transport to the transport reading its response,
// which leaves out the client's own decoding of the result (for a 24 KB
// tools/list, most of what the go-sdk client spends). It is the server's
// answer time as any client sees it; the end-to-end figure is kept beside
// it.
type wireTransport struct {
	inner mcp.Transport
	clock *wireClock
}

// wireClock holds the wire time of the last response of one session; a
// session makes one call at a time.
type wireClock struct {
	mu    sync.Mutex
	sent  map[jsonrpc.ID]time.Time
	lastN atomic.Int64
}

func newWireTransport(inner mcp.Transport) *wireTransport {
	return &wireTransport{inner: inner, clock: &wireClock{sent: map[jsonrpc.ID]time.Time{}}}
}

func (t *wireTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{Connection: c, clock: t.clock}, nil
}

type wireConn struct {
	mcp.Connection
	clock *wireClock
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
		c.clock.mu.Lock()
		c.clock.sent[r.ID] = time.Now()
		c.clock.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.clock.mu.Lock()
		if t0, found := c.clock.sent[r.ID]; found {
			delete(c.clock.sent, r.ID)
			c.clock.lastN.Store(int64(time.Since(t0)))
		}
		c.clock.mu.Unlock()
	}
	return msg, err
}

// last is the wire time of the session's last answered request.
func (w *wireClock) last() time.Duration { return time.Duration(w.lastN.Load()) }

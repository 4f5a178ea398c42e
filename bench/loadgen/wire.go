package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireTransport times each request on the wire: from the client handing
// the message to the transport (over stdio: from its bytes entering the
// pipe) to the transport reading its response (over stdio: the bytes
// coming off the pipe),
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
	// arrived, when set (stdio), is when the bytes of the last complete
	// line came off the pipe: the end of the wire time, before even the
	// transport's decoding of the message.
	arrived func() time.Time
	// left, when set (stdio), is when the last line written began to go
	// into the pipe: the start of the wire time, after the client encoded
	// the request.
	left func() time.Time
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
			end := time.Now()
			if c.clock.arrived != nil {
				if at := c.clock.arrived(); at.After(t0) && at.Before(end) {
					end = at
				}
			}
			if c.clock.left != nil {
				if at := c.clock.left(); at.After(t0) && at.Before(end) {
					t0 = at
				}
			}
			c.clock.lastN.Store(int64(end.Sub(t0)))
		}
		c.clock.mu.Unlock()
	}
	return msg, err
}

// last is the wire time of the session's last answered request.
func (w *wireClock) last() time.Duration { return time.Duration(w.lastN.Load()) }

// stampReader notes when the last chunk holding a newline was read: with
// line-delimited messages and one call at a time, when the answer arrived.
type stampReader struct {
	r    io.ReadCloser
	last atomic.Int64
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && bytes.IndexByte(p[:n], '\n') >= 0 {
		s.last.Store(time.Now().UnixNano())
	}
	return n, err
}

func (s *stampReader) Close() error { return s.r.Close() }

func (s *stampReader) at() time.Time { return time.Unix(0, s.last.Load()) }

// stampWriter notes when a write ending a line began: with one call at a
// time, when the request went into the pipe.
type stampWriter struct {
	io.WriteCloser
	last atomic.Int64
}

func (s *stampWriter) Write(p []byte) (int, error) {
	if len(p) > 0 && p[len(p)-1] == '\n' {
		s.last.Store(time.Now().UnixNano())
	}
	return s.WriteCloser.Write(p)
}

func (s *stampWriter) at() time.Time { return time.Unix(0, s.last.Load()) }

// commandTransport runs a stdio server as the SDK's CommandTransport does
// (closing the session closes its stdin and waits for it to exit, then
// SIGTERM, then SIGKILL), reading its stdout through a stampReader so the
// wire clock can end at the answer's arrival.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	clock     *wireClock
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	sr := &stampReader{r: stdout}
	sw := &stampWriter{WriteCloser: stdin}
	t.clock.arrived, t.clock.left = sr.at, sw.at
	exited := make(chan error, 1)
	go func() { exited <- t.cmd.Wait() }()
	inner, err := (&mcp.IOTransport{Reader: sr, Writer: &stopOnClose{WriteCloser: sw, cmd: t.cmd, exited: exited, terminate: t.terminate}}).Connect(ctx)
	if err != nil {
		_ = t.cmd.Process.Kill()
		return nil, err
	}
	return inner, nil
}

// stopOnClose closes the server's stdin, then waits for it to exit,
// escalating to SIGTERM and SIGKILL after terminate each.
type stopOnClose struct {
	io.WriteCloser
	cmd       *exec.Cmd
	exited    chan error
	terminate time.Duration
	once      sync.Once
	err       error
}

func (s *stopOnClose) Close() error {
	s.once.Do(func() {
		_ = s.WriteCloser.Close()
		select {
		case s.err = <-s.exited:
			return
		case <-time.After(s.terminate):
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case s.err = <-s.exited:
			return
		case <-time.After(s.terminate):
		}
		_ = s.cmd.Process.Kill()
		s.err = errors.Join(fmt.Errorf("server did not exit within %s of SIGTERM; killed", s.terminate), <-s.exited)
	})
	return s.err
}

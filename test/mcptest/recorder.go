package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Message is one JSON-RPC message a Recorder saw, as it crossed the wire.
type Message struct {
	// Sent is true for what the client sent, false for what it received.
	Sent bool
	At   time.Time
	Raw  json.RawMessage
	// Method and ID are decoded from Raw (Method is empty on responses).
	Method string
	ID     any
}

// Recorder wraps a client transport and records every message both ways,
// so a test can read results the SDK's client types do not model (a
// CreateTaskResult) and print the exchange.
type Recorder struct {
	mcp.Transport
	mu   sync.Mutex
	msgs []Message
}

// Record wraps t.
func Record(t mcp.Transport) *Recorder { return &Recorder{Transport: t} }

// Connect implements mcp.Transport.
func (r *Recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordedConn{Connection: c, r: r}, nil
}

type recordedConn struct {
	mcp.Connection
	r *Recorder
}

func (c *recordedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.r.add(false, m)
	}
	return m, err
}

func (c *recordedConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.r.add(true, m)
	return c.Connection.Write(ctx, m)
}

func (r *Recorder) add(sent bool, m jsonrpc.Message) {
	raw, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return
	}
	msg := Message{Sent: sent, At: time.Now(), Raw: raw}
	switch v := m.(type) {
	case *jsonrpc.Request:
		msg.Method, msg.ID = v.Method, v.ID.Raw()
	case *jsonrpc.Response:
		msg.ID = v.ID.Raw()
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
}

// Messages returns what was recorded so far.
func (r *Recorder) Messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.msgs = nil
	r.mu.Unlock()
}

// LastResponse returns the raw result (or error) object of the last
// request with method, and the request itself.
func (r *Recorder) LastResponse(method string) (req, resp json.RawMessage, err error) {
	msgs := r.Messages()
	for i, m := range slices.Backward(msgs) {
		if !m.Sent || m.Method != method || m.ID == nil {
			continue
		}
		for _, n := range msgs[i+1:] {
			if !n.Sent && n.Method == "" && fmt.Sprint(n.ID) == fmt.Sprint(m.ID) {
				return m.Raw, n.Raw, nil
			}
		}
		return m.Raw, nil, fmt.Errorf("no response to %s id %v", method, m.ID)
	}
	return nil, nil, fmt.Errorf("no %s request recorded", method)
}

// Transcript renders the messages as "-> " (sent) and "<- " (received)
// lines of JSON, for logs and documentation.
func (r *Recorder) Transcript() string {
	var b strings.Builder
	for _, m := range r.Messages() {
		if m.Sent {
			b.WriteString("-> ")
		} else {
			b.WriteString("<- ")
		}
		b.Write(m.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

package loadgen

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireClockTimesTheExchange: the wire time of a call covers the
// server's handling (a tool that sleeps) and is never longer than the call
// as the client sees it.
// napSession connects a timed client to a server whose one tool, nap,
// calls started and sleeps 20 ms.
func napSession(t *testing.T, started func()) (*mcp.ClientSession, *wireTransport) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "nap", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started()
		time.Sleep(20 * time.Millisecond)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	wt := newWireTransport(ct)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), wt, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs, wt
}

func TestWireClockTimesTheExchange(t *testing.T) {
	ctx := context.Background()
	cs, wt := napSession(t, func() {})
	s := &Server{wires: map[*mcp.ClientSession]*wireClock{cs: wt.clock}}

	t0 := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap"})
	total := time.Since(t0)
	require.NoError(t, err)
	wire := s.Wire(cs)
	assert.GreaterOrEqual(t, wire, 20*time.Millisecond)
	assert.LessOrEqual(t, wire, total)
	wt.clock.mu.Lock()
	assert.Empty(t, wt.clock.sent, "answered requests are forgotten")
	wt.clock.mu.Unlock()
	assert.Zero(t, (&Server{}).Wire(cs), "an untimed session reads zero")
}

// Over stdio the clock starts when the request's bytes go into the pipe
// and stops when the answer's come off it: a start stamped later than the
// hand-over to the transport is used.
func TestWireClockStartsAtThePipe(t *testing.T) {
	var started atomic.Int64
	ctx := context.Background()
	cs, wt := napSession(t, func() { started.Store(time.Now().UnixNano()) })
	// Stand-in for the stdio writer's stamp: the handler's start.
	wt.clock.left = func() time.Time { return time.Unix(0, started.Load()) }
	s := &Server{wires: map[*mcp.ClientSession]*wireClock{cs: wt.clock}}
	t0 := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap"})
	require.NoError(t, err)
	total := time.Since(t0)
	wire := s.Wire(cs)
	assert.GreaterOrEqual(t, wire, 20*time.Millisecond)
	assert.LessOrEqual(t, wire, total-time.Unix(0, started.Load()).Sub(t0))

	var buf bytes.Buffer
	sw := &stampWriter{WriteCloser: nopCloser{&buf}}
	assert.True(t, sw.at().Equal(time.Unix(0, 0)))
	_, _ = sw.Write([]byte("partial"))
	assert.True(t, sw.at().Equal(time.Unix(0, 0)), "only a write ending a line is a request")
	_, _ = sw.Write([]byte("{}\n"))
	assert.WithinDuration(t, time.Now(), sw.at(), time.Second)
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

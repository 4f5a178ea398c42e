package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireClockTimesTheExchange: the wire time of a call covers the
// server's handling (a tool that sleeps) and is never longer than the call
// as the client sees it.
func TestWireClockTimesTheExchange(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "nap", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		time.Sleep(20 * time.Millisecond)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	wt := newWireTransport(ct)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, wt, nil)
	require.NoError(t, err)
	defer cs.Close()
	s := &Server{wires: map[*mcp.ClientSession]*wireClock{cs: wt.clock}}

	t0 := time.Now()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap"})
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

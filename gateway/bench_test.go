package gateway

import (
	"context"
	"testing"

	"github.com/accordsai/accords-mcp/caller"
	"github.com/accordsai/accords-mcp/server"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSessionStatus compares a cheap tool call through the whole stack
// (in-memory MCP transport) with and without the gateway; the difference is
// the gateway's overhead: policy, rate limit, HMACs, receipt enqueue, and
// the background group commit competing for the CPU.
func BenchmarkSessionStatus(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		h := newHarness(&testing.T{}, setup{})
		defer cleanupHarness(h)
		benchServer(b, (&server.Builder{}).Build(h.gw.reg))
	})
	b.Run("gateway", func(b *testing.B) {
		h := newHarness(&testing.T{}, setup{})
		defer cleanupHarness(h)
		benchServer(b, h.gw.StdioServer())
	})
}

func benchServer(b *testing.B, srv *mcp.Server) {
	{
		ctx := context.Background()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			cs.Close()
			ss.Wait()
		}()
		params := &mcp.CallToolParams{Name: "vaultclaw_session_status"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("call failed: %v %+v", err, res)
			}
		}
	}
}

// BenchmarkMiddleware isolates the gateway's own work around a handler that
// returns a rendered envelope at once.
func BenchmarkMiddleware(b *testing.B) {
	h := newHarness(&testing.T{}, setup{})
	defer cleanupHarness(h)
	res := tools.Render(envelopeOK())
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		out := *res
		return &out, nil
	}
	mw := h.gw.Middleware(next)
	ctx := caller.With(context.Background(), caller.Local())
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "vaultclaw_session_status", Arguments: []byte(`{}`)}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := mw(ctx, "tools/call", req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = h.log.Flush()
}

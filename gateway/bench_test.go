package gateway

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkSessionStatus compares a cheap tool call through the whole stack
// (in-memory MCP transport) with and without the gateway; the difference is
// the gateway's overhead: policy, rate limit, HMACs, receipt enqueue, and
// the background group commit competing for the CPU.
func BenchmarkSessionStatus(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		h := newHarness(b, setup{})
		benchServer(b, (&transport.Builder{}).Build(h.gw.reg))
	})
	b.Run("gateway", func(b *testing.B) {
		h := newHarness(b, setup{})
		benchServer(b, h.gw.StdioServer())
	})
}

// BenchmarkGatewayOverheadMedian alternates the same call on a bare server
// and on the gateway server, so machine load hits both alike, and reports
// the medians of each and of the per-pair difference (the gateway's
// overhead per call).
func BenchmarkGatewayOverheadMedian(b *testing.B) {
	hb := newHarness(b, setup{})
	hg := newHarness(b, setup{})
	bare := mcptest.Connect(b, (&transport.Builder{}).Build(hb.gw.reg), nil)
	defer bare.Close()
	gw := mcptest.Connect(b, hg.gw.StdioServer(), nil)
	defer gw.Close()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "vaultclaw_session_status"}
	once := func(cs *mcptest.Session) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("call failed: %v %+v", err, res)
		}
		return d
	}
	for range 50 { // warm caches and the writer
		once(bare)
		once(gw)
	}
	bareD := make([]float64, 0, b.N)
	gwD := make([]float64, 0, b.N)
	diff := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		var db, dg time.Duration
		if i%2 == 0 {
			db, dg = once(bare), once(gw)
		} else {
			dg, db = once(gw), once(bare)
		}
		bareD = append(bareD, float64(db.Nanoseconds()))
		gwD = append(gwD, float64(dg.Nanoseconds()))
		diff = append(diff, float64((dg - db).Nanoseconds()))
	}
	b.StopTimer()
	b.ReportMetric(median(bareD), "bare-median-ns")
	b.ReportMetric(median(gwD), "gateway-median-ns")
	b.ReportMetric(median(gwD)-median(bareD), "overhead-median-ns")
	b.ReportMetric(median(diff), "paired-diff-median-ns")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func benchServer(b *testing.B, srv *mcp.Server) {
	{
		ctx := context.Background()
		cs := mcptest.Connect(b, srv, nil)
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "vaultclaw_session_status"}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
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
	h := newHarness(b, setup{})
	res := tools.Render(envelopeOK())
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		out := *res
		return &out, nil
	}
	mw := h.gw.Calls(next)
	ctx := caller.With(context.Background(), caller.Local())
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "vaultclaw_session_status", Arguments: []byte(`{}`)}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := mw(ctx, "tools/call", req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = h.log.Flush()
}

// BenchmarkMiddlewareTracing is BenchmarkMiddleware with tracing off (no
// tracer: the default), on with every span recorded, and on with a caller
// that sent a traceparent in _meta. Off must cost what BenchmarkMiddleware
// costs: one nil check.
func BenchmarkMiddlewareTracing(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	cases := []struct {
		name   string
		tracer trace.Tracer
		meta   mcp.Meta
	}{
		{"off", nil, nil},
		{"on", tp.Tracer("bench"), nil},
		{"on-with-parent", tp.Tracer("bench"), mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b, setup{tracer: c.tracer})
			res := tools.Render(envelopeOK())
			next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
				out := *res
				return &out, nil
			}
			mw := h.gw.Calls(next)
			ctx := caller.With(context.Background(), caller.Local())
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: c.meta, Name: "vaultclaw_session_status", Arguments: []byte(`{}`)}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := mw(ctx, "tools/call", req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = h.log.Flush()
			rec.Reset()
		})
	}
}

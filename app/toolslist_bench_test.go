package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
)

// BenchmarkToolsList is a full tools/list through the server's middleware
// and a go-sdk client over in-memory transports (no process hop): the
// server's share of what every client pays at start. p50-ns is the median
// call.
func BenchmarkToolsList(b *testing.B) {
	a, err := app.Open(testenv.Config(b), testenv.Logger())
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	cs := mcptest.Connect(b, a.MCPServer(), nil)
	ctx := context.Background()
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) == 0 {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

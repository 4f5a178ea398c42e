package routing

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkResolveRegistry is the registry path (target p50 < 1 ms).
func BenchmarkResolveRegistry(b *testing.B) {
	r := New(testReg(b), nil)
	req := Request{Text: "send an email to skl83@cornell.edu that has my passport and tomorrow's weather in santa rosa california", AllowSearch: true}
	ctx := context.Background()
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		r.Resolve(ctx, req)
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

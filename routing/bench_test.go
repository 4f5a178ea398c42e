package routing

import (
	"context"
	"testing"
)

// BenchmarkResolveRegistry is the registry path (target p50 < 1 ms).
func BenchmarkResolveRegistry(b *testing.B) {
	r := New(testReg(b), nil)
	req := Request{Text: "send an email to skl83@cornell.edu that has my passport and tomorrow's weather in santa rosa california", AllowSearch: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r.Resolve(ctx, req)
	}
}

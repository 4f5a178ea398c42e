package metrics

import (
	"testing"
)

// BenchmarkScrape renders a registry holding 40 tools' worth of series.
func BenchmarkScrape(b *testing.B) {
	s := New()
	for i := range 40 {
		tool := "tool_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		s.ToolCalls.Inc(tool, OutcomeOK)
		s.ToolDuration.Observe(0.01, tool)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = s.Registry.WriteText(discard{})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

package metrics

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMiddleware is the cost the metrics middleware adds to one
// tools/call (an error envelope, the dearer path: its code is decoded).
func BenchmarkMiddleware(b *testing.B) {
	s := New()
	res := &mcp.CallToolResult{IsError: true, StructuredContent: []byte(`{"ok":false,"data":null,"error":{"code":"MCP_VALIDATION_ERROR","category":"validation","message":"x","retryable":false,"vault_code":"","details":{}},"meta":{}}`)}
	h := s.Middleware(MiddlewareOptions{Known: func(string) bool { return true }})(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return res, nil
	})
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "vaultclaw_connectors_list"}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, _ = h(ctx, "tools/call", req)
	}
}

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

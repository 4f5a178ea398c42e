package transport

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	o, c := classify(&mcp.CallToolResult{}, nil, &tools.Outcome{})
	assert.Equal(t, metrics.OutcomeOK, o)
	assert.Empty(t, c)
	o, c = classify(&mcp.CallToolResult{IsError: true}, nil, &tools.Outcome{Recorded: true, Code: apperr.CodeValidation})
	assert.Equal(t, metrics.OutcomeError, o)
	assert.Equal(t, "MCP_VALIDATION_ERROR", c)
	// A refusal rendered before the tool runs (the gateway) records its
	// code too.
	ctx, slot := tools.TrackOutcome(context.Background())
	res := tools.Fail(ctx, apperr.New(apperr.CodeRateLimited, "slow down"))
	o, c = classify(res, nil, slot)
	assert.Equal(t, "MCP_RATE_LIMITED", c)
	assert.Equal(t, metrics.OutcomeError, o)
	// A result nothing recorded: an error without a known code.
	o, c = classify(&mcp.CallToolResult{IsError: true}, nil, &tools.Outcome{})
	assert.Equal(t, metrics.OutcomeError, o)
	assert.Equal(t, "UNKNOWN", c)
	o, _ = classify(nil, errors.New("unknown tool"), &tools.Outcome{})
	assert.Equal(t, metrics.OutcomeProtocolError, o)
}

func TestObserveCountsAndLogs(t *testing.T) {
	t.Parallel()
	s := metrics.New()
	var logs bytes.Buffer
	mw := Observe(s, ObserveOptions{Known: func(n string) bool { return n == "known" }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	h := mw(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p.Name == "known" {
			return &mcp.CallToolResult{}, nil
		}
		return nil, errors.New("unknown tool")
	})
	_, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "known"}})
	require.NoError(t, err)
	_, err = h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "made-up-" + strings.Repeat("x", 50)}})
	require.Error(t, err)
	_, err = h(context.Background(), "tools/list", &mcp.ListToolsRequest{})
	require.Error(t, err) // passed through untouched
	assert.Equal(t, float64(1), s.ToolCalls.Value("known", metrics.OutcomeOK))
	assert.Equal(t, float64(1), s.ToolCalls.Value(metrics.UnknownTool, metrics.OutcomeProtocolError), "unknown names never become labels")
	assert.Equal(t, uint64(1), s.ToolDuration.Count("known"))
	assert.Contains(t, logs.String(), `"msg":"tool call"`)
	assert.Contains(t, logs.String(), `"request_id":"`)
	assert.Equal(t, 2, strings.Count(logs.String(), "\n"), "one line per tools/call")
}

// BenchmarkObserve is the cost the metrics middleware adds to one
// tools/call (an error outcome, so the error series is touched too).
func BenchmarkObserve(b *testing.B) {
	s := metrics.New()
	recorded := tools.Outcome{Recorded: true, Code: apperr.CodeValidation, Category: apperr.CatValidation}
	res := &mcp.CallToolResult{IsError: true}
	h := Observe(s, ObserveOptions{Known: func(string) bool { return true }})(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		_, o := tools.TrackOutcome(ctx)
		*o = recorded
		return res, nil
	})
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "vaultclaw_connectors_list"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h(ctx, "tools/call", req)
	}
}

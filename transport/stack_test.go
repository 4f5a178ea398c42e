package transport

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// deep uses about depth frames of 256 bytes of stack, as a tool call's
// middleware, decoders and searchers do.
//
//go:noinline
func deep(depth int) int {
	var frame [256]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return int(frame[0])
	}
	return deep(depth-1) + int(frame[depth%len(frame)])
}

func TestStackMiddlewarePassesTheRequestThrough(t *testing.T) {
	type key struct{}
	want := &mcp.CallToolResult{}
	h := stackMiddleware(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		require.Equal(t, "v", ctx.Value(key{}))
		require.Equal(t, "tools/call", method)
		return want, nil
	})
	got, err := h(context.WithValue(context.Background(), key{}, "v"), "tools/call", &mcp.CallToolRequest{})
	require.NoError(t, err)
	require.Same(t, want, got)
}

// BenchmarkRequestStack measures a request goroutine that goes about 30 KiB
// deep ("deep"), as go-sdk starts one for each request, and one that stays
// shallow (a cheap call): "grown" grows its stack first (growStack),
// "doubling" lets the runtime grow it frame by frame.
func BenchmarkRequestStack(b *testing.B) {
	for _, depth := range []struct {
		name   string
		frames int
	}{{"shallow", 2}, {"deep", 100}} {
		for _, grow := range []bool{false, true} {
			name := depth.name + "/doubling"
			if grow {
				name = depth.name + "/grown"
			}
			b.Run(name, func(b *testing.B) {
				done := make(chan int)
				for b.Loop() {
					go func() {
						if grow {
							growStack()
						}
						done <- deep(depth.frames)
					}()
					<-done
				}
			})
		}
	}
}

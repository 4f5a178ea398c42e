package loadgen

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FloorTool is the one tool of the floor server.
const FloorTool = "ping"

// FloorArg is the argument `accords-bench floor` is started with.
const FloorArg = "floor"

// NewFloorServer is the floor every figure is divided by: a bare go-sdk
// server with one tool that answers at once, so what it costs is the SDK,
// JSON-RPC and the pipe, nothing of ours.
func NewFloorServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "accords-bench-floor", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        FloorTool,
		Description: "Answers pong.",
		InputSchema: map[string]any{"type": "object"},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
	})
	return s
}

// ServeFloor serves the floor server over stdio until stdin closes.
func ServeFloor(ctx context.Context) error {
	return NewFloorServer().Run(ctx, &mcp.StdioTransport{})
}

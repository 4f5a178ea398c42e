package frontend_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/transport/frontend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigResult is about the size of a ten-hit search result.
var bigResult = strings.Repeat(`{"cookbook_id":"bench.cookbook.0042","version":"1.0.0","entry_id":"entry_send_mail","entry_type":"recipe.verb.v1","title":"Send a message"},`, 30)

// BenchmarkForward measures the front end's own cost per call: a client
// calls a tool with a ~4 KB result through it, against a server on an
// in-memory pipe (compare BenchmarkDirect, the same call without it).
func BenchmarkForward(b *testing.B) {
	srv := benchServer()
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		a, c := net.Pipe()
		if _, err := srv.Connect(context.Background(), &transport.AttachTransport{Conn: c, Session: "c-bench"}, nil); err != nil {
			return nil, err
		}
		return a, nil
	}
	cin, feIn := io.Pipe()
	feOut, cout := io.Pipe()
	ctx := b.Context()
	go func() { _ = frontend.Run(ctx, frontend.Options{In: cin, Out: cout, Dial: dial}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.IOTransport{Reader: feOut, Writer: feIn}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	benchCalls(b, cs)
}

// BenchmarkDirect is the same call with the client on the server's pipe.
func BenchmarkDirect(b *testing.B) {
	srv := benchServer()
	cin, sIn := io.Pipe()
	sOut, cout := io.Pipe()
	ctx := b.Context()
	go func() { _ = srv.Run(ctx, &transport.StdioTransport{In: cin, Out: cout}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.IOTransport{Reader: sOut, Writer: sIn}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	benchCalls(b, cs)
}

func benchServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bigResult}}}, nil
	})
	return srv
}

func benchCalls(b *testing.B, cs *mcp.ClientSession) {
	b.ReportAllocs()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"query": "x"}}); err != nil {
			b.Fatal(err)
		}
	}
}

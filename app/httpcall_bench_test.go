package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capturedPOST is one HTTP request as a client sent it.
type capturedPOST struct {
	header http.Header
	body   []byte
}

// captureCall records the POST a go-sdk client of version sends for one
// call of tool through h.
func captureCall(b *testing.B, h http.Handler, version, tool string, args map[string]any) capturedPOST {
	b.Helper()
	var mu sync.Mutex
	var last capturedPOST
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			last = capturedPOST{header: r.Header.Clone(), body: body}
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/v1/mcp", DisableStandaloneSSE: true, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("call %s: %v %v", tool, err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	return last
}

// BenchmarkHTTPCall is the server's share of one stateless HTTP tools/call,
// replaying the bytes a go-sdk client of each protocol era sends through
// the whole HTTP handler: the bridge, authentication, the SDK's Streamable
// HTTP handler, the gateway and the tool. The calls are a session status
// (the cheap call) and a search of the empty catalog (a tool with a larger
// input schema). No network and no client work; p50-ns is the median call.
func BenchmarkHTTPCall(b *testing.B) {
	cfg := testenv.Config(b)
	// The anonymous caller's default rate limit would refuse most calls.
	cfg.PolicyFile = filepath.Join(b.TempDir(), "policy.toml")
	if err := os.WriteFile(cfg.PolicyFile, []byte("version = 1\n\n[anonymous]\ncalls_per_minute = 0\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := app.Open(cfg, testenv.Logger())
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	h := a.HTTPHandler()
	calls := []struct {
		name, tool string
		args       map[string]any
	}{
		{"status", "vaultclaw_session_status", map[string]any{}},
		{"search", "vaultclaw_recipes_search", map[string]any{"query": "send an email", "limit": 10}},
	}
	for _, c := range calls {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			b.Run(c.name+"/"+version, func(b *testing.B) {
				benchReplay(b, h, captureCall(b, h, version, c.tool, c.args))
			})
		}
	}
}

// benchReplay sends req to h in a loop.
func benchReplay(b *testing.B, h http.Handler, req capturedPOST) {
	var times []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/mcp", bytes.NewReader(req.body))
		r.Header = req.header.Clone()
		r.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(w, r)
		times = append(times, time.Since(t0))
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`\"ok\":true`)) {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

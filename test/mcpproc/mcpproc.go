// Package mcpproc starts a built MCP server binary as a child process and
// connects go-sdk client sessions to it: over stdio (mcp.CommandTransport)
// or over Streamable HTTP (mcp.StreamableClientTransport, the server started
// as `serve --http 127.0.0.1:0` and its address read from its "ready" log
// line). The reliability and scale-out suites and the load tool
// (cmd/accords-load) start servers through it. It imports nothing of this
// module.
package mcpproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transports.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Options say how to start the server.
type Options struct {
	Bin string
	// Args are the binary's arguments over stdio (none for accords-mcp,
	// which serves stdio by default). Over HTTP it runs
	// `serve --http 127.0.0.1:0`.
	Args      []string
	DBPath    string
	Transport string
	// Clients is the number of HTTP client sessions (stdio has one).
	Clients int
	// Env entries ("KEY=value") added to the server's environment.
	Env []string
	// Header is sent with every HTTP request of the client sessions (an
	// Authorization bearer token, for a server whose policy wants one).
	Header http.Header
}

// Server is a running server process with connected client sessions.
type Server struct {
	Cmd       *exec.Cmd
	Transport string
	// Endpoint is the HTTP server's MCP endpoint.
	Endpoint string
	Sessions []*mcp.ClientSession
	// Initialize is the time from process start to the initialize answer
	// of the first session (for HTTP: including the wait for "ready").
	Initialize time.Duration
	stderr     *tailBuffer
	done       chan struct{} // HTTP: closed when the process has exited
	waitErr    error
	killed     bool
}

// tailKeep is how much of the server's stderr is kept for diagnostics; up
// to twice as much is held, so that a log line costs its own bytes and not
// a copy of the whole tail.
const tailKeep = 64 << 10

type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailKeep {
		t.b = append(t.b[:0:0], t.b[len(t.b)-tailKeep:]...)
	}
	return len(p), nil
}

// Stderr returns the tail of the server's log.
func (s *Server) Stderr() string {
	s.stderr.mu.Lock()
	defer s.stderr.mu.Unlock()
	return string(s.stderr.b[max(len(s.stderr.b)-tailKeep, 0):])
}

// Env is the environment a test server runs with: the caller's environment
// minus anything that would point it at a real vault, database or address,
// plus the database path, a fixed secret key and extra.
func Env(dbPath string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ACCORDS_MCP_") || strings.HasPrefix(k, "VC_") || k == "VAULT_UNIX_SOCKET" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "ACCORDS_MCP_DB="+dbPath, "ACCORDS_MCP_SECRET_KEY="+strings.Repeat("5a", 32))
	return append(env, extra...)
}

// Start starts the binary and connects the client sessions. Over stdio the
// server runs standalone (it serves in the launched process).
func Start(ctx context.Context, o Options) (*Server, error) {
	s := &Server{Transport: o.Transport, stderr: &tailBuffer{}, done: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "accords-test", Version: "1"}, nil)
	switch o.Transport {
	case Stdio:
		cmd := exec.Command(o.Bin, o.Args...)
		cmd.Env = Env(o.DBPath, append([]string{"ACCORDS_MCP_LOG_LEVEL=warn", "ACCORDS_MCP_STANDALONE=true"}, o.Env...))
		cmd.Stderr = s.stderr
		s.Cmd = cmd
		t0 := time.Now()
		// Closing the session closes stdin and waits for the exit, then
		// SIGTERM, then SIGKILL, 10 s apart.
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
		if err != nil {
			s.kill()
			return nil, fmt.Errorf("connect over stdio: %w\n%s", err, s.Stderr())
		}
		s.Initialize = time.Since(t0)
		s.Sessions = []*mcp.ClientSession{cs}
	case HTTP:
		cmd := exec.Command(o.Bin, "serve", "--http", "127.0.0.1:0")
		cmd.Env = Env(o.DBPath, o.Env)
		pipe, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		s.Cmd = cmd
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() { s.waitErr = cmd.Wait(); close(s.done) }()
		addr, err := s.awaitReady(ctx, pipe)
		if err != nil {
			s.kill()
			return nil, err
		}
		s.Endpoint = "http://" + addr + "/v1/mcp"
		n := max(o.Clients, 1)
		var rt http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: n + 4, IdleConnTimeout: 90 * time.Second}
		if len(o.Header) > 0 {
			rt = withHeader{rt, o.Header}
		}
		hc := &http.Client{Transport: rt}
		for i := range n {
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: s.Endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
			}, nil)
			if err != nil {
				_ = s.Close()
				return nil, fmt.Errorf("connect over HTTP: %w\n%s", err, s.Stderr())
			}
			if i == 0 {
				s.Initialize = time.Since(t0)
			}
			s.Sessions = append(s.Sessions, cs)
		}
	default:
		return nil, fmt.Errorf("unknown transport %q (stdio or http)", o.Transport)
	}
	return s, nil
}

// withHeader adds its header to every request.
type withHeader struct {
	next http.RoundTripper
	h    http.Header
}

func (w withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	maps.Copy(r.Header, w.h)
	return w.next.RoundTrip(r)
}

// awaitReady reads the JSON log on stderr until the "ready" line that
// carries the listen address; all of the log goes to the tail buffer.
func (s *Server) awaitReady(ctx context.Context, stderr io.Reader) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = s.stderr.Write(append(append([]byte(nil), line...), '\n'))
			if sent {
				continue
			}
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "ready" && rec.Addr != "" {
				found <- rec.Addr
				sent = true
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, nil
	case <-s.done:
		return "", fmt.Errorf("server exited before listening: %w\n%s", s.waitErr, s.Stderr())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("server did not report ready within 30s\n%s", s.Stderr())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Close ends the sessions and stops the process: over stdio by closing its
// stdin (see Start), over HTTP by SIGTERM, killing it if it does not exit
// within 15 s. It reports an exit other than a clean one, unless the
// process was killed.
func (s *Server) Close() error {
	var err error
	for _, cs := range s.Sessions {
		if cerr := cs.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	s.Sessions = nil
	if s.Transport == Stdio {
		if err != nil && !s.killed {
			return fmt.Errorf("server exit: %w\n%s", err, s.Stderr())
		}
		return nil
	}
	if s.Cmd == nil || s.Cmd.Process == nil {
		return nil
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(15 * time.Second):
		s.kill()
		return errors.New("server did not exit within 15s of SIGTERM; killed")
	}
}

// Kill sends SIGKILL (crash tests) and ends the sessions.
func (s *Server) Kill() {
	s.kill()
	for _, cs := range s.Sessions {
		_ = cs.Close()
	}
	s.Sessions = nil
}

func (s *Server) kill() {
	if s.Cmd == nil || s.Cmd.Process == nil {
		return
	}
	s.killed = true
	_ = s.Cmd.Process.Kill()
	if s.Transport == HTTP {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	}
}

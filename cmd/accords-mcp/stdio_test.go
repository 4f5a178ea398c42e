package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "accords-mcp-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "accords-mcp")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
}

// syncBuffer collects stderr while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, dbPath string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "ACCORDS_MCP_DB="+dbPath, "ACCORDS_MCP_HTTP_ADDR=", "VC_AGENT_TOKEN=")
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &proc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), stderr: stderr}
}

func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(t, err)
}

// recv reads one newline-delimited JSON message, failing after a timeout.
func (p *proc) recv(t *testing.T) map[string]any {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := p.out.ReadString('\n')
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err, "stderr: %s", p.stderr.String())
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.line), &m), r.line)
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("no response; stderr: %s", p.stderr.String())
		return nil
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(20 * time.Second):
		t.Fatalf("process did not exit; stderr: %s", p.stderr.String())
		return -1
	}
}

const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func structured(t *testing.T, msg map[string]any) map[string]any {
	t.Helper()
	res, ok := msg["result"].(map[string]any)
	require.True(t, ok, "no result in %v", msg)
	return res["structuredContent"].(map[string]any)
}

func TestStdioBinaryGarbageFramingAndEOF(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "db", "accords.db")
	p := start(t, dbPath)

	p.send(t, initMsg)
	init := p.recv(t)
	require.Equal(t, 1.0, init["id"])
	require.Equal(t, "accords-mcp", init["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	p.send(t, `this is not json {`)
	perr := p.recv(t)
	require.Nil(t, perr["id"])
	require.Equal(t, -32700.0, perr["error"].(map[string]any)["code"])

	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := p.recv(t)
	require.Equal(t, 2.0, list["id"], "the server keeps serving after a parse error")
	require.NotEmpty(t, list["result"].(map[string]any)["tools"])

	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"stdio-secret-token","base_url":"http://127.0.0.1:8787"}}}`)
	env := structured(t, p.recv(t))
	require.Equal(t, true, env["ok"])
	require.Equal(t, "std***ken", env["data"].(map[string]any)["token"])

	// A Content-Length framed request gets a framed response.
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`
	_, err := fmt.Fprintf(p.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	header, err := p.out.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(header, "Content-Length: "), header)
	var n int
	_, err = fmt.Sscanf(strings.TrimSpace(header), "Content-Length: %d", &n)
	require.NoError(t, err)
	_, err = p.out.ReadString('\n') // blank line
	require.NoError(t, err)
	framed := make([]byte, n)
	_, err = io.ReadFull(p.out, framed)
	require.NoError(t, err)
	var msg map[string]any
	require.NoError(t, json.Unmarshal(framed, &msg))
	require.Equal(t, 4.0, msg["id"])
	require.Equal(t, true, structured(t, msg)["data"].(map[string]any)["configured"])

	// A request still in flight at end of input is answered before exit.
	p.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, 5.0, p.recv(t)["id"])
	require.Equal(t, 0, p.wait(t), "closing stdin exits 0; stderr: %s", p.stderr.String())
	require.NotContains(t, p.stderr.String(), "stdio-secret-token", "tokens are never logged")

	// Restart: the session is still there, masked, and decrypts.
	p2 := start(t, dbPath)
	p2.send(t, initMsg)
	p2.recv(t)
	p2.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	d := structured(t, p2.recv(t))["data"].(map[string]any)
	require.Equal(t, true, d["configured"])
	require.Equal(t, "std***ken", d["token"])
	require.Equal(t, "http://127.0.0.1:8787", d["base_url"])
	require.NoError(t, p2.stdin.Close())
	require.Equal(t, 0, p2.wait(t))

	// A different secret key gives a clear error, never garbage.
	p3 := start(t, dbPath, "ACCORDS_MCP_SECRET_KEY="+strings.Repeat("cd", 32))
	p3.send(t, initMsg)
	p3.recv(t)
	p3.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	env = structured(t, p3.recv(t))
	require.Equal(t, false, env["ok"])
	require.Contains(t, env["error"].(map[string]any)["message"], "secret key")
	require.NoError(t, p3.stdin.Close())
	require.Equal(t, 0, p3.wait(t))
}

func TestStdioSIGTERMClosesCleanly(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "accords.db")
	p := start(t, dbPath)
	p.send(t, initMsg)
	p.recv(t)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
	// The db lock was released: a new process can open it at once.
	p2 := start(t, dbPath)
	p2.send(t, initMsg)
	require.Equal(t, 1.0, p2.recv(t)["id"])
}

func TestSecondProcessOnSameDBFailsClearly(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "accords.db")
	p := start(t, dbPath)
	p.send(t, initMsg)
	p.recv(t)
	p2 := start(t, dbPath)
	require.Equal(t, 1, p2.wait(t))
	require.Contains(t, p2.stderr.String(), dbPath)
	require.Contains(t, p2.stderr.String(), "locked")
}

// TestStdioSIGTERMDuringWait: SIGTERM while an approval wait runs answers
// the wait at once with the retryable envelope that keeps the handle, and
// the process exits within 2 s (it used to sit out its 10 s grace and
// leave the client an empty reply).
func TestStdioSIGTERMDuringWait(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	p := start(t, filepath.Join(t.TempDir(), "accords.db"), "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+srv.URL, "ACCORDS_MCP_SECRET_KEY="+strings.Repeat("cd", 32))
	p.send(t, initMsg)
	p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_connector_execute_job","arguments":{"request":{"connector_id":"google","verb":"google.gmail.send.v1","policy_version":"1","request":{"user_id":"me","to":["bob@example.com"],"subject":"s","text_plain":"t"}}}}}`)
	env := structured(t, p.recv(t))
	handle := env["error"].(map[string]any)["details"].(map[string]any)["approval"].(map[string]any)["next_action"].(map[string]any)["arguments"].(map[string]any)["handle"]
	args, _ := json.Marshal(map[string]any{"handle": handle, "timeout_ms": 600000, "poll_interval_ms": 250})
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_approval_wait","arguments":`+string(args)+`}}`)
	require.Eventually(t, func() bool {
		return len(sim.RequestsTo("GET", "/v0/jobs/"+handle.(map[string]any)["job_id"].(string))) > 0
	},
		10*time.Second, 20*time.Millisecond)
	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	msg := p.recv(t)
	require.Equal(t, 3.0, msg["id"])
	e := structured(t, msg)["error"].(map[string]any)
	require.Equal(t, "MCP_WAIT_TIMEOUT", e["code"])
	require.Equal(t, true, e["retryable"])
	require.Equal(t, "server_shutting_down", e["details"].(map[string]any)["reason"])
	require.Equal(t, handle.(map[string]any)["job_id"], e["details"].(map[string]any)["handle"].(map[string]any)["job_id"])
	require.Equal(t, 0, p.wait(t))
	require.Less(t, time.Since(start), 2*time.Second, "shutdown finishes within 2 s")
}

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
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binary builds the real command once per test run.
func binary(t *testing.T) string { return testbin.AccordsMCP(t) }

type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncbuf.Buffer
}

// start launches the binary serving stdio in its own process
// (--standalone).
func start(t *testing.T, dbPath string, env ...string) *proc {
	t.Helper()
	return launch(t, dbPath, append([]string{"ACCORDS_MCP_STANDALONE=true"}, env...)...)
}

// startAttached launches the binary as clients do by default: a front end
// attached to the database's daemon, started by the first such launch and
// stopped when the test ends.
func startAttached(t *testing.T, dbPath string, env ...string) *proc {
	t.Helper()
	t.Cleanup(func() { stopDaemon(t, dbPath) })
	return launch(t, dbPath, append([]string{"ACCORDS_MCP_STANDALONE=false"}, env...)...)
}

// stopDaemon stops the daemon of dbPath, if one runs.
func stopDaemon(t *testing.T, dbPath string) {
	t.Helper()
	code, out, errOut := binCmd(t, dbPath, "stop")
	require.Equal(t, 0, code, "stop: %s%s", out, errOut)
}

// binCmd runs one command of the built binary on dbPath.
func binCmd(t *testing.T, dbPath string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "ACCORDS_MCP_DB="+dbPath, "ACCORDS_MCP_HTTP_ADDR=", "VC_AGENT_TOKEN=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

func launch(t *testing.T, dbPath string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "ACCORDS_MCP_DB="+dbPath, "ACCORDS_MCP_HTTP_ADDR=", "VC_AGENT_TOKEN=")
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncbuf.Buffer{}
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
	for _, mode := range []string{"standalone", "attached"} {
		t.Run(mode, func(t *testing.T) { framingAndEOF(t, mode == "attached") })
	}
}

// framingAndEOF is the stdio contract, the same whether the launch serves
// in-process or forwards to the daemon.
func framingAndEOF(t *testing.T, attached bool) {
	dbPath := filepath.Join(shortTemp(t), "db", "accords.db")
	starter := start
	if attached {
		starter = startAttached
	}
	p := starter(t, dbPath)

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
	if attached {
		// The daemon outlives the launch; stop it so the next one reopens
		// the file, as a restart would.
		stopDaemon(t, dbPath)
		raw, err := os.ReadFile(dbPath + ".log")
		require.NoError(t, err)
		require.NotContains(t, string(raw), "stdio-secret-token", "tokens are never in the daemon's log")
	}

	// Restart: the session is still there, masked, and decrypts.
	p2 := starter(t, dbPath)
	p2.send(t, initMsg)
	p2.recv(t)
	p2.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	d := structured(t, p2.recv(t))["data"].(map[string]any)
	require.Equal(t, true, d["configured"])
	require.Equal(t, "std***ken", d["token"])
	require.Equal(t, "http://127.0.0.1:8787", d["base_url"])
	require.NoError(t, p2.stdin.Close())
	require.Equal(t, 0, p2.wait(t))

	p3 := starter(t, dbPath, "ACCORDS_MCP_SECRET_KEY="+strings.Repeat("cd", 32))
	p3.send(t, initMsg)
	p3.recv(t)
	p3.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	env = structured(t, p3.recv(t))
	if attached {
		// The running daemon keeps its key; the launch is told its own is
		// ignored.
		require.Equal(t, true, env["ok"], env)
		require.NoError(t, p3.stdin.Close())
		require.Equal(t, 0, p3.wait(t))
		require.Contains(t, p3.stderr.String(), "ACCORDS_MCP_SECRET_KEY", "the ignored setting is named")
		require.NotContains(t, p3.stderr.String(), strings.Repeat("cd", 32), "never its value")
		return
	}
	// A different secret key gives a clear error, never garbage.
	require.Equal(t, false, env["ok"])
	require.Contains(t, env["error"].(map[string]any)["message"], "secret key")
	require.NoError(t, p3.stdin.Close())
	require.Equal(t, 0, p3.wait(t))
}

// shortTemp is a temporary folder with a short path: Unix socket paths
// are limited to about 100 bytes.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "acc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestStdioSIGTERMClosesCleanly(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
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

func TestAttachedSIGTERMLeavesTheDaemonServing(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	p := startAttached(t, dbPath)
	p.send(t, initMsg)
	p.recv(t)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
	// The daemon notices the closed stream a moment later.
	require.Eventually(t, func() bool {
		code, out, _ := binCmd(t, dbPath, "status")
		return code == 0 && strings.Contains(out, "auto") && strings.Contains(out, "0 attached")
	}, 10*time.Second, 20*time.Millisecond, "the daemon still runs, and the front end's session ended with it")
	p2 := startAttached(t, dbPath)
	p2.send(t, initMsg)
	require.Equal(t, 1.0, p2.recv(t)["id"])
}

func TestSecondStandaloneOnSameDBFailsClearly(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	p := start(t, dbPath)
	p.send(t, initMsg)
	p.recv(t)
	p2 := start(t, dbPath)
	require.Equal(t, 1, p2.wait(t))
	require.Contains(t, p2.stderr.String(), dbPath)
	require.Contains(t, p2.stderr.String(), "served by a running accords-mcp")
	require.Contains(t, p2.stderr.String(), "standalone")
}

// TestLaunchesShareTheOwner is the regression of "database is locked": a
// second client's launch, next to a process that owns the database (here
// a standalone one), attaches to it and works; its read-only flag is its
// own.
func TestLaunchesShareTheOwner(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	owner := start(t, dbPath)
	owner.send(t, initMsg)
	owner.recv(t)
	p := launch(t, dbPath, "ACCORDS_MCP_STANDALONE=false", "ACCORDS_MCP_READ_ONLY=true")
	p.send(t, initMsg)
	require.Equal(t, 1.0, p.recv(t)["id"], "stderr: %s", p.stderr.String())
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"t0k3n-value"}}}`)
	env := structured(t, p.recv(t))
	require.Equal(t, false, env["ok"], "this launch is read-only")
	require.Equal(t, "MCP_PERMISSION_DENIED", env["error"].(map[string]any)["code"])
	owner.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"t0k3n-value"}}}`)
	require.Equal(t, true, structured(t, owner.recv(t))["ok"], "the owner's own client is not")
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	require.Equal(t, true, structured(t, p.recv(t))["data"].(map[string]any)["configured"], "one database")

	bad := launch(t, dbPath, "ACCORDS_MCP_STANDALONE=false", "ACCORDS_MCP_TOOLSETS=vault,nope")
	require.Equal(t, 1, bad.wait(t))
	require.Contains(t, bad.stderr.String(), `unknown toolset "nope"`, "the daemon refuses the view and the launch says why")
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

// TestDaemonThatCannotStartSaysWhy: a launch whose daemon fails to start
// (here: a broken policy file, a daemon-wide setting) prints the daemon's
// own reason and exits 1, leaving nothing running.
func TestDaemonThatCannotStartSaysWhy(t *testing.T) {
	dir := shortTemp(t)
	dbPath := filepath.Join(dir, "accords.db")
	policy := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte("version = 1\n[[callers]]\nid = \n"), 0o600))
	p := launch(t, dbPath, "ACCORDS_MCP_STANDALONE=false", "ACCORDS_MCP_POLICY_FILE="+policy)
	require.Equal(t, 1, p.wait(t))
	require.Contains(t, p.stderr.String(), "the daemon could not start")
	require.Contains(t, p.stderr.String(), "policy", "the daemon's reason, not just that it failed")
	code, _, _ := binCmd(t, dbPath, "status")
	require.Equal(t, 3, code, "nothing is left running")
}

// TestExplicitDaemonTakesOverFromAnAutoOne: `serve --http` on a database a
// stdio launch's daemon owns asks that one to hand over; the launch's next
// request goes to the HTTP daemon, with its session re-initialised.
func TestExplicitDaemonTakesOverFromAnAutoOne(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	p := startAttached(t, dbPath)
	p.send(t, initMsg)
	p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	code, before, _ := binCmd(t, dbPath, "status")
	require.Equal(t, 0, code)
	require.Contains(t, before, "auto")

	srv := exec.Command(binary(t), "serve", "--http", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "ACCORDS_MCP_DB="+dbPath, "VC_AGENT_TOKEN=")
	errb := &syncbuf.Buffer{}
	srv.Stderr = errb
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() })
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), `"msg":"ready"`) }, 60*time.Second, 20*time.Millisecond, errb.String())
	assert.Contains(t, errb.String(), "taking over")
	code, after, _ := binCmd(t, dbPath, "status")
	require.Equal(t, 0, code)
	assert.Contains(t, after, "explicit")
	assert.Contains(t, after, "http 127.0.0.1:")

	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_session_status","arguments":{}}}`)
	msg, changed := p.exchange(t, 2)
	assert.Equal(t, true, structured(t, msg)["ok"], "the launch goes on with the new owner: %v\n%s", msg, p.stderr.String())
	assert.Equal(t, 1, changed, "the client is told to list again: the new owner may offer other tools")
	// stderr arrives through a pipe: give it a moment.
	assert.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "re-initialised") }, 5*time.Second, 10*time.Millisecond, p.stderr.String())
}

package transport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdioPeer drives App.ServeStdio over pipes, as an MCP client would.
type stdioPeer struct {
	in     *io.PipeWriter
	out    *bufio.Reader
	cancel context.CancelFunc
	done   chan error
}

func serveStdio(t *testing.T, a *app.App) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &stdioPeer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := a.ServeStdio(ctx, inR, outW)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case err := <-p.done:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("ServeStdio did not return")
		}
	})
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.recv(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err)
}

func (p *stdioPeer) recv(t *testing.T) map[string]any {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := p.out.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.line), &m), r.line)
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no message from the server")
		return nil
	}
}

func toolCallLine(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(mcptest.ToolsCall(id, tool, args))
	return string(b)
}

// TestStdioOversizedMessageIsRefusedAndSessionGoesOn: a message over the
// cap gets a JSON-RPC error carrying its id (read from its beginning),
// without being buffered, and the next message is served.
func TestStdioOversizedMessageIsRefusedAndSessionGoesOn(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES=65536"))
	p := serveStdio(t, a)

	huge := toolCallLine(3, "vaultclaw_recipes_search", map[string]any{"query": strings.Repeat("word ", 40000)})
	p.send(t, huge)
	m := p.recv(t)
	assert.EqualValues(t, 3, m["id"], "the refusal names the request")
	e, _ := m["error"].(map[string]any)
	require.NotNil(t, e, "%v", m)
	assert.EqualValues(t, -32600, e["code"])
	assert.Contains(t, e["message"], "65536")

	// Content-Length framing: the same refusal, framed like the request.
	_, err := fmt.Fprintf(p.in, "Content-Length: %d\r\n\r\n%s", len(huge), huge)
	require.NoError(t, err)
	hdr, err := p.out.ReadString('\n')
	require.NoError(t, err)
	var n int
	_, err = fmt.Sscanf(hdr, "Content-Length: %d", &n)
	require.NoError(t, err, hdr)
	_, _ = p.out.ReadString('\n')
	body := make([]byte, n)
	_, err = io.ReadFull(p.out, body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, &m))
	assert.EqualValues(t, 3, m["id"])

	p.send(t, toolCallLine(4, "vaultclaw_session_status", map[string]any{}))
	m = p.recv(t)
	assert.EqualValues(t, 4, m["id"])
	assert.NotNil(t, m["result"], "%v", m)
}

func stdioSim(t *testing.T) (*vaultsim.Server, *app.App, map[string]any) {
	t.Helper()
	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: "vc_tok_stdio"})
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	a := testenv.Open(t, testenv.Config(t, "VC_AGENT_TOKEN=vc_tok_stdio", "VC_BASE_URL="+sim.URL))
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	env := mcptest.Call(t, cs, "vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{
		"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{"bob@example.com"}, "subject": "s", "text_plain": "t"}}})
	mcptest.RequireCode(t, env, "MCP_APPROVAL_REQUIRED")
	h := env.Details()["approval"].(map[string]any)["next_action"].(map[string]any)["arguments"].(map[string]any)["handle"].(map[string]any)
	require.NoError(t, cs.Close())
	sim.ClearRequests()
	return sim, a, h
}

func polls(sim *vaultsim.Server) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v0/jobs/") {
			n++
		}
	}
	return n
}

// TestStdioCancelledRequestGetsNoResponse: after notifications/cancelled
// the wait stops polling and its response is never written (today it was
// an MCP_INTERNAL "wait cancelled" reply).
func TestStdioCancelledRequestGetsNoResponse(t *testing.T) {
	t.Parallel()
	sim, a, h := stdioSim(t)
	p := serveStdio(t, a)
	p.send(t, toolCallLine(7, "vaultclaw_approval_wait", map[string]any{"handle": h, "timeout_ms": 60000, "poll_interval_ms": 250}))
	require.Eventually(t, func() bool { return polls(sim) >= 2 }, 10*time.Second, 20*time.Millisecond)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	time.Sleep(300 * time.Millisecond)
	settled := polls(sim)
	p.send(t, toolCallLine(8, "vaultclaw_session_status", map[string]any{}))
	m := p.recv(t)
	assert.EqualValues(t, 8, m["id"], "the first message after the cancellation answers the next request, not the cancelled one: %v", m)
	time.Sleep(1200 * time.Millisecond)
	assert.Equal(t, settled, polls(sim), "the cancelled wait stopped polling Vault")
}

// TestStdioShutdownDuringWait: the serve context ending (SIGTERM) answers
// the wait at once with the retryable envelope and its handle, and the
// session ends within 2 s.
func TestStdioShutdownDuringWait(t *testing.T) {
	t.Parallel()
	sim, a, h := stdioSim(t)
	p := serveStdio(t, a)
	p.send(t, toolCallLine(9, "vaultclaw_approval_wait", map[string]any{"handle": h, "timeout_ms": 60000, "poll_interval_ms": 250}))
	require.Eventually(t, func() bool { return polls(sim) >= 1 }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	p.cancel()
	m := p.recv(t)
	assert.EqualValues(t, 9, m["id"])
	res := m["result"].(map[string]any)["structuredContent"].(map[string]any)
	e := res["error"].(map[string]any)
	assert.Equal(t, "MCP_WAIT_TIMEOUT", e["code"])
	assert.Equal(t, true, e["retryable"])
	d := e["details"].(map[string]any)
	assert.Equal(t, "server_shutting_down", d["reason"])
	assert.Equal(t, h["job_id"], d["handle"].(map[string]any)["job_id"])
	select {
	case err := <-p.done:
		assert.NoError(t, err)
		p.done <- nil
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return")
	}
	assert.Less(t, time.Since(start), 2*time.Second)
}

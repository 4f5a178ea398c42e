package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// home is one user's machine for the daemon tests: a temporary HOME and
// XDG_CONFIG_HOME, so the default database (no ACCORDS_MCP_DB) is real,
// and the environment every launch and command of the test gets.
type home struct {
	t   testing.TB
	dir string
	env []string
	db  string
}

// newHome makes the temporary home; extra are KEY=value settings for
// every process (the Vault session, the idle timeout).
func newHome(t testing.TB, extra ...string) *home {
	t.Helper()
	// Short: Unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "acch")
	require.NoError(t, err)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ACCORDS_MCP_") || strings.HasPrefix(k, "VC_") || k == "VAULT_UNIX_SOCKET" || k == "HOME" || k == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "ACCORDS_MCP_LOG_LEVEL=info")
	h := &home{t: t, dir: dir, env: append(env, extra...), db: filepath.Join(dir, ".config", "accords-mcp", "accords.db")}
	t.Cleanup(func() {
		// Whatever daemon the test left is stopped before its folder goes.
		_, _, _ = h.cmd("stop", "--timeout", "20s")
		os.RemoveAll(dir)
	})
	return h
}

// cmd runs one accords-mcp command in the home.
func (h *home) cmd(args ...string) (int, string, string) {
	return h.cmdEnv(nil, args...)
}

func (h *home) cmdEnv(extra []string, args ...string) (int, string, string) {
	cmd := exec.Command(binary(h.t), args...)
	cmd.Env = append(append([]string(nil), h.env...), extra...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// status is the running daemon's status (ok false when none runs).
func (h *home) status() (daemonStatus, bool) {
	code, out, _ := h.cmd("status", "--json")
	if code != 0 {
		return daemonStatus{}, false
	}
	var st daemonStatus
	require.NoError(h.t, json.Unmarshal([]byte(out), &st), out)
	return st, true
}

type daemonStatus struct {
	PID     int    `json:"pid"`
	Mode    string `json:"mode"`
	Clients []struct {
		Session string `json:"session"`
		PID     int    `json:"pid"`
		Name    string `json:"name"`
	} `json:"clients"`
	Transports []string `json:"transports"`
}

// receipts are every audit receipt, oldest first (audit tail, through the
// daemon when one runs).
func (h *home) receipts() []audit.Receipt {
	code, out, errOut := h.cmd("audit", "tail", "-n", "1000000", "--json")
	require.Equal(h.t, 0, code, errOut)
	var rs []audit.Receipt
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r audit.Receipt
		require.NoError(h.t, json.Unmarshal([]byte(line), &r), line)
		rs = append(rs, r)
	}
	return rs
}

// launchedClient is an MCP client that launched accords-mcp over stdio.
type launchedClient struct {
	name string
	cs   *mcp.ClientSession
	cmd  *exec.Cmd
	errb *syncbuf.Buffer

	mu       sync.Mutex
	progress []string // progress tokens received
}

// launch starts `accords-mcp` as a stdio client configures it (no
// arguments) and connects: the go-sdk client's default handshake
// (server/discover, stateless requests).
func (h *home) launch(name string, extra ...string) *launchedClient {
	h.t.Helper()
	return h.launchWith(name, nil, extra...)
}

// legacyProtocol is the protocol version of clients that open their
// session with initialize (most deployed clients today).
const legacyProtocol = "2025-06-18"

// launchLegacy connects with initialize, so the session has state the
// front end must replay to a new daemon.
func (h *home) launchLegacy(name string, extra ...string) *launchedClient {
	h.t.Helper()
	return h.launchWith(name, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol}, extra...)
}

func (h *home) launchWith(name string, opts *mcp.ClientSessionOptions, extra ...string) *launchedClient {
	h.t.Helper()
	c := &launchedClient{name: name, errb: &syncbuf.Buffer{}}
	cmd := exec.Command(binary(h.t))
	cmd.Env = append(append([]string(nil), h.env...), extra...)
	cmd.Stderr = c.errb
	c.cmd = cmd
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, fmt.Sprint(r.Params.ProgressToken))
			c.mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, opts)
	require.NoError(h.t, err, "launch %s: %s", name, c.errb.String())
	c.cs = cs
	h.t.Cleanup(func() { _ = cs.Close() })
	return c
}

func (c *launchedClient) progressTokens() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.progress...)
}

// call makes a tool call and returns its envelope and the receipt call id
// the gateway put in _meta.
func (c *launchedClient) call(ctx context.Context, tool string, args map[string]any) (mcptest.Envelope, string, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return mcptest.Envelope{}, "", err
	}
	env, err := mcptest.Decode(res)
	id, _ := res.Meta["accords/call_id"].(string)
	return env, id, err
}

// killDaemon SIGKILLs the running daemon and waits until it is gone.
func (h *home) killDaemon() int {
	h.t.Helper()
	st, ok := h.status()
	require.True(h.t, ok, "a daemon runs")
	require.NoError(h.t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(h.t, func() bool { return syscall.Kill(st.PID, 0) != nil }, 10*time.Second, 10*time.Millisecond)
	return st.PID
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type daemon struct {
	vars   map[string]string
	url    string
	stderr *syncbuf.Buffer
	stop   func() int
}

// startDaemon runs `serve --http` in-process as a user would start it.
func startServe(t *testing.T, vars map[string]string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	out, errb := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	env := &environment{stdin: strings.NewReader(""), stdout: out, stderr: errb, getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, env, []string{"serve", "--http", addr}) }()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), `"msg":"ready"`) }, 20*time.Second, 10*time.Millisecond, errb.String())
	var once sync.Once
	code := 0
	stop := func() int {
		once.Do(func() { cancel(); code = <-done })
		return code
	}
	t.Cleanup(func() { stop() })
	return &daemon{vars: vars, url: "http://" + addr, stderr: errb, stop: stop}
}

func runCmd(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := opsEnv(vars, "")
	code := run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// TestDaemonLifecycle is the README walk-through: run the daemon, check it,
// back up while it serves, restore through it, stop it, restore offline.
func TestDaemonLifecycle(t *testing.T) {
	sim := httptest.NewServer(vaultsim.New(vaultsim.Options{AgentToken: simToken}))
	defer sim.Close()
	policy := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte("[defaults]\ncalls_per_minute = 0\n"), 0o600))
	vars := opsVars(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL, "ACCORDS_MCP_POLICY_FILE="+policy)
	d := startServe(t, vars)
	sock := control.SocketPath(vars["ACCORDS_MCP_DB"])
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the control socket is private")

	env := mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_session_configure", map[string]any{"token": "vc_tok_before_backup", "base_url": sim.URL}, nil).Raw
	require.Equal(t, true, env["ok"], env)

	// doctor sees the daemon and runs the database checks inside it.
	code, out, _ := runCmd(t, vars, "doctor")
	assert.Equal(t, 1, code, "the configured token is not the simulator's: %s", out)
	assert.Contains(t, line(t, out, "daemon"), "running: pid")
	assert.Contains(t, line(t, out, "index"), "consistent with the store")
	assert.Contains(t, line(t, out, "vault"), "HTTP 401")
	env = mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_session_configure", map[string]any{"token": simToken, "base_url": sim.URL}, nil).Raw
	require.Equal(t, true, env["ok"], env)
	code, out, _ = runCmd(t, vars, "doctor")
	assert.Equal(t, 0, code, out)

	// Back up while calls keep coming.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				e := mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_recipes_search", map[string]any{"query": "gmail"}, nil).Raw
				assert.Equal(t, true, e["ok"], "worker %d: %v", w, e)
			}
		})
	}
	bak := filepath.Join(t.TempDir(), "nightly.db")
	code, out, errOut := runCmd(t, vars, "backup", "--out", bak)
	stop.Store(true)
	wg.Wait()
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "hot snapshot from the running daemon")
	assert.Contains(t, out, "verified")

	// Metrics over the control socket (stdio daemons have no HTTP port).
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (netConn, error) {
		return dialUnix(ctx, sock)
	}}}
	resp, err := c.Get("http://daemon/metrics")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(raw), `accords_mcp_tool_calls_total{outcome="ok",tool="vaultclaw_recipes_search"}`)

	// Change the state after the backup, then restore while the daemon
	// serves: the daemon swaps the file itself and goes on with the
	// restored state, no restart.
	env = mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_session_configure", map[string]any{"token": "vc_tok_after_backup", "base_url": "http://after.example"}, nil).Raw
	require.Equal(t, true, env["ok"])
	code, out, errOut = runCmd(t, vars, "restore", bak)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "done by the running daemon")
	assert.Contains(t, out, "previous database is kept as")
	assert.Contains(t, out, "search index rebuilt")
	assert.Empty(t, errOut, "same key file: no session warning")
	stEnv := mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, nil)
	st := stEnv.Raw
	assert.Equal(t, sim.URL, st["data"].(map[string]any)["base_url"], "the state at backup time is back, served by the same daemon")
	// A call's receipt found by its call id, through the daemon.
	callID, _ := stEnv.Result.Meta["accords/call_id"].(string)
	require.NotEmpty(t, callID)
	code, out, errOut = runCmd(t, vars, "audit", "tail", "--call-id", callID, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"call_id":"`+callID+`"`)
	assert.Contains(t, out, `"tool":"vaultclaw_session_status"`)

	// Change it again, stop, and restore offline.
	env = mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_session_configure", map[string]any{"token": "vc_tok_after_backup", "base_url": "http://after.example"}, nil).Raw
	require.Equal(t, true, env["ok"])
	require.Equal(t, 0, d.stop())
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "the socket is removed on shutdown")

	code, out, errOut = runCmd(t, vars, "restore", bak)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "done by the running daemon")
	assert.Contains(t, out, "previous database is kept as")
	assert.Contains(t, out, "search index rebuilt")
	assert.Empty(t, errOut, "same key file: no session warning")

	d2 := startServe(t, vars)
	st = mcptest.PostCall(t, d2.url+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, nil).Raw
	data := st["data"].(map[string]any)
	assert.Equal(t, sim.URL, data["base_url"], "the state at backup time is back")
	e := mcptest.PostCall(t, d2.url+"/v1/mcp", "vaultclaw_recipes_search", map[string]any{"query": "gmail"}, nil).Raw
	assert.NotEmpty(t, e["data"].(map[string]any)["items"])
	require.Equal(t, 0, d2.stop())
	code, _, errOut = runCmd(t, vars, "audit", "verify")
	assert.Equal(t, 0, code, errOut)
}

// TestGracefulShutdownFinishesInFlightCalls stops the daemon while a slow
// Vault call is in flight: the call completes and the daemon exits 0.
func TestGracefulShutdownFinishesInFlightCalls(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	atVault := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v0/connectors" {
			select {
			case atVault <- struct{}{}:
			default:
			}
		}
		time.Sleep(700 * time.Millisecond)
		sim.ServeHTTP(w, r)
	}))
	defer slow.Close()
	vars := opsVars(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+slow.URL)
	d := startServe(t, vars)

	got := make(chan map[string]any, 1)
	go func() {
		var env map[string]any
		defer func() { got <- env }() // also when a failed check ends the goroutine
		env = mcptest.PostCall(t, d.url+"/v1/mcp", "vaultclaw_connectors_list", map[string]any{}, nil).Raw
	}()
	select {
	case <-atVault: // the call is in flight
	case <-time.After(20 * time.Second):
		t.Fatal("the call never reached Vault")
	}
	start := time.Now()
	code := d.stop()
	assert.Equal(t, 0, code)
	env := <-got
	assert.Equal(t, true, env["ok"], "the in-flight call finished: %v", env)
	assert.Less(t, time.Since(start), 5*time.Second, "shutdown is bounded")
	res, err := http.Get(d.url + "/healthz")
	if err == nil {
		res.Body.Close()
	}
	assert.Error(t, err, "no new connections after shutdown")
}

func TestStaleSocketIsReplaced(t *testing.T) {
	vars := opsVars(t)
	initialize(t, vars)
	sock := control.SocketPath(vars["ACCORDS_MCP_DB"])
	// A socket file left by a killed daemon: bound, then abandoned.
	ln, err := listenUnixNoUnlink(sock)
	require.NoError(t, err)
	ln.Close()
	_, err = os.Stat(sock)
	require.NoError(t, err, "stale socket present")
	code, out, _ := runCmd(t, vars, "doctor")
	assert.Contains(t, line(t, out, "daemon"), "stale control socket")
	_ = code
	d := startServe(t, vars)
	code, out, errOut := runCmd(t, vars, "backup", "--out", filepath.Join(t.TempDir(), "b.db"))
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "running daemon")
	assert.Equal(t, 0, d.stop())
}

func TestServeHintsAtLegacyFolder(t *testing.T) {
	legacyDir := filepath.Join(t.TempDir(), "catalog")
	require.NoError(t, os.MkdirAll(filepath.Join(legacyDir, "cookbooks"), 0o755))
	vars := opsVars(t, "ACCORDS_MCP_CATALOG_DIR="+legacyDir)
	d := startServe(t, vars)
	assert.Contains(t, d.stderr.String(), "accords-mcp import-legacy "+legacyDir)
	require.Equal(t, 0, d.stop())
	// Not on later starts: the database is no longer new.
	d2 := startServe(t, vars)
	assert.NotContains(t, d2.stderr.String(), "import-legacy")
}

func TestBackupWithoutDaemonAndToStdout(t *testing.T) {
	vars := opsVars(t)
	initialize(t, vars)
	env, out, errb := opsEnv(vars, "")
	require.Equal(t, 0, run(context.Background(), env, []string{"backup"}), errb.String())
	assert.Contains(t, errb.String(), "no daemon running")
	p := filepath.Join(t.TempDir(), "from-stdout.db")
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
	code, o, e := runCmd(t, vars, "restore", "--check", p)
	assert.Equal(t, 0, code, e)
	assert.Contains(t, o, "valid backup")

	code, _, e = runCmd(t, opsVars(t), "backup", "--out", p)
	assert.Equal(t, 1, code)
	assert.Contains(t, e, "no database at")
}

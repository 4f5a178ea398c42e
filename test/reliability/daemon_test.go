//go:build reliability

package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const simToken = "vc_tok_daemon_tests_0123456789"

// vault starts a Vaultclaw simulator and returns it with the environment
// of a client whose session comes from VC_AGENT_TOKEN.
func vault(t *testing.T) (*vaultsim.Sim, []string) {
	t.Helper()
	sim := vaultsim.New(vaultsim.Options{AgentToken: simToken})
	hs := httptest.NewServer(sim)
	t.Cleanup(hs.Close)
	return sim, []string{"VC_AGENT_TOKEN=" + simToken, "VC_BASE_URL=" + hs.URL}
}

// callLog is what one client did, in order.
type callLog struct {
	mu sync.Mutex
	// ordered are the call ids of the client's sequential calls.
	ordered []string
	// other are the call ids of its concurrent calls (approval waits).
	other []string
	// tokens are the progress tokens it sent; cancelled counts the calls
	// it cancelled.
	tokens    []string
	cancelled int
	failures  []string
}

func (l *callLog) fail(format string, a ...any) {
	l.mu.Lock()
	l.failures = append(l.failures, fmt.Sprintf(format, a...))
	l.mu.Unlock()
}

// work is one stdio client's part: sequential calls (search, render, list,
// session status, upsert of its own cookbook), and two approval waits with
// their own progress tokens, one approved and one cancelled.
func work(ctx context.Context, c *launchedClient, sim *vaultsim.Sim, rounds int, l *callLog) {
	must := func(tool string, args map[string]any) (mcptest.Envelope, bool) {
		env, id, err := c.call(ctx, tool, args)
		if err != nil || !env.OK {
			l.fail("%s %s: %v %v", c.name, tool, err, env.Raw)
			return env, false
		}
		l.mu.Lock()
		l.ordered = append(l.ordered, id)
		l.mu.Unlock()
		return env, true
	}
	corpus := workload.Corpus{Seed: 7}
	for i := range rounds {
		b, info := corpus.Bundle(i, fmt.Sprintf("1.%d.0", i))
		b["cookbook_id"] = "client." + c.name
		if _, ok := must(workload.ToolUpsert, map[string]any{"bundle": b}); !ok {
			return
		}
		if _, ok := must(workload.ToolSearch, map[string]any{"query": info.Words[0], "limit": 5}); !ok {
			return
		}
		if _, ok := must(workload.ToolList, map[string]any{}); !ok {
			return
		}
		if _, ok := must(workload.ToolStatus, map[string]any{}); !ok {
			return
		}
	}
	approvalWaits(ctx, c, sim, l, must)
}

// approvalWaits starts a Gmail send that needs approval, waits on it with
// a progress token and approves it once progress arrives; then starts a
// second wait and cancels it.
func approvalWaits(ctx context.Context, c *launchedClient, sim *vaultsim.Sim, l *callLog, must func(string, map[string]any) (mcptest.Envelope, bool)) {
	handle := func() map[string]any {
		env, id, err := c.call(ctx, "vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{
			"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
			"request": map[string]any{"user_id": "me", "to": []any{c.name + "@example.com"}, "subject": "hi", "text_plain": "x"},
		}})
		if err != nil || env.Code() != "MCP_APPROVAL_REQUIRED" {
			l.fail("%s execute_job: %v %v", c.name, err, env.Raw)
			return nil
		}
		l.mu.Lock()
		l.ordered = append(l.ordered, id)
		l.mu.Unlock()
		a, _ := env.Details()["approval"].(map[string]any)
		na, _ := a["next_action"].(map[string]any)
		args, _ := na["arguments"].(map[string]any)
		h, _ := args["handle"].(map[string]any)
		return h
	}
	wait := func(h map[string]any, token string, wctx context.Context) (*mcp.CallToolResult, error) {
		p := &mcp.CallToolParams{Name: "vaultclaw_approval_wait", Arguments: map[string]any{"handle": h, "timeout_ms": 20000, "poll_interval_ms": 100}}
		p.SetProgressToken(token)
		l.mu.Lock()
		l.tokens = append(l.tokens, token)
		l.mu.Unlock()
		return c.cs.CallTool(wctx, p)
	}
	sawProgress := func(token string) bool {
		return slices.Contains(c.progressTokens(), token)
	}

	// Approved.
	h := handle()
	if h == nil {
		return
	}
	token := c.name + "-wait-approved"
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := wait(h, token, ctx)
		if err != nil {
			l.fail("%s approval_wait: %v", c.name, err)
			return
		}
		env, err := mcptest.Decode(res)
		if err != nil || !env.OK {
			l.fail("%s approval_wait: %v %v", c.name, err, env.Raw)
			return
		}
		id, _ := res.Meta["accords/call_id"].(string)
		l.mu.Lock()
		l.other = append(l.other, id)
		l.mu.Unlock()
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !sawProgress(token) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pid, _ := h["pending_id"].(string); pid != "" {
		if err := sim.Approve(pid); err != nil {
			l.fail("%s approve: %v", c.name, err)
		}
	}
	<-done

	// Cancelled: the client gives up once progress shows the wait runs.
	h = handle()
	if h == nil {
		return
	}
	token = c.name + "-wait-cancelled"
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := wait(h, token, wctx)
		errc <- err
	}()
	deadline = time.Now().Add(20 * time.Second)
	for !sawProgress(token) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err == nil {
		l.fail("%s: the cancelled wait returned a result", c.name)
	}
	l.mu.Lock()
	l.cancelled++
	l.mu.Unlock()
	// The client goes on after its cancellation.
	must(workload.ToolStatus, map[string]any{})
}

// cliLoop runs operator commands against the database until stop, each of
// which must succeed.
func cliLoop(h *home, dir string, stop <-chan struct{}, failures chan<- string) {
	bundle := filepath.Join(dir, "cli-bundle.json")
	b, _ := workload.Corpus{Seed: 9}.Bundle(1, "3.0.0")
	b["cookbook_id"] = "cli.imported"
	raw, _ := json.Marshal(b)
	_ = os.WriteFile(bundle, raw, 0o600)
	cmds := [][]string{
		{"search", "gmail"},
		{"catalog", "list", "--latest"},
		{"catalog", "import", bundle, "--policy", "OVERWRITE"},
		{"catalog", "export", "cli.imported"},
		{"render", "google.workspace", "gmail_tpl_verb_drafts_send_v1", "--input", "draft_id=d-1"},
		{"session", "status"},
		{"audit", "verify"},
		{"audit", "tail", "-n", "5"},
		{"doctor"},
		{"backup", "--out", filepath.Join(dir, "cli-backup.db")},
		{"status"},
	}
	// Every command runs at least once, however quickly the clients end.
	for i := 0; ; i++ {
		select {
		case <-stop:
			if i >= len(cmds) {
				return
			}
		default:
		}
		args := cmds[i%len(cmds)]
		code, out, errOut := h.cmd(args...)
		if code != 0 {
			failures <- fmt.Sprintf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestManyClientsOneDaemon launches three stdio clients at the same moment
// on one default database, with operator commands running all along,
// either letting the first launch start the daemon or with an HTTP daemon
// serving HTTP clients too. Every call succeeds; the audit chain verifies
// and holds every call exactly once, each client's in its order and
// under its own session; each client sees only its own progress
// notifications, and its cancellation ends only its call.
func TestManyClientsOneDaemon(t *testing.T) {
	for _, mode := range []string{"auto", "http-daemon"} {
		t.Run(mode, func(t *testing.T) { manyClients(t, mode) })
	}
}

func manyClients(t *testing.T, mode string) {
	sim, venv := vault(t)
	h := newHome(t, venv...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var httpURL string
	if mode == "http-daemon" {
		policy := filepath.Join(h.dir, "policy.toml")
		require.NoError(t, os.WriteFile(policy, []byte("version = 1\n\n[anonymous]\ncalls_per_minute = 0\n"), 0o600))
		h.env = append(h.env, "ACCORDS_MCP_POLICY_FILE="+policy)
		httpURL = startHTTPDaemon(t, h)
	}

	const clients, rounds = 3, 5
	cs := make([]*launchedClient, clients)
	var wg sync.WaitGroup
	for i := range clients {
		// client0 opens its session with initialize, the others with the
		// SDK's default (server/discover).
		wg.Go(func() {
			if i == 0 {
				cs[i] = h.launchLegacy(fmt.Sprintf("client%d", i))
			} else {
				cs[i] = h.launch(fmt.Sprintf("client%d", i))
			}
		})
	}
	wg.Wait()
	st, ok := h.status()
	require.True(t, ok)
	assert.Len(t, st.Clients, clients, "one daemon, every launch attached: %+v", st)
	if mode == "auto" {
		assert.Equal(t, "auto", st.Mode)
	} else {
		assert.Equal(t, "explicit", st.Mode)
	}
	code, out, _ := h.cmd("status")
	require.Equal(t, 0, code)
	t.Logf("status with %d clients attached:\n%s", clients, out)

	stop := make(chan struct{})
	failures := make(chan string, 100)
	var cliDone sync.WaitGroup
	cliDone.Go(func() { cliLoop(h, h.dir, stop, failures) })

	logs := make([]*callLog, clients)
	var httpIDs []string
	var httpMu sync.Mutex
	for i := range clients {
		logs[i] = &callLog{}
		wg.Go(func() { work(ctx, cs[i], sim, rounds, logs[i]) })
	}
	if httpURL != "" {
		wg.Go(func() {
			hc := mcptest.ConnectHTTP(t, httpURL, mcptest.HTTPOptions{})
			for i := range rounds * 3 {
				res, err := hc.CallTool(ctx, &mcp.CallToolParams{Name: workload.ToolSearch, Arguments: map[string]any{"query": "gmail", "limit": i%5 + 1}})
				if err != nil || res.IsError {
					failures <- fmt.Sprintf("http search: %v %+v", err, res)
					return
				}
				id, _ := res.Meta["accords/call_id"].(string)
				httpMu.Lock()
				httpIDs = append(httpIDs, id)
				httpMu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	cliDone.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	for i, l := range logs {
		require.Empty(t, l.failures, "client %d", i)
	}

	// The cancelled waits end in the daemon a moment after the client let
	// go; their receipts are written then.
	want := len(httpIDs)
	for _, l := range logs {
		want += len(l.ordered) + len(l.other) + l.cancelled
	}
	require.Eventually(t, func() bool { return len(h.receipts()) >= want }, 10*time.Second, 100*time.Millisecond, "every call's receipt is written")

	// The audit chain.
	code, out, errOut := h.cmd("audit", "verify")
	require.Equal(t, 0, code, errOut)
	t.Logf("audit verify: %s", strings.TrimSpace(out))
	rs := h.receipts()
	byID := map[string]int{}
	seen := map[string]int{}
	for i, r := range rs {
		byID[r.CallID] = i
		seen[r.CallID]++
	}
	sessions := map[string]bool{}
	total := 0
	for i, l := range logs {
		var session string
		last := -1
		for _, id := range l.ordered {
			require.NotEmpty(t, id, "client %d: every result names its receipt", i)
			require.Equal(t, 1, seen[id], "client %d: call %s is in the log exactly once", i, id)
			r := rs[byID[id]]
			assert.Greater(t, byID[id], last, "client %d: receipts in the client's call order", i)
			last = byID[id]
			assert.Equal(t, "local", r.Caller)
			assert.Equal(t, "stdio", r.Transport)
			if session == "" {
				session = r.Session
			}
			assert.Equal(t, session, r.Session, "client %d: one session for all its calls", i)
		}
		require.True(t, strings.HasPrefix(session, "c-"), "client %d: receipts name its attached session: %q", i, session)
		assert.False(t, sessions[session], "client %d: sessions are not shared", i)
		sessions[session] = true
		for _, id := range l.other {
			require.Equal(t, 1, seen[id], "client %d: wait %s is in the log exactly once", i, id)
			assert.Equal(t, session, rs[byID[id]].Session)
		}
		// The cancelled wait has a receipt too, under the same session,
		// which the client never saw; it ended well before its 20 s
		// timeout, so the cancellation reached the daemon.
		waits := 0
		for _, r := range rs {
			if r.Session == session && r.Tool == "vaultclaw_approval_wait" {
				waits++
				assert.Less(t, r.DurationMS, 15000.0, "client %d: a wait ran to its timeout: %+v", i, r)
			}
		}
		assert.Equal(t, len(l.other)+l.cancelled, waits, "client %d: one receipt per wait, the cancelled one included", i)
		total += len(l.ordered) + len(l.other) + l.cancelled

		// Progress: the client got its own tokens and nobody else's.
		got := cs[i].progressTokens()
		for _, tok := range l.tokens {
			assert.Contains(t, got, tok, "client %d received progress for its wait", i)
		}
		for _, tok := range got {
			assert.Contains(t, l.tokens, tok, "client %d received another client's progress", i)
		}
	}
	httpMu.Lock()
	for _, id := range httpIDs {
		require.Equal(t, 1, seen[id])
		assert.Equal(t, "http", rs[byID[id]].Transport)
		assert.Empty(t, rs[byID[id]].Session)
	}
	total += len(httpIDs)
	httpMu.Unlock()
	assert.Equal(t, total, len(rs), "the log holds every call and nothing else (operator commands write no receipts)")
	t.Logf("%s: %d receipts from %d stdio clients and %d HTTP calls, chain verified; operator commands ran alongside", mode, len(rs), clients, len(httpIDs))
}

// startHTTPDaemon runs `serve --http 127.0.0.1:0` in the home until the
// test ends and returns its MCP endpoint.
func startHTTPDaemon(t *testing.T, h *home) string {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--http", "127.0.0.1:0")
	cmd.Env = h.env
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "ready" && rec.Addr != "" {
				addr <- rec.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a + "/v1/mcp"
	case <-time.After(60 * time.Second):
		t.Fatal("the HTTP daemon did not start")
	}
	return ""
}

// TestDaemonSIGKILLWithTwoClients kills the daemon while two clients are
// attached, each with a call in flight: the calls in flight fail with the
// retryable envelope, the next call of each starts or finds a new daemon
// and goes through, and every write acknowledged before the kill is there.
func TestDaemonSIGKILLWithTwoClients(t *testing.T) {
	sim, venv := vault(t)
	_ = sim
	h := newHome(t, venv...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// alpha opened its session with initialize, which the front end
	// replays to the new daemon; beta's requests carry their own session
	// metadata (server/discover).
	cs := []*launchedClient{h.launchLegacy("alpha"), h.launch("beta")}
	corpus := workload.Corpus{Seed: 3}
	acked := map[string][]string{}
	for _, c := range cs {
		for i := range 5 {
			b, _ := corpus.Bundle(i, fmt.Sprintf("1.%d.0", i))
			b["cookbook_id"] = "kill." + c.name
			env, _, err := c.call(ctx, workload.ToolUpsert, map[string]any{"bundle": b})
			require.NoError(t, err)
			require.True(t, env.OK, env.Raw)
			acked[c.name] = append(acked[c.name], fmt.Sprintf("1.%d.0", i))
		}
	}
	// A wait in flight on each client (on a handle nobody decides).
	inflight := make([]chan mcptest.Envelope, len(cs))
	for i, c := range cs {
		env, _, err := c.call(ctx, "vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{
			"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
			"request": map[string]any{"user_id": "me", "to": []any{"x@example.com"}, "subject": "s", "text_plain": "t"},
		}})
		require.NoError(t, err)
		require.Equal(t, "MCP_APPROVAL_REQUIRED", env.Code())
		a := env.Details()["approval"].(map[string]any)
		handle := a["next_action"].(map[string]any)["arguments"].(map[string]any)["handle"]
		inflight[i] = make(chan mcptest.Envelope, 1)
		go func() {
			p := &mcp.CallToolParams{Name: "vaultclaw_approval_wait", Arguments: map[string]any{"handle": handle, "timeout_ms": 60000, "poll_interval_ms": 100}}
			p.SetProgressToken(c.name + "-inflight")
			res, err := c.cs.CallTool(ctx, p)
			if !assert.NoError(t, err) {
				inflight[i] <- mcptest.Envelope{}
				return
			}
			e, err := mcptest.Decode(res)
			assert.NoError(t, err)
			inflight[i] <- e
		}()
	}
	require.Eventually(t, func() bool {
		return slices.Contains(cs[0].progressTokens(), "alpha-inflight") && slices.Contains(cs[1].progressTokens(), "beta-inflight")
	}, 20*time.Second, 20*time.Millisecond, "both waits run in the daemon")
	old := h.killDaemon()

	for i, ch := range inflight {
		select {
		case e := <-ch:
			require.Equal(t, "MCP_NETWORK_ERROR", e.Code(), "client %d: %v", i, e.Raw)
			assert.True(t, e.Error.Retryable, "approval_wait only reads: retryable")
			assert.Equal(t, "daemon_connection_lost", e.Details()["reason"])
		case <-time.After(20 * time.Second):
			t.Fatalf("client %d: the call in flight was never answered", i)
		}
	}
	// Both recover at their next call; one of them started the new daemon.
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			env, _, err := c.call(ctx, workload.ToolStatus, map[string]any{})
			assert.NoError(t, err)
			assert.True(t, env.OK, "%s after the kill: %v", c.name, env.Raw)
		})
	}
	wg.Wait()
	st, ok := h.status()
	require.True(t, ok)
	assert.NotEqual(t, old, st.PID, "a new daemon")
	assert.Len(t, st.Clients, 2, "both clients attached to it")
	for _, c := range cs {
		for _, v := range acked[c.name] {
			env, _, err := c.call(ctx, workload.ToolGet, map[string]any{"cookbook_id": "kill." + c.name, "version": v})
			require.NoError(t, err)
			assert.True(t, env.OK, "acknowledged %s@%s survived the kill: %v", c.name, v, env.Raw)
		}
	}
	assert.Eventually(t, func() bool { return strings.Contains(cs[0].errb.String(), "re-initialised") }, 5*time.Second, 10*time.Millisecond,
		"alpha's front end replayed its initialize: %s", cs[0].errb.String())
	names := map[string]bool{}
	for _, cl := range st.Clients {
		names[cl.Name] = true
	}
	assert.True(t, names["alpha"] && names["beta"], "the new daemon knows the clients by their own initialize: %+v", st.Clients)
	code, out, errOut := h.cmd("audit", "verify")
	assert.Equal(t, 0, code, out+errOut)
}

// TestIdleExitAndStaleSocket: an auto-started daemon exits once no client
// has been attached for its idle timeout, and not while one is; an
// explicit one never does; a socket left by a killed daemon is replaced.
func TestIdleExitAndStaleSocket(t *testing.T) {
	h := newHome(t, "ACCORDS_MCP_DAEMON_IDLE_TIMEOUT=2s")
	ctx := context.Background()
	c := h.launch("idle")
	time.Sleep(3 * time.Second)
	_, ok := h.status()
	require.True(t, ok, "no idle exit while a client is attached")
	env, _, err := c.call(ctx, workload.ToolStatus, map[string]any{})
	require.NoError(t, err)
	require.True(t, env.OK)
	require.NoError(t, c.cs.Close())
	require.Eventually(t, func() bool { _, ok := h.status(); return !ok }, 15*time.Second, 100*time.Millisecond, "the auto daemon exits after its idle timeout")
	_, err = os.Stat(h.db + ".sock")
	assert.True(t, os.IsNotExist(err), "and removes its socket")
	raw, _ := os.ReadFile(h.db + ".log")
	assert.Contains(t, string(raw), "idle", "its log says why it stopped")

	// An explicit daemon with the same setting stays.
	cmd := exec.Command(binary(t), "daemon")
	cmd.Env = h.env
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	require.Eventually(t, func() bool { _, ok := h.status(); return ok }, 30*time.Second, 50*time.Millisecond)
	c = h.launch("explicit")
	_, _, err = c.call(ctx, workload.ToolStatus, map[string]any{})
	require.NoError(t, err)
	require.NoError(t, c.cs.Close())
	time.Sleep(4 * time.Second)
	st, ok := h.status()
	require.True(t, ok, "an explicit daemon never idles out")
	assert.Equal(t, "explicit", st.Mode)

	// Killed: its socket file stays behind, stale.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	assert.Error(t, <-done, "killed")
	fi, err := os.Lstat(h.db + ".sock")
	require.NoError(t, err, "a killed daemon leaves its socket")
	require.NotZero(t, fi.Mode()&os.ModeSocket)
	code, out, _ := h.cmd("status")
	assert.Equal(t, 3, code, "nothing answers on a stale socket: %s", out)
	code, out, _ = h.cmd("doctor")
	assert.Contains(t, out, "stale control socket", "doctor says so (exit %d)", code)
	c = h.launch("after-kill")
	env, _, err = c.call(ctx, workload.ToolStatus, map[string]any{})
	require.NoError(t, err)
	assert.True(t, env.OK, "the next launch replaced the stale socket with a new daemon's")
	st2, ok := h.status()
	require.True(t, ok)
	assert.NotEqual(t, st.PID, st2.PID)
}

// TestSocketRefusesOtherUIDs runs commands as nobody against root's daemon:
// the 0600 socket in its 0700 folder keeps them out, and when the modes
// are loosened the peer uid check still does, with a clear error.
func TestSocketRefusesOtherUIDs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user (nobody); run the reliability suite as root to cover the peer uid check")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody on this machine: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	// nobody must be able to run the binary.
	binDir, err := os.MkdirTemp("", "accbin")
	require.NoError(t, err)
	defer os.RemoveAll(binDir)
	require.NoError(t, os.Chmod(binDir, 0o755))
	bin := filepath.Join(binDir, "accords-mcp")
	raw, err := os.ReadFile(binary(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, raw, 0o755))

	h := newHome(t)
	cmd := exec.Command(bin, "daemon")
	cmd.Env = h.env
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	require.Eventually(t, func() bool { _, ok := h.status(); return ok }, 30*time.Second, 50*time.Millisecond)

	asNobody := func(args ...string) (int, string) {
		c := exec.Command(bin, args...)
		c.Env = []string{"HOME=/nonexistent", "ACCORDS_MCP_DB=" + h.db, "PATH=/usr/bin:/bin"}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		c.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}` + "\n")
		out, _ := c.CombinedOutput()
		code := 0
		if c.ProcessState != nil {
			code = c.ProcessState.ExitCode()
		}
		return code, string(out)
	}
	code, out := asNobody("status")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "not accessible to uid "+nobody.Uid, "the folder and socket modes keep other users out")

	// Loosen the modes: now only the peer check stands in the way.
	for dir := filepath.Dir(h.db); len(dir) >= len(h.dir); dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o711))
	}
	require.NoError(t, os.Chmod(h.db+".sock", 0o666))
	code, out = asNobody("status")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "refused", out)
	assert.Contains(t, out, "uid "+nobody.Uid+" may not use it", "the daemon names the refused uid")
	code, out = asNobody("serve")
	assert.Equal(t, 1, code, "a stdio launch as another user does not attach: %s", out)
	assert.Contains(t, out, "may not use it")
	// And root itself is still served.
	_, ok := h.status()
	assert.True(t, ok)
}

// TestRestoreThroughRunningDaemon restores a backup while two clients keep
// calling tools: no call fails, the clients see the restored data without
// relaunching, the daemon stays the same process, and the audit chain
// verifies.
func TestRestoreThroughRunningDaemon(t *testing.T) {
	h := newHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := []*launchedClient{h.launch("r1"), h.launch("r2")}
	corpus := workload.Corpus{Seed: 11}
	b, _ := corpus.Bundle(0, "1.0.0")
	b["cookbook_id"] = "restore.before"
	env, _, err := cs[0].call(ctx, workload.ToolUpsert, map[string]any{"bundle": b})
	require.NoError(t, err)
	require.True(t, env.OK)
	bak := filepath.Join(h.dir, "before.db")
	code, out, errOut := h.cmd("backup", "--out", bak)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "hot snapshot from the running daemon")
	b["cookbook_id"] = "restore.after"
	env, _, err = cs[1].call(ctx, workload.ToolUpsert, map[string]any{"bundle": b})
	require.NoError(t, err)
	require.True(t, env.OK)
	st, _ := h.status()

	var stop atomic.Bool
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				tool, args := workload.ToolSearch, map[string]any{"query": "gmail", "limit": 3}
				if n%3 == 1 {
					bb, _ := corpus.Bundle(n, fmt.Sprintf("9.%d.%d", i, n))
					bb["cookbook_id"] = "restore.busy"
					tool, args = workload.ToolUpsert, map[string]any{"bundle": bb}
				}
				env, _, err := c.call(ctx, tool, args)
				if !assert.NoError(t, err) || !assert.True(t, env.OK, "%s %s during the restore: %v", c.name, tool, env.Raw) {
					return
				}
				calls.Add(1)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	code, out, errOut = h.cmd("restore", bak)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "done by the running daemon")
	t.Logf("restore while %d calls ran:\n%s", calls.Load(), out)

	st2, _ := h.status()
	assert.Equal(t, st.PID, st2.PID, "the same daemon went on")
	assert.Len(t, st2.Clients, 2, "both clients still attached")
	for _, c := range cs {
		e, _, err := c.call(ctx, workload.ToolGet, map[string]any{"cookbook_id": "restore.before"})
		require.NoError(t, err)
		assert.True(t, e.OK, "%s sees what the backup holds", c.name)
		e, _, err = c.call(ctx, workload.ToolGet, map[string]any{"cookbook_id": "restore.after"})
		require.NoError(t, err)
		assert.Equal(t, "MCP_CATALOG_NOT_FOUND", e.Code(), "%s sees the state at backup time", c.name)
	}
	code, out, errOut = h.cmd("audit", "verify")
	assert.Equal(t, 0, code, out+errOut)
}

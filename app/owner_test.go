package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// owned opens an app on a short path (socket paths are limited to about
// 100 bytes) and makes it the owner.
func owned(t *testing.T, o app.OwnerOptions, env ...string) (*app.App, *app.Owner) {
	t.Helper()
	dir, err := os.MkdirTemp("", "own")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := testenv.Config(t, append([]string{"ACCORDS_MCP_DB=" + filepath.Join(dir, "accords.db")}, env...)...)
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	w, err := a.Own(o)
	require.NoError(t, err)
	t.Cleanup(func() {
		w.Close(time.Second)
		_ = a.Close()
	})
	return a, w
}

// attach connects an MCP client to the owner as a front end would.
func attach(t *testing.T, w *app.Owner, name string, h control.Hello) *mcp.ClientSession {
	t.Helper()
	h.Protocol = control.Protocol
	c := control.NewClient(w.Socket())
	t.Cleanup(c.Close)
	conn, welcome, err := c.Attach(context.Background(), h)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(welcome.Session, "c-"), welcome)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// TestAttachedClientsAreTheirOwnSessions: two clients of one daemon, each
// with its own view and its own environment session; receipts tell them
// apart.
func TestAttachedClientsAreTheirOwnSessions(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	ro := attach(t, w, "reader", control.Hello{View: control.View{ReadOnly: true},
		Env: session.Defaults{Token: "vc_tok_reader_0001", BaseURL: "http://reader.example"}})
	cat := attach(t, w, "cataloguer", control.Hello{View: control.View{Toolsets: []string{"catalog", "session"}},
		Env: session.Defaults{Token: "vc_tok_cataloguer_0002"}})

	roTools, catTools := toolNames(t, ro), toolNames(t, cat)
	assert.Contains(t, roTools, "vaultclaw_recipes_search")
	assert.NotContains(t, roTools, "vaultclaw_session_configure", "read-only hides write tools")
	assert.NotContains(t, roTools, "vaultclaw_cookbook_upsert")
	assert.Contains(t, catTools, "vaultclaw_cookbook_upsert")
	assert.NotContains(t, catTools, "vaultclaw_connectors_list", "toolsets narrow the list")
	assert.Greater(t, len(roTools), 0)

	env := mcptest.Call(t, ro, "vaultclaw_session_configure", map[string]any{"token": "vc_tok_nope_00000"})
	assert.Equal(t, "MCP_PERMISSION_DENIED", env.Code())
	assert.Equal(t, "read_only", env.Details()["reason"], "the refusal a read-only server gives")
	env = mcptest.Call(t, cat, "vaultclaw_connectors_list", nil)
	assert.Equal(t, "MCP_PERMISSION_DENIED", env.Code())
	assert.Equal(t, "toolset_disabled", env.Details()["reason"])

	// Each client's calls fall back to its own environment session.
	st := mcptest.Call(t, ro, "vaultclaw_session_status", nil).Object()
	assert.Equal(t, "vc_***001", st["token"])
	assert.Equal(t, "http://reader.example", st["base_url"])
	st = mcptest.Call(t, cat, "vaultclaw_session_status", nil).Object()
	assert.Equal(t, "vc_***002", st["token"])

	clients := a.Clients()
	require.Len(t, clients, 2)
	names := []string{clients[0].Name, clients[1].Name}
	slices.Sort(names)
	assert.Equal(t, []string{"cataloguer", "reader"}, names)

	require.NoError(t, a.Audit.Flush())
	rs, err := audit.List(a.DB, audit.Filter{Limit: 100})
	require.NoError(t, err)
	sessions := map[string][]string{}
	for _, r := range rs {
		assert.Equal(t, "local", r.Caller)
		assert.True(t, strings.HasPrefix(r.Session, "c-"), "receipts name the session: %+v", r)
		sessions[r.Session] = append(sessions[r.Session], r.Tool)
	}
	assert.Len(t, sessions, 2, "one session per client")
}

// TestAttachedClientChoosingAllListsEveryTool: ACCORDS_MCP_TOOLSETS=all on
// a launch attached to a daemon lists every tool for that client, while a
// client that chose nothing lists the default list (D23).
func TestAttachedClientChoosingAllListsEveryTool(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	all := attach(t, w, "all", control.Hello{View: control.View{Toolsets: []string{"all"}}})
	plain := attach(t, w, "plain", control.Hello{})
	assert.Len(t, toolNames(t, all), len(a.Gateway.Visible().Tools()))
	assert.Contains(t, toolNames(t, all), "vaultclaw_cookbook_upsert")
	assert.NotContains(t, toolNames(t, plain), "vaultclaw_cookbook_upsert")
	assert.Less(t, len(toolNames(t, plain)), len(toolNames(t, all)))
}

// TestRestoreInPlaceWhileClientsCall restores a backup through the owner
// while two attached clients call tools: nothing fails, and both see the
// restored data without reconnecting.
func TestRestoreInPlaceWhileClientsCall(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	cs := []*mcp.ClientSession{attach(t, w, "one", control.Hello{}), attach(t, w, "two", control.Hello{})}
	corpus := workload.Corpus{Seed: 5}
	upsert := func(cs *mcp.ClientSession, id, version string) mcptest.Envelope {
		b, _ := corpus.Bundle(1, version)
		b["cookbook_id"] = id
		return mcptest.Call(t, cs, workload.ToolUpsert, map[string]any{"bundle": b})
	}
	require.True(t, upsert(cs[0], "kept", "1.0.0").OK)
	var snap bytes.Buffer
	_, err := a.Backend().Backup(context.Background(), &snap)
	require.NoError(t, err)
	bak := filepath.Join(t.TempDir(), "b.db")
	require.NoError(t, os.WriteFile(bak, snap.Bytes(), 0o600))
	require.True(t, upsert(cs[1], "gone", "1.0.0").OK)

	var stop atomic.Bool
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				var env mcptest.Envelope
				if n%2 == 0 {
					env = mcptest.Call(t, c, workload.ToolSearch, map[string]any{"query": "gmail"})
				} else {
					env = upsert(c, "busy", fmt.Sprintf("1.%d.%d", i, n))
				}
				if !assert.True(t, env.OK, "client %d during the restore: %v", i, env.Raw) {
					return
				}
				calls.Add(1)
			}
		})
	}
	for calls.Load() < 10 {
		time.Sleep(5 * time.Millisecond)
	}
	res, err := a.Backend().Restore(context.Background(), bak, nil)
	before := calls.Load()
	for calls.Load() < before+10 {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	require.NoError(t, err)
	assert.True(t, res.Daemon)
	assert.True(t, res.Reindexed)
	assert.NotEmpty(t, res.Previous)

	for _, c := range cs {
		assert.True(t, mcptest.Call(t, c, workload.ToolGet, map[string]any{"cookbook_id": "kept"}).OK)
		assert.Equal(t, "MCP_CATALOG_NOT_FOUND", mcptest.Call(t, c, workload.ToolGet, map[string]any{"cookbook_id": "gone"}).Code())
	}
	vres, err := a.Backend().AuditVerify(context.Background(), admin.AuditVerifyRequest{})
	require.NoError(t, err)
	assert.True(t, vres.Report.OK, "%+v", vres.Report.Problem)
	assert.Equal(t, a.AuditKey.VerifierKey, vres.Key, "the daemon verifies with its own key when asked for none")
}

// TestRestoreRefusesABadBackupAndChangesNothing: the clients never pause
// for a backup that does not verify.
func TestRestoreRefusesABadBackupAndChangesNothing(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	cs := attach(t, w, "one", control.Hello{})
	bad := filepath.Join(t.TempDir(), "bad.db")
	require.NoError(t, os.WriteFile(bad, []byte("not a database"), 0o600))
	_, err := a.Backend().Restore(context.Background(), bad, nil)
	require.Error(t, err)
	assert.True(t, mcptest.Call(t, cs, workload.ToolStatus, nil).OK, "still serving")
	_, err = os.Stat(a.Config.DBPath)
	require.NoError(t, err)
}

// TestAutoOwnerIdlesOut: an auto owner stops after its idle timeout with
// no client attached, not while one is; an explicit one never does.
func TestAutoOwnerIdlesOut(t *testing.T) {
	t.Parallel()
	_, w := owned(t, app.OwnerOptions{Mode: control.ModeAuto, Transport: "attach", IdleTimeout: 300 * time.Millisecond})
	cs := attach(t, w, "one", control.Hello{})
	select {
	case <-w.Stopping():
		t.Fatal("stopped with a client attached")
	case <-time.After(time.Second):
	}
	_ = cs.Close() // the reader and the writer are one connection: its second close reports an error
	select {
	case <-w.Stopping():
		assert.Equal(t, "idle", w.Reason())
	case <-time.After(10 * time.Second):
		t.Fatal("the auto owner did not idle out")
	}

	_, e := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach", IdleTimeout: 100 * time.Millisecond})
	select {
	case <-e.Stopping():
		t.Fatal("an explicit owner idled out")
	case <-time.After(500 * time.Millisecond):
	}
}

// TestShutdownAnswersCallsNotStarted: once the owner closes, a call that
// had not started gets CodeNotStarted (the front end sends it to the next
// daemon) rather than running half-way.
func TestShutdownAnswersCallsNotStarted(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	cs := attach(t, w, "one", control.Hello{})
	a.Gate.Close(time.Second)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: workload.ToolStatus, Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not started")
}

func TestAttachRefusesAnUnknownToolset(t *testing.T) {
	t.Parallel()
	_, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	c := control.NewClient(w.Socket())
	defer c.Close()
	_, _, err := c.Attach(context.Background(), control.Hello{Protocol: control.Protocol, View: control.View{Toolsets: []string{"nope"}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown toolset "nope"`)
	_, _, err = c.Attach(context.Background(), control.Hello{Protocol: control.Protocol + 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "protocol")
}

// TestOwnerCloseDuringWait: a daemon that stops while an attached client
// waits on an approval answers the wait with its handle at once (was: the
// wait ran out the shutdown grace and was cut off without the handle).
func TestOwnerCloseDuringWait(t *testing.T) {
	t.Parallel()
	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: simToken})
	require.NoError(t, err)
	defer sim.Close()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"},
		"VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL)
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	h := pendingHandle(t, srv.URL)
	sim.ClearRequests()
	cs := attach(t, w, "waiter", control.Hello{Env: session.Defaults{Token: simToken, BaseURL: sim.URL}})

	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "vaultclaw_approval_wait",
			Arguments: map[string]any{"handle": h, "timeout_ms": 60000, "poll_interval_ms": 250}})
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		got <- res
	}()
	require.Eventually(t, func() bool { return jobPolls(sim) >= 1 }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	w.Close(10 * time.Second)
	assert.Less(t, time.Since(start), 2*time.Second, "the wait ends at once, not after the grace")
	res := <-got
	require.NotNil(t, res)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var env mcptest.Envelope
	require.NoError(t, json.Unmarshal(b, &env))
	require.NotNil(t, env.Error, "%s", b)
	assert.Equal(t, "MCP_WAIT_TIMEOUT", env.Error.Code)
	assert.Equal(t, "server_shutting_down", env.Error.Details["reason"])
	assert.Equal(t, h["job_id"], env.Error.Details["handle"].(map[string]any)["job_id"], "the handle is kept")
}

// TestAttachOfAnotherBuild: a launch of another build (same version, other
// commit) is still served; the welcome names the daemon's build so the
// launch can warn, and status reports it. A launch that predates builds
// gets the version warning from the daemon.
func TestAttachOfAnotherBuild(t *testing.T) {
	t.Parallel()
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	c := control.NewClient(w.Socket())
	defer c.Close()
	const launch = "0.1.0 (commit 7f4d98f0aa11)"
	h := control.Hello{Protocol: control.Protocol, Version: version.Version, Build: launch}
	conn, welcome, err := c.Attach(context.Background(), h)
	require.NoError(t, err)
	assert.Equal(t, version.ID(), welcome.Build)
	assert.NotEqual(t, launch, welcome.Build)
	assert.Empty(t, welcome.Warnings, "the launch itself warns of the build")
	msg := control.BuildMismatch(launch, welcome, a.Config.DBPath)
	assert.Contains(t, msg, "daemon "+version.ID()+", this launch "+launch)
	assert.Contains(t, msg, "accords-mcp stop --db "+a.Config.DBPath)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "other-build", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	require.NoError(t, err)
	defer cs.Close()
	assert.NotEmpty(t, toolNames(t, cs), "a launch of another build is served")

	st, err := c.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, version.ID(), st.Build)

	conn, welcome, err = c.Attach(context.Background(), control.Hello{Protocol: control.Protocol, Version: "0.0.9"})
	require.NoError(t, err)
	conn.Close()
	require.Len(t, welcome.Warnings, 1)
	assert.Contains(t, welcome.Warnings[0], "this launch 0.0.9")
}

package backup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/migrations"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callTool posts one bare JSON-RPC tools/call to the bridge as tenant
// ("" for none) and returns the envelope as generic JSON.
func callTool(t testing.TB, url, tenant, tool string, args map[string]any) map[string]any {
	t.Helper()
	var header map[string]string
	if tenant != "" {
		header = map[string]string{"X-Accords-Tenant-Id": tenant}
	}
	return mcptest.PostCall(t, url+"/v1/mcp", tool, args, header).Raw
}

type state struct {
	Sessions map[string]session.Status
	Audit    audit.Report
}

func capture(t *testing.T, a *app.App, scopes []string) state {
	t.Helper()
	st := state{Sessions: map[string]session.Status{}}
	for _, sc := range scopes {
		s, err := a.Sessions.Status(context.Background(), sc)
		require.NoError(t, err)
		st.Sessions[sc] = s
	}
	rep, err := audit.Verify(a.DB, audit.VerifyOptions{Verifier: a.AuditKey.Verifier()})
	require.NoError(t, err)
	st.Audit = rep
	return st
}

// writeReceipts appends through the app's own log: a second writer on the
// same chain would fork it.
func writeReceipts(t *testing.T, l *audit.Log, n int) {
	t.Helper()
	for i := range n {
		_, err := l.Append(audit.Receipt{
			CallID: fmt.Sprintf("call_%d", i), Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
			Caller: "local", Transport: "stdio", Scope: "default", Tool: "vaultclaw_session_status",
			CapabilityUsed: "session", ParamsHash: "hmac-sha256:00", ResultHash: "hmac-sha256:11",
			Outcome: audit.OutcomeOK, DurationMS: 0.5,
		})
		require.NoError(t, err)
	}
	require.NoError(t, l.Flush())
}

// TestHotBackupRoundTrip populates sessions and audit receipts, takes a hot
// backup through the daemon's control socket while HTTP calls keep writing,
// wipes the database, restores, and checks the restored state.
func TestHotBackupRoundTrip(t *testing.T) {
	cfg := testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+unlimitedPolicy(t))
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	srv := httptest.NewServer(a.HTTPHandler())

	scopes := []string{"default", "tenant-a", "tenant-b"}
	for i, sc := range scopes {
		env := callTool(t, srv.URL, sc, "vaultclaw_session_configure", map[string]any{
			"token": fmt.Sprintf("vc_tok_scope_%d_secret", i), "base_url": fmt.Sprintf("http://vault-%d.example:8080", i)})
		require.Equal(t, true, env["ok"], env)
	}
	env := callTool(t, srv.URL, "tenant-c", "vaultclaw_session_configure", map[string]any{"token": "vc_tok_cleared_later"})
	require.Equal(t, true, env["ok"])
	env = callTool(t, srv.URL, "tenant-c", "vaultclaw_session_clear", map[string]any{})
	require.Equal(t, true, env["ok"])
	scopes = append(scopes, "tenant-c")
	// A user cookbook (two versions) and a remote source.
	raw, err := os.ReadFile("../../cmd/accords-mcp/testdata/import/weather.json")
	require.NoError(t, err)
	var bundle map[string]any
	require.NoError(t, json.Unmarshal(raw, &bundle))
	env = callTool(t, srv.URL, "", "vaultclaw_cookbook_import", map[string]any{"bundle": bundle})
	require.Equal(t, true, env["ok"], env)
	bundle["version"] = "1.1.0"
	bundle["title"] = "Weather lookups, second edition"
	env = callTool(t, srv.URL, "", "vaultclaw_cookbook_import", map[string]any{"bundle": bundle})
	require.Equal(t, true, env["ok"], env)
	env = callTool(t, srv.URL, "", "vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{
		"source_id": "team", "index_url": "https://catalog.example.com/index.json"}})
	require.Equal(t, true, env["ok"], env)
	searches := []map[string]any{
		{"query": "weather forecast"},
		{"query": "gmail"},
		{"query": "forecast", "all_versions": true},
	}
	searchAll := func(url string) []any {
		var out []any
		for _, q := range searches {
			env := callTool(t, url, "", "vaultclaw_recipes_search", q)
			require.Equal(t, true, env["ok"], env)
			out = append(out, env["data"])
		}
		return out
	}
	beforeSearch := searchAll(srv.URL)
	require.NotEmpty(t, beforeSearch[0].(map[string]any)["items"], "the imported cookbook is searchable")
	sourcesEnv := callTool(t, srv.URL, "", "vaultclaw_catalog_sources_list", map[string]any{})
	beforeSources := sourcesEnv["data"].(map[string]any)["sources"]
	require.Len(t, beforeSources, 1)

	// Pending approval handles in two scopes.
	for _, h := range []struct{ scope, job string }{{"default", "job-1"}, {"tenant-a", "job-2"}} {
		_, err := a.Handles.Save(h.scope, &approval.Handoff{Handle: approval.Handle{Kind: approval.KindJob, JobID: h.job}, ExpiresAtUnixMS: time.Now().Add(time.Hour).UnixMilli()}, "test")
		require.NoError(t, err)
	}
	handlesEnv := callTool(t, srv.URL, "tenant-a", "vaultclaw_approval_handles_list", map[string]any{})
	require.Equal(t, true, handlesEnv["ok"], handlesEnv)
	beforeHandles := handlesEnv["data"]
	raw, err = json.Marshal(beforeHandles)
	require.NoError(t, err)
	require.Contains(t, string(raw), "job-2", "the tenant's handle is listed")
	require.NotContains(t, string(raw), "job-1", "another tenant's handle is not")

	writeReceipts(t, a.Audit, 50)
	require.NoError(t, a.Audit.Flush())
	before := capture(t, a, scopes)
	require.True(t, before.Audit.OK)
	require.GreaterOrEqual(t, before.Audit.Count, 50+5, "50 written directly, one per tool call from the gateway")

	// The daemon's control socket, as serve starts it.
	sock := control.SocketPath(cfg.DBPath)
	ln, err := control.Listen(sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ctlDone := make(chan struct{})
	go func() {
		defer close(ctlDone)
		_ = (&control.Server{DB: a.DB}).Serve(ctx, ln, time.Second)
	}()

	// Writers keep configuring sessions of other tenants during the backup.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var calls atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				env := callTool(t, srv.URL, fmt.Sprintf("busy-%d-%d", w, i), "vaultclaw_session_configure", map[string]any{"token": "vc_tok_busy_token"})
				assert.Equal(t, true, env["ok"])
				calls.Add(1)
			}
		})
	}
	for calls.Load() < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	out := filepath.Join(t.TempDir(), "snap.db")
	c := control.NewClient(sock)
	err = backup.WriteFile(out, func(w io.Writer) error {
		_, _, err := c.Backup(context.Background(), w)
		return err
	})
	c.Close()
	require.NoError(t, err)
	stop.Store(true)
	wg.Wait()
	require.Greater(t, calls.Load(), int64(20))

	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	info, err := backup.Check(out)
	require.NoError(t, err)
	assert.Equal(t, migrations.Latest(), info.SchemaVersion)
	assert.GreaterOrEqual(t, info.Audit.Count, before.Audit.Count, "receipts committed before the backup are in it")

	cancel()
	<-ctlDone
	_, err = os.Stat(sock)
	assert.True(t, os.IsNotExist(err), "the socket is removed on shutdown")
	srv.Close()
	require.NoError(t, a.Close())

	// Wipe, then restore.
	require.NoError(t, os.Remove(cfg.DBPath))
	require.NoError(t, os.RemoveAll(cfg.IndexDir()))
	res, err := backup.Restore(out, nil, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir(), Reindex: reindexWithCatalog(cfg)})
	require.NoError(t, err)
	assert.Empty(t, res.Previous, "there was no database to keep")
	assert.True(t, res.Reindexed, res.IndexError)
	assert.Greater(t, res.IndexDocs, 0)

	b := testenv.Open(t, cfg)
	after := capture(t, b, scopes)
	srv2 := httptest.NewServer(b.HTTPHandler())
	defer srv2.Close()
	assert.Equal(t, beforeSearch, searchAll(srv2.URL), "identical search results after restore")
	sourcesEnv = callTool(t, srv2.URL, "", "vaultclaw_catalog_sources_list", map[string]any{})
	assert.Equal(t, beforeSources, sourcesEnv["data"].(map[string]any)["sources"])
	handlesEnv = callTool(t, srv2.URL, "tenant-a", "vaultclaw_approval_handles_list", map[string]any{})
	assert.Equal(t, beforeHandles, handlesEnv["data"], "handles are still listed")
	pending, err := b.Handles.CountPending()
	require.NoError(t, err)
	assert.Equal(t, 2, pending)
	assert.Equal(t, before.Sessions, after.Sessions)
	assert.True(t, after.Audit.OK, "audit verify passes after restore: %+v", after.Audit.Problem)
	assert.Equal(t, info.Audit.Count, after.Audit.Count)
	sess, err := b.Sessions.Resolve(context.Background(), "tenant-a")
	require.NoError(t, err)
	assert.Equal(t, "vc_tok_scope_1_secret", sess.Token, "the sealed token opens with the same key after restore")
	_, err = b.Sessions.Resolve(context.Background(), "tenant-c")
	assert.Error(t, err, "a cleared session stays cleared")
	fi, err = os.Stat(cfg.DBPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestRestoreKeepsPreviousAndClearsIndex restores over a live (stopped)
// database: the old file is kept as a timestamped .bak and the stale index
// folder is gone.
func TestRestoreKeepsPreviousAndClearsIndex(t *testing.T) {
	cfg := testenv.Config(t)
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	_, err = a.Sessions.Configure(context.Background(), "default", "http://old.example", "vc_tok_old_value", 0)
	require.NoError(t, err)
	snap := filepath.Join(t.TempDir(), "b.db")
	require.NoError(t, backup.WriteFile(snap, func(w io.Writer) error { _, err := backup.Snapshot(a.DB, w); return err }))
	_, err = a.Sessions.Configure(context.Background(), "default", "http://new.example", "vc_tok_new_value", 0)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.IndexDir(), "store"), 0o700))

	var rebuilt int
	res, err := backup.Restore(snap, nil, backup.RestoreOptions{
		DBPath: cfg.DBPath, IndexDir: cfg.IndexDir(),
		Now:     func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		Reindex: func(db *store.DB) (int, error) { rebuilt++; return 7, db.Ping() },
	})
	require.NoError(t, err)
	assert.Equal(t, cfg.DBPath+".20260102T030405.000Z.bak", res.Previous)
	assert.True(t, res.Reindexed)
	assert.Equal(t, 7, res.IndexDocs)
	assert.Equal(t, 1, rebuilt)
	_, err = os.Stat(cfg.IndexDir())
	assert.True(t, os.IsNotExist(err), "the old index is removed")

	b := testenv.Open(t, cfg)
	st, err := b.Sessions.Status(context.Background(), "default")
	require.NoError(t, err)
	assert.Equal(t, "http://old.example", st.BaseURL)
	require.NoError(t, b.Close())

	prev := configAt(t, cfg, res.Previous)
	c := testenv.Open(t, prev)
	st, err = c.Sessions.Status(context.Background(), "default")
	require.NoError(t, err)
	assert.Equal(t, "http://new.example", st.BaseURL, "the .bak holds the replaced data")
}

// unlimitedPolicy lifts the default HTTP rate limit, so the load the tests
// generate is never refused.
func unlimitedPolicy(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(p, []byte("[defaults]\ncalls_per_minute = 0\n"), 0o600))
	return p
}

// reindexWithCatalog is the command's reindex step: opening the catalog
// on the restored database rebuilds the missing index.
func reindexWithCatalog(cfg config.Config) func(db *store.DB) (int, error) {
	return func(db *store.DB) (int, error) {
		cat, err := catalog.Open(context.Background(), db, cfg.IndexDir(), catalog.Options{})
		if err != nil {
			return 0, err
		}
		defer cat.Close()
		docs, irev, srev, err := cat.IndexStats()
		if err == nil && irev != srev {
			err = fmt.Errorf("index at %d, store at %d", irev, srev)
		}
		return int(docs), err
	}
}

func configAt(t *testing.T, cfg config.Config, path string) config.Config {
	t.Helper()
	c := cfg
	c.DBPath = path
	// Same key: the key file lives beside the db, so point at the secret.
	return c
}

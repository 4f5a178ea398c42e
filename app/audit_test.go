package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func healthz(t *testing.T, a *app.App) map[string]any {
	t.Helper()
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body
}

// TestBrokenChainAtStartIsLoud: a log altered while the server was down is
// found at start: an ERROR line, /healthz degraded, doctor FAIL, write tools
// refused, until an operator acknowledges it.
func TestBrokenChainAtStartIsLoud(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	for range 6 {
		require.True(t, mcptest.Call(t, cs.ClientSession, "vaultclaw_session_status", nil).OK)
	}
	assert.Equal(t, "ok", healthz(t, a)["status"])
	cs.Close()
	require.NoError(t, a.Close())

	db, err := store.Open(cfg.DBPath, store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketAudit).Bucket([]byte("receipts")).Delete(store.U64(3))
	}))
	require.NoError(t, db.Close())

	var logs bytes.Buffer
	a, err = app.Open(cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err, "the server still starts: reads go on")
	defer a.Close()
	p, err := a.Audit.Integrity()
	require.NoError(t, err)
	require.NotNil(t, p, "found by the start-up verification (Integrity waits for it)")
	assert.Contains(t, logs.String(), `"level":"ERROR"`, "logged before Integrity reports it")
	assert.Contains(t, logs.String(), "audit log failed verification")

	h := healthz(t, a)
	assert.Equal(t, "degraded", h["status"])
	assert.Contains(t, h["degraded"].([]any)[0], "receipt 3")
	assert.Equal(t, true, h["ok"])

	rs := doctor.Database(context.Background(), doctor.Inputs{DB: a.DB, AuditKey: a.AuditKey, Probe: func(context.Context, session.Session) (int, error) { return 200, nil }})
	var auditRow doctor.Result
	for _, r := range rs {
		if r.Check == "audit chain" {
			auditRow = r
		}
	}
	assert.Equal(t, doctor.FAIL, auditRow.Status, "%+v", rs)
	assert.Contains(t, auditRow.Detail, "receipt 3")

	cs = mcptest.Connect(t, a.MCPServer(), nil)
	defer cs.Close()
	env := mcptest.Call(t, cs.ClientSession, "vaultclaw_session_configure", map[string]any{"token": "vc_tok_x"})
	require.Equal(t, apperr.CodeInternal, env.Code())
	assert.Equal(t, "audit_chain_broken", env.Details()["reason"])
	require.True(t, mcptest.Call(t, cs.ClientSession, "vaultclaw_session_status", nil).OK)

	ref, err := a.Audit.Acknowledge("alice", "receipt 3 lost in the disk incident", p)
	require.NoError(t, err)
	assert.NotZero(t, ref.Seq)
	require.True(t, mcptest.Call(t, cs.ClientSession, "vaultclaw_session_configure", map[string]any{"token": "vc_tok_x"}).OK)
	assert.Equal(t, "ok", healthz(t, a)["status"])
	rep, err := audit.Verify(a.DB, audit.VerifyOptions{Verifier: a.AuditKey.Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	require.Len(t, rep.Acknowledged, 1)
}

func TestPublicKeyIsServedAndAnchorFailuresAreCounted(t *testing.T) {
	t.Parallel()
	anchor := filepath.Join(t.TempDir(), "anchor.log")
	cfg := testenv.Config(t, "ACCORDS_MCP_AUDIT_ANCHOR=exec:cat >>"+anchor+"; exit 7", "ACCORDS_MCP_AUDIT_CHECKPOINT=1")
	var logs bytes.Buffer
	a, err := app.Open(cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	for range 3 {
		require.True(t, mcptest.Call(t, cs.ClientSession, "vaultclaw_session_configure", map[string]any{"token": "vc_tok_x"}).OK,
			"a failing anchor never blocks a call")
	}
	cs.Close()

	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/.well-known/accords-audit-key")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, a.AuditKey.VerifierKey+"\n", string(body))
	_, err = audit.ParseVerifierKey(string(body))
	require.NoError(t, err)

	require.NoError(t, a.Close()) // drains the anchor
	assert.Positive(t, a.Metrics.AuditAnchors.Value("failed"))
	var text bytes.Buffer
	require.NoError(t, a.Metrics.Registry.WriteText(&text))
	assert.Contains(t, text.String(), `accords_mcp_audit_anchor_total{result="failed"}`)
	assert.Contains(t, logs.String(), "audit checkpoint not anchored")
	// The command got the checkpoints on stdin before failing.
	raw, err := os.ReadFile(anchor)
	require.NoError(t, err)
	notes := audit.SplitNotes(raw)
	require.NotEmpty(t, notes)
	_, err = audit.OpenCheckpoint(notes[len(notes)-1], "", a.AuditKey.Verifier())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(notes[0]), "accords-mcp/audit/"))
}

// A burst that fills the count bound is loud: the retention pass logs at
// WARN what the count removed, counts it in
// accords_mcp_audit_pruned_receipts_total{bound="count"}, and doctor
// reports it (WARN, not a failure); the other tenant's receipts stay.
func TestCountPruneAfterABurstIsLoud(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t, "ACCORDS_MCP_AUDIT_RETENTION=30", "ACCORDS_MCP_AUDIT_TENANT_FLOOR=5")
	var logs bytes.Buffer
	a, err := app.Open(cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	defer a.Close()
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	quiet := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", nil, map[string]string{"X-Tenant-Id": "quiet"})
	require.True(t, quiet.OK)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	for range 80 {
		require.True(t, mcptest.Call(t, cs.ClientSession, "vaultclaw_session_status", nil).OK)
	}
	cs.Close()
	require.NoError(t, a.Audit.Prune())

	assert.Contains(t, logs.String(), `"level":"WARN"`)
	assert.Contains(t, logs.String(), "audit retention removed receipts by count")
	assert.Positive(t, a.Metrics.AuditPruned.Value("count"))
	var text bytes.Buffer
	require.NoError(t, a.Metrics.Registry.WriteText(&text))
	assert.Contains(t, text.String(), `accords_mcp_audit_pruned_receipts_total{bound="count"}`)

	rs := doctor.Database(context.Background(), doctor.Inputs{DB: a.DB, AuditKey: a.AuditKey, Probe: func(context.Context, session.Session) (int, error) { return 200, nil }})
	var row doctor.Result
	for _, r := range rs {
		if r.Check == "audit retention" {
			row = r
		}
	}
	assert.Equal(t, doctor.WARN, row.Status, "%+v", rs)
	assert.Contains(t, row.Detail, "by the count bound")
	assert.False(t, doctor.Failed([]doctor.Result{row}))

	kept, err := audit.List(a.DB, audit.Filter{Scope: "quiet"})
	require.NoError(t, err)
	assert.Len(t, kept, 1, "the burst did not push the quiet tenant's receipt out")
}

package app_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A restore through the daemon says how many receipts of the replaced log
// it discards, records itself in the restored log before serving it, and
// the log then verifies against every checkpoint the anchor holds (the
// replaced history's included) and passes the start-up anchor check.
func TestDaemonRestoreReportsAndRecordsDiscardedReceipts(t *testing.T) {
	t.Parallel()
	anchor := filepath.Join(t.TempDir(), "anchor.log")
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"}, "ACCORDS_MCP_AUDIT_ANCHOR=file:"+anchor)
	cs := attach(t, w, "one", control.Hello{})
	for range 3 {
		require.True(t, mcptest.Call(t, cs, "vaultclaw_session_status", nil).OK)
	}
	require.NoError(t, a.Audit.Checkpoint())
	var snap bytes.Buffer
	_, err := a.Backend().Backup(context.Background(), &snap)
	require.NoError(t, err)
	bak := filepath.Join(t.TempDir(), "b.db")
	require.NoError(t, os.WriteFile(bak, snap.Bytes(), 0o600))
	for range 8 {
		require.True(t, mcptest.Call(t, cs, "vaultclaw_session_status", nil).OK)
	}
	require.NoError(t, a.Audit.Checkpoint()) // anchored: the anchor now covers 11

	res, err := a.Backend().Restore(context.Background(), bak, nil)
	require.NoError(t, err)
	require.NotNil(t, res.AuditRestore)
	assert.EqualValues(t, 3, res.AuditRestore.RestoredSize)
	assert.EqualValues(t, 11, res.AuditRestore.PreviousSize)
	assert.EqualValues(t, 8, res.AuditRestore.Discarded, "the restore says what it discards")
	require.NotNil(t, res.AuditRecord, res.AuditRecordError)
	assert.EqualValues(t, 4, res.AuditRecord.Seq)

	p, err := a.Audit.Integrity()
	require.NoError(t, err)
	assert.Nil(t, p, "the restored log serves, its start-up check satisfied")
	require.True(t, mcptest.Call(t, cs, "vaultclaw_session_status", nil).OK)
	require.NoError(t, a.Audit.Checkpoint())

	notes, err := (&audit.FileAnchor{Path: anchor}).Tail()
	require.NoError(t, err)
	vres, err := a.Backend().AuditVerify(context.Background(), admin.AuditVerifyRequest{Saved: notes})
	require.NoError(t, err)
	require.True(t, vres.Report.OK, "%+v", vres.Report.Problem)
	require.Len(t, vres.Report.Restores, 1)
	replaced := 0
	for _, s := range vres.Report.Saved {
		if s.Status == audit.SavedReplaced {
			replaced++
		}
	}
	assert.Positive(t, replaced, "the replaced history's checkpoints are accounted for")
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// anchoredVars is a database with its audit key outside the folder and a
// file anchor.
func anchoredVars(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"ACCORDS_MCP_DB":             filepath.Join(t.TempDir(), "data", "accords.db"),
		"ACCORDS_MCP_AUDIT_KEY_FILE": filepath.Join(t.TempDir(), "keys", "audit.key"),
		"ACCORDS_MCP_AUDIT_ANCHOR":   "file:" + filepath.Join(t.TempDir(), "anchor.log"),
	}
}

// backupAt seeds calls, writes a backup and returns its path.
func backupAt(t *testing.T, vars map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	code, out, errb := cliRun(t, vars, "", "backup", "--out", dir, "--json")
	require.Equal(t, 0, code, errb)
	var res struct {
		Path string `json:"path"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	return res.Path
}

// startIntegrity opens the app as a server does (anchor check included)
// and returns the log's start-up verdict.
func startIntegrity(t *testing.T, vars map[string]string) *audit.Problem {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Open(cfg, nil)
	require.NoError(t, err)
	defer a.Close()
	p, err := a.Audit.Integrity()
	require.NoError(t, err)
	return p
}

// The attack of issue 37: an older copy of the database put in place drops
// the newer receipts and reuses their numbers, and only an offline verify
// with the anchor noticed. A server with a file anchor now flags it at
// start (write tools refused until acknowledged).
func TestOlderCopySwappedInIsFlaggedAtStart(t *testing.T) {
	vars := anchoredVars(t)
	seedAudit(t, vars, 4)
	bak := backupAt(t, vars)
	seedAudit(t, vars, 6)
	raw, err := os.ReadFile(bak)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(vars["ACCORDS_MCP_DB"], raw, 0o600)) // no restore command: nothing recorded

	p := startIntegrity(t, vars)
	require.NotNil(t, p, "the server notices the log is behind its anchor")
	assert.Equal(t, audit.ProblemRolledBack, p.Kind)
	code, out, _ := cliRun(t, vars, "", "doctor")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "rolled_back")
}

// Restoring an older backup through the command says how many receipts it
// discards, records itself in the restored log, and leaves a log that
// verifies against the anchor and passes the start-up check.
func TestRestoreReportsAndRecordsDiscardedReceipts(t *testing.T) {
	vars := anchoredVars(t)
	seedAudit(t, vars, 4) // 5 receipts
	bak := backupAt(t, vars)
	seedAudit(t, vars, 6) // 7 more: 12

	code, out, errb := cliRun(t, vars, "", "restore", bak)
	require.Equal(t, 0, code, errb)
	assert.Contains(t, out, "restore: audit log: restored "+bak+" ending at receipt 5; 7 receipts the replaced log held after receipt 5 (up to 12) are discarded and numbers from 6 are used again")
	assert.Contains(t, out, "restore: recorded in the audit log as receipt 6 with a signed restore record")
	assert.NotContains(t, errb, "warning")

	assert.Nil(t, startIntegrity(t, vars), "the restore record accounts for the anchor's newer checkpoints")
	seedAudit(t, vars, 9) // the numbers 7.. again, past the replaced 12

	anchor := vars["ACCORDS_MCP_AUDIT_ANCHOR"][len("file:"):]
	code, out, errb = cliRun(t, vars, "", "audit", "verify", "--checkpoint", anchor)
	require.Equal(t, 0, code, out+errb)
	assert.Contains(t, out, "restored at receipt 5 on ")
	assert.Contains(t, out, "of the history a recorded restore replaced")

	code, out, _ = cliRun(t, vars, "", "audit", "tail", "-n", "30", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"type":"audit_restore"`)
	assert.Contains(t, out, `"outcome":"restored"`)
}

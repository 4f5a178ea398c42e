package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withoutSocket runs the rest of t as on a platform with no control socket
// (Windows, D33).
func withoutSocket(t *testing.T) {
	supported, wait := socketSupported, ownerDBLock
	socketSupported, ownerDBLock = false, 300*time.Millisecond
	t.Cleanup(func() { socketSupported, ownerDBLock = supported, wait })
}

// TestStdioServesItselfWithoutTheSocket (D33): a stdio launch opens the
// database itself, answers, and leaves no socket or daemon behind.
func TestStdioServesItselfWithoutTheSocket(t *testing.T) {
	withoutSocket(t)
	db := filepath.Join(shortTemp(t), "accords.db")
	vars := map[string]string{"ACCORDS_MCP_DB": db}
	code, out, errb := cliRun(t, vars, initMsg+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	require.Equal(t, 0, code, errb)
	assert.Contains(t, out, `"id":2`)
	assert.Contains(t, out, "vaultclaw_route_resolve")
	assert.Contains(t, errb, "no control socket on this platform")
	assert.NotContains(t, errb, "attached to the daemon")
	assert.FileExists(t, db)
	assert.NoFileExists(t, control.SocketPath(db))
	assert.NoFileExists(t, DaemonLogPath(db))
}

// TestSecondClientWithoutTheSocketSaysWhatToDo (D33): while one process
// serves the database, another launch cannot share it and says how to
// (a database of its own, or the HTTP bridge); `daemon` refuses before
// opening anything; the HTTP bridge serves without the socket.
func TestSecondClientWithoutTheSocketSaysWhatToDo(t *testing.T) {
	withoutSocket(t)
	db := filepath.Join(shortTemp(t), "accords.db")
	vars := map[string]string{"ACCORDS_MCP_DB": db}
	d := startServe(t, vars)
	assert.NoFileExists(t, control.SocketPath(db))

	code, out, errb := cliRun(t, vars, initMsg+"\n")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errb, "database is locked by another process")
	assert.Contains(t, errb, "ACCORDS_MCP_DB")
	assert.Contains(t, errb, "accords-mcp serve --http")

	code, _, errb = cliRun(t, vars, "", "daemon")
	assert.Equal(t, 1, code)
	assert.Contains(t, errb, "no control socket on this platform")
	assert.Contains(t, errb, "accords-mcp serve --http")

	code, out, _ = cliRun(t, vars, "", "status")
	assert.NotEqual(t, 0, code, "status cannot reach the HTTP bridge's process: %s", out)
	require.Equal(t, 0, d.stop(), d.stderr.String())
	_, err := os.Stat(control.SocketPath(db))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.False(t, strings.Contains(d.stderr.String(), `"level":"ERROR"`), d.stderr.String())
}

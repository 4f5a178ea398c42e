package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerRefusesAFolderOthersMayWrite: `daemon`, `serve --http` and
// the commands that write refuse a database folder other users may write
// to (they could have put their own socket, database or key there), and
// create nothing in it; doctor says FAIL and how to fix it.
func TestServerRefusesAFolderOthersMayWrite(t *testing.T) {
	dir := filepath.Join(shortTemp(t), "shared")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db")}
	for _, args := range [][]string{{"daemon"}, {"serve", "--http", "127.0.0.1:0"}, {"catalog", "list"}} {
		// A hang guard: a server that starts runs until its context ends.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		env, _, errb := opsEnv(vars, "")
		code := run(ctx, env, args)
		cancel()
		errOut := errb.String()
		assert.Equal(t, 1, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "unsafe database folder", "%v", args)
		assert.Contains(t, errOut, "chmod 700 "+dir, "%v", args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was created in the folder")

	code, out := runDoctorCmd(t, vars)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, line(t, out, "db folder"), "FAIL")
	assert.Contains(t, line(t, out, "daemon"), "FAIL")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTruncatedDatabaseIsReportedNotCrashedOn: a database file cut short
// (a full disk, a bad copy) made every command that opens it die with
// SIGBUS and a goroutine dump. The built binary now says in one line what
// is wrong and how to recover, and doctor reports FAIL with exit 1.
func TestTruncatedDatabaseIsReportedNotCrashedOn(t *testing.T) {
	dir := shortTemp(t)
	db := filepath.Join(dir, "accords.db")
	code, _, errOut := binCmd(t, db, "catalog", "list")
	require.Equal(t, 0, code, errOut)
	fi, err := os.Stat(db)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(3*4096))
	require.NoError(t, os.Truncate(db, 3*4096))

	noCrash := func(what, out string) {
		t.Helper()
		assert.NotContains(t, out, "SIGBUS", what)
		assert.NotContains(t, out, "goroutine ", what)
		assert.Contains(t, out, "truncated", what)
		assert.Contains(t, out, "accords-mcp restore", what)
	}
	code, out, errOut := binCmd(t, db, "doctor")
	assert.Equal(t, 1, code, out+errOut)
	noCrash("doctor", out+errOut)
	var fails []string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	require.Len(t, fails, 1, out)
	assert.Contains(t, fails[0], "truncated")

	for _, args := range [][]string{{"catalog", "list"}, {"search", "gmail"}, {"audit", "verify"}, {"serve", "--standalone"}} {
		code, out, errOut := binCmd(t, db, args...)
		assert.Equal(t, 1, code, "%v: %s%s", args, out, errOut)
		noCrash(strings.Join(args, " "), out+errOut)
	}

	p := launch(t, db, "ACCORDS_MCP_STANDALONE=false")
	assert.Equal(t, 1, p.wait(t))
	noCrash("stdio launch", p.stderr.String())
	assert.Contains(t, p.stderr.String(), "the daemon could not start")
}

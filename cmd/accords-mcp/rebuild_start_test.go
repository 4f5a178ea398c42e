package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/benchcat"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartWithoutIndexAnswersBeforeTheRebuild: the binary started on a
// catalog whose index folder is gone answers initialize, rebuilds the
// index in the background, and a search then waits for the index and
// finds the catalog's cookbooks. The 3,000-bundle run, where initialize
// must also come before the rebuild is done, is
// TestScaleStartWithoutIndexAnswersBeforeTheRebuild (-tags=scale).
func TestStartWithoutIndexAnswersBeforeTheRebuild(t *testing.T) {
	startWithoutIndex(t, 60, false)
}

// startWithoutIndex starts the binary on a catalog of n bundles without
// its index. With beforeRebuild, initialize must be answered while the
// rebuild still runs: only a catalog large enough that its rebuild takes
// seconds makes that order certain.
func startWithoutIndex(t *testing.T, n int, beforeRebuild bool) {
	dir := filepath.Join(shortTemp(t), "db")
	c := benchcat.Build(t, dir, n)
	dbPath := c.DBPath()
	c.Close()
	require.NoError(t, os.RemoveAll(dbPath+".index"))
	id := benchcat.Corpus.CookbookID(n / 2)

	p := start(t, dbPath)
	p.send(t, initMsg)
	init := p.recv(t)
	require.Equal(t, 1.0, init["id"])
	log := p.stderr.String()
	assert.Contains(t, log, "catalog index rebuild started in the background")
	if beforeRebuild {
		// The rebuild of 15,000 documents takes a second or more;
		// initialize comes within tens of milliseconds of start.
		assert.NotContains(t, log, `"msg":"catalog index rebuilt"`, "initialize waited for the rebuild")
	}

	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"vaultclaw_cookbook_get","arguments":{"cookbook_id":"`+id+`"}}}`)
	require.Equal(t, true, structured(t, p.recv(t))["ok"], "get needs no index")
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_recipes_search","arguments":{"cookbook_id":"`+id+`"}}}`)
	env := structured(t, p.recv(t))
	require.Equal(t, true, env["ok"], env)
	assert.Len(t, env["data"].(map[string]any)["items"], 5, "the search waited for the rebuilt index")
	// The server logs it before answering, but stderr comes through a pipe
	// the test reads on its own goroutine.
	assert.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), `"msg":"catalog index rebuilt"`) },
		5*time.Second, 10*time.Millisecond)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, 0, p.wait(t))
}

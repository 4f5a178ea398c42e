package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/platform/version"
)

// TestLaunchOfAnotherBuild: a launch attached to a daemon of another build
// (this test binary against a daemon of the built command: same version,
// other executable) is served, warns on stderr with both builds and the
// command that replaces the daemon, and status shows both builds.
func TestLaunchOfAnotherBuild(t *testing.T) {
	dbPath := filepath.Join(shortTemp(t), "accords.db")
	first := startAttached(t, dbPath)
	first.send(t, initMsg)
	require.Equal(t, 1.0, first.recv(t)["id"], "stderr: %s", first.stderr.String())
	assert.NotContains(t, first.stderr.String(), "another build", "the launch that started the daemon is its build")

	vars := map[string]string{"ACCORDS_MCP_DB": dbPath, "ACCORDS_MCP_STANDALONE": "false"}
	code, out, errOut := cliRun(t, vars, initMsg+"\n")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"id":1`, "the daemon of another build serves the launch")
	mine := version.ID()
	assert.Contains(t, errOut, "is another build of accords-mcp")
	assert.Contains(t, errOut, "this launch "+mine)
	assert.Contains(t, errOut, "accords-mcp stop --db "+dbPath)

	code, out, errOut = cliRun(t, vars, "", "status")
	require.Equal(t, 0, code, errOut)
	var daemonBuild string
	for l := range strings.SplitSeq(out, "\n") {
		if b, ok := strings.CutPrefix(l, "build       "); ok {
			daemonBuild = b
		}
	}
	require.NotEmpty(t, daemonBuild, out)
	assert.NotEqual(t, mine, daemonBuild)
	assert.Contains(t, errOut+out, "this binary "+mine+": another build")
}

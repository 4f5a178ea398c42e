package control_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/accordsai/accords-mcp/ops/control"
)

func TestBuildMismatch(t *testing.T) {
	const mine = "0.1.0 (commit 0d74cd5a1b2c)"
	db := "/home/u/.config/accords-mcp/accords.db"
	assert.Empty(t, control.BuildMismatch(mine, control.Welcome{DaemonPID: 7, Version: "0.1.0", Build: mine}, db),
		"the same build attaches silently")

	other := control.Welcome{DaemonPID: 7, Version: "0.1.0", Build: "0.1.0 (commit 7f4d98f0aa11)"}
	msg := control.BuildMismatch(mine, other, db)
	assert.Contains(t, msg, "daemon 0.1.0 (commit 7f4d98f0aa11), this launch "+mine, "both builds, though the versions are equal")
	assert.Contains(t, msg, "pid 7")
	assert.Contains(t, msg, "serves this client anyway")
	assert.Contains(t, msg, "accords-mcp stop --db "+db+")", "the exact command, for this database")
	assert.Contains(t, msg, "start the client again")

	old := control.BuildMismatch(mine, control.Welcome{DaemonPID: 7, Version: "0.1.0"}, db)
	assert.Contains(t, old, "daemon 0.1.0 (an older build that does not report its commit)",
		"a daemon that sends no build is another build")

	spaced := control.BuildMismatch(mine, other, "/tmp/my dir/it's.db")
	assert.Contains(t, spaced, `accords-mcp stop --db '/tmp/my dir/it'\''s.db'`, "a path a shell would split is quoted")
}

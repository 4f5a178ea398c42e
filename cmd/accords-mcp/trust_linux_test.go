package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/otheruser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const victimToken = "vc_tok_victim_secret_0123456789"

// TestLaunchSendsNothingToAnotherUsersSocket is the attack on a fixed
// database path under the shared temporary folder: another user (nobody)
// created the folder first, world-writable, and listens on the socket a
// launch looks for. The built binary, launched as a stdio client with a
// Vault token, and an operator command refuse to use it and send nothing;
// so do they when the listener's socket sits in this user's private folder
// (its uid is read from the connection).
func TestLaunchSendsNothingToAnotherUsersSocket(t *testing.T) {
	uid, gid := otheruser.User(t)
	base := shortTemp(t)
	require.NoError(t, os.Chmod(base, 0o755))

	t.Run("their folder", func(t *testing.T) {
		try := filepath.Join(base, "try")
		require.NoError(t, os.Mkdir(try, 0o777))
		require.NoError(t, os.Chmod(try, 0o777))
		require.NoError(t, os.Chown(try, uid, gid))
		db := filepath.Join(try, "accords.db")
		rec := otheruser.Listen(t, control.SocketPath(db))

		p := launch(t, db, "ACCORDS_MCP_STANDALONE=false", "VC_AGENT_TOKEN="+victimToken)
		assert.Equal(t, 1, p.wait(t), p.stderr.String())
		assert.Contains(t, p.stderr.String(), "refusing to use the control socket")
		assert.Contains(t, p.stderr.String(), "belongs to uid 65534")
		code, _, errOut := binCmd(t, db, "status")
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, errOut, "refusing to use the control socket")

		_, got := rec.Stop()
		assert.NotContains(t, got, victimToken)
		assert.Empty(t, got, "nothing was sent to the other user's listener")
		entries, err := os.ReadDir(try)
		require.NoError(t, err)
		for _, e := range entries {
			assert.Equal(t, "accords.db.sock", e.Name(), "nothing was created in their folder")
		}
	})

	t.Run("their listener in my folder", func(t *testing.T) {
		theirs := filepath.Join(base, "theirs")
		require.NoError(t, os.Mkdir(theirs, 0o700))
		require.NoError(t, os.Chown(theirs, uid, gid))
		rec := otheruser.Listen(t, filepath.Join(theirs, "s"))
		mine := filepath.Join(base, "mine")
		require.NoError(t, os.Mkdir(mine, 0o700))
		db := filepath.Join(mine, "accords.db")
		require.NoError(t, os.Rename(filepath.Join(theirs, "s"), control.SocketPath(db)))
		require.NoError(t, os.Lchown(control.SocketPath(db), 0, 0))

		p := launch(t, db, "ACCORDS_MCP_STANDALONE=false", "VC_AGENT_TOKEN="+victimToken)
		assert.Equal(t, 1, p.wait(t), p.stderr.String())
		assert.Contains(t, p.stderr.String(), "runs as uid 65534")
		code, _, errOut := binCmd(t, db, "status")
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, errOut, "runs as uid 65534")

		_, got := rec.Stop()
		assert.NotContains(t, got, victimToken)
		assert.Empty(t, got, "nothing was sent to the other user's listener")
	})
}

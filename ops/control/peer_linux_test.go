package control_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/otheruser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientChecksTheListenersUID: another user's process listens on a
// socket that, by its path, looks like this user's (it was moved into
// this user's private folder and given to this user, which is what a
// folder swapped between the checks and the connect amounts to). The
// client reads the listener's uid (SO_PEERCRED) and sends nothing.
func TestClientChecksTheListenersUID(t *testing.T) {
	uid, gid := otheruser.User(t)
	theirs := shortDir(t)
	require.NoError(t, os.Chown(theirs, uid, gid))
	theirSock := filepath.Join(theirs, "s")
	rec := otheruser.Listen(t, theirSock)

	mine := shortDir(t)
	sock := filepath.Join(mine, "accords.db.sock")
	require.NoError(t, os.Rename(theirSock, sock))
	require.NoError(t, os.Lchown(sock, os.Getuid(), os.Getgid()))
	fi, err := os.Stat(mine)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the folder passes the path checks")

	for _, err := range tryClient(t, sock) {
		require.ErrorIs(t, err, control.ErrUntrusted)
		assert.ErrorContains(t, err, "runs as uid 65534")
		assert.ErrorContains(t, err, "nothing was sent")
	}
	_, got := rec.Stop()
	assert.Empty(t, got, "the client connected (to read the listener's uid) but sent nothing")
}

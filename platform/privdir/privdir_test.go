//go:build unix

package privdir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	assert.NoError(t, privdir.Check(mk("private", 0o700)))
	assert.NoError(t, privdir.Check(mk("readable", 0o755)), "others may read and enter, not write")
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702, 0o777 | os.ModeSticky} {
		err := privdir.Check(mk("w"+mode.String(), mode))
		assert.ErrorIs(t, err, privdir.ErrUnsafe, "%v", mode)
		assert.ErrorContains(t, err, "chmod 700")
	}
	assert.ErrorIs(t, privdir.Check(filepath.Join(base, "missing")), fs.ErrNotExist)
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	assert.ErrorIs(t, privdir.Check(file), privdir.ErrUnsafe)

	// A link is followed: what counts is the folder it names.
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(filepath.Join(base, "w-rwxrwxrwx"), link))
	assert.ErrorIs(t, privdir.Check(link), privdir.ErrUnsafe)

	made := filepath.Join(base, "new", "deeper")
	require.NoError(t, privdir.Ensure(made))
	fi, err := os.Stat(made)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	assert.ErrorIs(t, privdir.Ensure(filepath.Join(base, "w-rwxrwxrwx")), privdir.ErrUnsafe, "an existing folder is checked, not changed")
}

func TestCheckOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a folder to another user (chown)")
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	err := privdir.Check(dir)
	require.ErrorIs(t, err, privdir.ErrUnsafe)
	assert.ErrorContains(t, err, "belongs to uid 65534")
	assert.True(t, privdir.Trusted(0), "root is trusted")
	assert.False(t, privdir.Trusted(65534))
	assert.False(t, errors.Is(privdir.Check(filepath.Dir(dir)), privdir.ErrUnsafe))
}

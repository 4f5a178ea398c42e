package store_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// truncatedDB writes a database whose data spans many pages, then cuts it
// to three: its meta pages still record the pages it held, so bbolt would
// map it and crash (SIGBUS) at the first read past the end.
func truncatedDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("filler"))
		if err != nil {
			return err
		}
		for i := range 64 {
			if err := b.Put(store.U64(uint64(i)), bytes.Repeat([]byte{byte(i)}, 4000)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	require.NoError(t, os.Truncate(path, 3*4096))
	return path
}

// TestTruncatedFileIsRefusedBeforeItIsMapped: every open (the server's,
// and the read-only one of doctor and the offline commands) says the file
// is damaged and how to recover, instead of crashing.
func TestTruncatedFileIsRefusedBeforeItIsMapped(t *testing.T) {
	path := truncatedDB(t)
	for _, ro := range []bool{false, true} {
		_, err := store.Open(path, store.Options{ReadOnly: ro})
		require.ErrorIs(t, err, store.ErrDamaged, "read-only %v", ro)
		assert.ErrorContains(t, err, "truncated")
		assert.ErrorContains(t, err, "accords-mcp restore")
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(3*4096), fi.Size(), "the file is left as it is, for recovery")

	garbage := filepath.Join(t.TempDir(), "garbage.db")
	require.NoError(t, os.WriteFile(garbage, bytes.Repeat([]byte("not bbolt "), 2000), 0o600))
	_, err = store.Open(garbage, store.Options{})
	require.ErrorIs(t, err, store.ErrDamaged)
	assert.ErrorContains(t, err, "no valid bbolt meta page")
}

// TestOpenRefusesAFolderOthersMayWrite: the server does not write its
// state where another user may put files; reading (doctor) still works.
func TestOpenRefusesAFolderOthersMayWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Chmod(dir, 0o777))

	_, err = store.Open(path, store.Options{})
	require.ErrorIs(t, err, privdir.ErrUnsafe)
	assert.ErrorContains(t, err, "chmod 700 "+dir)
	_, err = store.Open(filepath.Join(dir, "new.db"), store.Options{})
	require.ErrorIs(t, err, privdir.ErrUnsafe)
	_, err = os.Stat(filepath.Join(dir, "new.db"))
	assert.True(t, os.IsNotExist(err), "nothing created")

	ro, err := store.Open(path, store.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, ro.Close())
}

func TestOnDiskNoticesTheFileGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.OnDisk())
	require.NoError(t, os.Rename(path, path+".moved"))
	assert.Error(t, db.OnDisk())
	require.NoError(t, os.Rename(path+".moved", path))
	assert.NoError(t, db.OnDisk())
	require.NoError(t, os.Remove(path))
	assert.Error(t, db.OnDisk())
}

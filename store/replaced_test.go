//go:build unix

package store_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

// mark writes a marker into the database at path.
func mark(t *testing.T, path, value string) {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx store.Tx) error { return tx.Bucket(store.BucketMeta).Put([]byte("marker"), []byte(value)) }))
	require.NoError(t, db.Close())
}

// TestOpenFollowsAFileReplacedWhileWaitingForTheLock is the restore race: a
// daemon opens the old file in the instant before restore takes its lock,
// waits for the lock, and restore renames the restored file into place and
// releases it. The daemon must end up on the restored file, not on the old
// one (which from then on is only the .bak).
func TestOpenFollowsAFileReplacedWhileWaitingForTheLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "accords.db")
	mark(t, path, "old")
	restored := filepath.Join(dir, "restored.db")
	mark(t, restored, "new")

	// The restore: hold the old file's lock.
	old, err := os.Open(path)
	require.NoError(t, err)
	defer old.Close()
	require.NoError(t, syscall.Flock(int(old.Fd()), syscall.LOCK_EX))

	type opened struct {
		db  *store.DB
		err error
	}
	got := make(chan opened, 1)
	go func() {
		db, err := store.Open(path, store.Options{LockTimeout: 10 * time.Second})
		got <- opened{db, err}
	}()
	time.Sleep(200 * time.Millisecond) // the daemon now waits on the old file's lock
	require.NoError(t, os.Link(path, path+".bak"))
	require.NoError(t, os.Rename(restored, path))
	require.NoError(t, syscall.Flock(int(old.Fd()), syscall.LOCK_UN))

	o := <-got
	require.NoError(t, o.err)
	defer o.db.Close()
	var value string
	require.NoError(t, o.db.View(func(tx store.Tx) error {
		value = string(tx.Bucket(store.BucketMeta).Get([]byte("marker")))
		return nil
	}))
	require.Equal(t, "new", value, "the daemon serves the restored file")
}

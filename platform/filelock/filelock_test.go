package filelock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/filelock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestOneHolderAtATime: a second open file waits until the first releases,
// and gives up with ErrLocked when its context ends first.
func TestOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first, second := open(t, path), open(t, path)
	unlock, err := filelock.Lock(within(t, time.Second), first, time.Millisecond)
	require.NoError(t, err)

	_, err = filelock.Lock(within(t, 30*time.Millisecond), second, 5*time.Millisecond)
	require.ErrorIs(t, err, filelock.ErrLocked)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan error, 1)
	go func() {
		u, err := filelock.Lock(within(t, 10*time.Second), second, 5*time.Millisecond)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	require.NoError(t, <-got)
}

// TestConflictsWithAnOpenDatabase: the lock is the one bbolt holds, so it
// cannot be taken while a database is open and can once it is closed.
func TestConflictsWithAnOpenDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	f := open(t, path)
	_, err = filelock.Lock(within(t, 30*time.Millisecond), f, 5*time.Millisecond)
	require.ErrorIs(t, err, filelock.ErrLocked)

	require.NoError(t, db.Close())
	unlock, err := filelock.Lock(within(t, time.Second), f, 5*time.Millisecond)
	require.NoError(t, err)
	_, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 30 * time.Millisecond})
	assert.ErrorIs(t, err, bolterr.ErrTimeout, "bbolt waits for the lock taken here")
	unlock()
}

// TestOtherFailuresAreNotWaitedOn: a closed file fails at once.
func TestOtherFailuresAreNotWaitedOn(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "x.lock"))
	require.NoError(t, f.Close())
	_, err := filelock.Lock(within(t, 10*time.Second), f, time.Hour)
	require.Error(t, err)
	assert.NotErrorIs(t, err, filelock.ErrLocked)
}

// TestHeldFileCanBeReplaced: a rename replaces a file held through Open,
// which restore does to the database it has locked.
func TestHeldFileCanBeReplaced(t *testing.T) {
	dir := t.TempDir()
	live, staged := filepath.Join(dir, "accords.db"), filepath.Join(dir, "staged")
	require.NoError(t, os.WriteFile(live, []byte("old"), 0o600))
	require.NoError(t, os.WriteFile(staged, []byte("new"), 0o600))
	f, err := filelock.Open(live)
	require.NoError(t, err)
	defer f.Close()
	release, err := filelock.Lock(within(t, time.Second), f, time.Millisecond)
	require.NoError(t, err)
	defer release()
	require.NoError(t, os.Rename(staged, live))
	got, err := os.ReadFile(live)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))

	_, err = filelock.Open(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

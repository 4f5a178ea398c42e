package task

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	return db
}

var alice = Owner{Caller: "alice", Scope: "acme"}

func newTask() Task {
	return Task{Owner: alice, Tool: approval.ToolConnectorExecuteJob, Handle: approval.Handle{Kind: approval.KindJob, JobID: "job_1"},
		PollIntervalMS: 2000, ApprovalExpiresAtUnixMS: time.Now().Add(15 * time.Minute).UnixMilli()}
}

func TestCreateIsDurableAndBoundToItsOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := open(t, path)
	s := NewStore(db, 0)
	id, created, err := s.Create(newTask())
	require.NoError(t, err)
	assert.Regexp(t, `^task_[A-Za-z0-9_-]{43}$`, id)
	assert.Equal(t, StatusWorking, created.Status)
	assert.Equal(t, Ref(id), created.Ref)
	require.NoError(t, db.Close())

	// Reopened: the task is there, under the digest of its id only.
	db = open(t, path)
	defer db.Close()
	s = NewStore(db, 0)
	got, err := s.Get(id, alice)
	require.NoError(t, err)
	assert.Equal(t, "job_1", got.Handle.JobID)
	require.NoError(t, db.View(func(tx store.Tx) error {
		return tx.Bucket(store.BucketTasks).ForEach(func(k, v []byte) error {
			assert.NotContains(t, string(k)+string(v), id, "the id itself is never stored")
			return nil
		})
	}))

	for name, o := range map[string]Owner{"other caller": {Caller: "bob", Scope: "acme"}, "other tenant": {Caller: "alice", Scope: "other"}} {
		_, err := s.Get(id, o)
		assert.ErrorIs(t, err, ErrNotFound, name)
	}
	for _, bad := range []string{"", "task_nope", id + "x", string(make([]byte, MaxIDLength+1))} {
		_, err := s.Get(bad, alice)
		assert.ErrorIs(t, err, ErrNotFound)
	}
}

func TestIDsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := NewID()
		require.False(t, seen[id])
		seen[id] = true
	}
}

func TestFinishedTasksNeverChange(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	s := NewStore(db, time.Hour)
	_, tk, err := s.Create(newTask())
	require.NoError(t, err)
	done, err := s.Update(tk.Ref, func(t *Task) error { t.Status = StatusCompleted; return nil })
	require.NoError(t, err)
	require.NotNil(t, done.TerminalAt)
	_, err = s.Update(tk.Ref, func(t *Task) error { t.Status = StatusCancelled; return nil })
	assert.ErrorIs(t, err, ErrTerminal)
	stop := errors.New("stop")
	_, err = s.Update(Ref("task_missing"), func(*Task) error { return stop })
	assert.ErrorIs(t, err, ErrNotFound)
	got, ok, err := s.Load(tk.Ref)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, StatusCompleted, got.Status)
	working, err := s.Working()
	require.NoError(t, err)
	assert.Empty(t, working)
}

func TestTTLAndPrune(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(db, time.Hour)
	s.SetClock(func() time.Time { return now })
	tk := newTask()
	tk.ApprovalExpiresAtUnixMS = now.Add(15 * time.Minute).UnixMilli()
	_, waiting, err := s.Create(tk)
	require.NoError(t, err)
	assert.Equal(t, int64(15*time.Minute/time.Millisecond), s.TTLMS(waiting), "until the approval expires")

	noExpiry := newTask()
	noExpiry.ApprovalExpiresAtUnixMS = 0
	_, open, err := s.Create(noExpiry)
	require.NoError(t, err)
	assert.Equal(t, int64(time.Hour/time.Millisecond), s.TTLMS(open), "the retention when Vault gave no expiry")

	now = now.Add(10 * time.Minute)
	done, err := s.Update(waiting.Ref, func(t *Task) error { t.Status = StatusCompleted; return nil })
	require.NoError(t, err)
	assert.Equal(t, int64(70*time.Minute/time.Millisecond), s.TTLMS(done), "then as long as the result is kept")

	n, err := s.Prune()
	require.NoError(t, err)
	assert.Zero(t, n)
	now = now.Add(61 * time.Minute)
	n, err = s.Prune()
	require.NoError(t, err)
	assert.Equal(t, 2, n, "finished past retention, and waiting past expiry plus retention")
	_, ok, err := s.Load(done.Ref)
	require.NoError(t, err)
	assert.False(t, ok)
}

package approval

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	return db
}

func TestHandleStoreSurvivesReopenAndTracksState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := openDB(t, path)
	now := time.Unix(1_800_000_000, 0)
	s := NewStore(db, time.Hour)
	s.SetClock(func() time.Time { return now })

	h1 := &Handoff{Handle: Handle{Kind: KindJob, JobID: "job_1", ChallengeID: "ach_1"}, ExpiresAtUnixMS: now.Add(time.Hour).UnixMilli(), RemoteAttestationURL: "https://a/x"}
	_, err := s.Save("tenant-a", h1, "vaultclaw_connector_execute_job")
	require.NoError(t, err)
	now = now.Add(time.Second)
	_, err = s.Save("tenant-a", &Handoff{Handle: Handle{Kind: KindPlanRun, RunID: "run_1", JobID: "job_9"}}, "vaultclaw_plan_execute")
	require.NoError(t, err)
	_, err = s.Save("tenant-b", &Handoff{Handle: Handle{Kind: KindJob, JobID: "job_b"}}, "x")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	db = openDB(t, path)
	defer db.Close()
	s = NewStore(db, time.Hour)
	s.SetClock(func() time.Time { return now })
	list, err := s.List("tenant-a", nil, 0)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "run_1", list[0].Handle.RunID, "newest first")
	assert.Equal(t, "job_1", list[1].Handle.JobID)
	assert.Equal(t, StatePendingApproval, list[1].State)
	assert.Equal(t, "https://a/x", list[1].RemoteAttestationURL)
	assert.Equal(t, "vaultclaw_connector_execute_job", list[1].Source)

	// Scopes are isolated.
	other, err := s.List("tenant-b", nil, 0)
	require.NoError(t, err)
	require.Len(t, other, 1)
	none, err := s.List("tenant-c", nil, 0)
	require.NoError(t, err)
	assert.Empty(t, none)

	// A wait result updates the record; terminal records get filtered by state.
	now = now.Add(time.Minute)
	rec, err := s.Observe("tenant-a", WaitResult{Handle: Handle{Kind: KindJob, JobID: "job_1", PendingID: "apj_1"}, State: "DENIED", Outcome: OutcomeDeny})
	require.NoError(t, err)
	assert.True(t, rec.Terminal)
	assert.Equal(t, StateDenied, rec.State)
	assert.Equal(t, "ach_1", rec.Handle.ChallengeID, "known ids are kept")
	assert.Equal(t, "apj_1", rec.Handle.PendingID)
	denied, err := s.List("tenant-a", []string{StateDenied}, 10)
	require.NoError(t, err)
	require.Len(t, denied, 1)
	assert.Equal(t, "job_1", denied[0].Handle.JobID)
	limited, err := s.List("tenant-a", nil, 1)
	require.NoError(t, err)
	assert.Len(t, limited, 1)

	// A non-terminal observation keeps the handle pending.
	rec, err = s.Observe("tenant-a", WaitResult{Handle: Handle{Kind: KindPlanRun, RunID: "run_1"}, State: "PENDING_APPROVAL", Outcome: OutcomePending})
	require.NoError(t, err)
	assert.Equal(t, StatePendingApproval, rec.State)
	assert.False(t, rec.Terminal)
	rec, err = s.Observe("tenant-a", WaitResult{Handle: Handle{Kind: KindPlanRun, RunID: "run_1"}, State: "RUNNING", Outcome: OutcomePending})
	require.NoError(t, err)
	assert.Equal(t, StatePendingApproval, rec.State)
	rec, err = s.Observe("tenant-a", WaitResult{Handle: Handle{Kind: KindPlanRun, RunID: "run_1"}, State: "EXPIRED", Outcome: OutcomeDeny, Expired: true})
	require.NoError(t, err)
	assert.Equal(t, StateExpired, rec.State)
	assert.True(t, rec.Expired)

	// An unknown handle observed by a wait is created.
	rec, err = s.Observe("tenant-a", WaitResult{Handle: Handle{Kind: KindJob, JobID: "job_new"}, State: "RUNNING", Outcome: OutcomeUnknown})
	require.NoError(t, err)
	assert.Equal(t, StateRunning, rec.State)
	got, ok, err := s.Get("tenant-a", Handle{Kind: KindJob, JobID: "job_new"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "vaultclaw_approval_wait", got.Source)
}

func TestHandleStorePrunesTerminalAfterRetention(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	now := time.Unix(1_800_000_000, 0)
	s := NewStore(db, time.Hour)
	s.SetClock(func() time.Time { return now })
	_, err := s.Save("sc", &Handoff{Handle: Handle{Kind: KindJob, JobID: "done"}}, "x")
	require.NoError(t, err)
	_, err = s.Save("sc", &Handoff{Handle: Handle{Kind: KindJob, JobID: "live"}, ExpiresAtUnixMS: now.Add(10 * time.Hour).UnixMilli()}, "x")
	require.NoError(t, err)
	_, err = s.Observe("sc", WaitResult{Handle: Handle{Kind: KindJob, JobID: "done"}, State: "SUCCEEDED", Outcome: OutcomeAllow})
	require.NoError(t, err)

	now = now.Add(30 * time.Minute)
	list, _ := s.List("sc", nil, 0)
	assert.Len(t, list, 2, "within retention")

	now = now.Add(2 * time.Hour)
	list, _ = s.List("sc", nil, 0)
	require.Len(t, list, 1, "terminal handle hidden after retention")
	assert.Equal(t, "live", list[0].Handle.JobID)
	n, err := s.Prune()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, ok, _ := s.Get("sc", Handle{Kind: KindJob, JobID: "done"})
	assert.False(t, ok)

	// A pending handle goes retention after its Vault expiry.
	now = now.Add(20 * time.Hour)
	n, err = s.Prune()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

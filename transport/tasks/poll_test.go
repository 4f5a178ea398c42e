package tasks_test

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPollDelayGrowsWithAge(t *testing.T) {
	t.Parallel()
	const base = 2 * time.Second
	for age, want := range map[time.Duration]time.Duration{
		0:                base,
		40 * time.Second: base,
		time.Minute:      3 * time.Second,
		5 * time.Minute:  15 * time.Second,
		10 * time.Minute: tasks.MaxPollDelay,
		24 * time.Hour:   tasks.MaxPollDelay,
	} {
		assert.Equal(t, want, tasks.PollDelay(base, age), "age %s", age)
	}
	assert.Equal(t, time.Minute, tasks.PollDelay(time.Minute, time.Hour), "an interval above the cap stays as set")
}

// noSessions resolves every scope to the one (in-memory) Vault.
type noSessions struct{}

func (noSessions) Resolve(context.Context, string) (session.Session, error) {
	return session.Session{BaseURL: "http://sim", Token: "tok"}, nil
}

// simChecker checks through a real approval.Waiter on a simulator, with
// the shared polls, and notes when each check ran.
type simChecker struct {
	w  approval.Waiter
	mu sync.Mutex
	at []time.Time
}

func (c *simChecker) Check(ctx context.Context, _ string, _ session.Session, h approval.Handle, cur *approval.Cursor) (approval.WaitResult, error) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	return c.w.Check(ctx, h, cur)
}

func (c *simChecker) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}

// pollRig is a Tasks extension following tasks against an in-memory
// simulator, built inside a synctest bubble so that its pollers run on
// fake time.
type pollRig struct {
	sim     *vaultsim.Sim
	api     approvaltest.SimAPI
	polls   *approval.Polls
	checker *simChecker
	store   *task.Store
	x       *tasks.Extension
}

func newPollRig(t *testing.T) *pollRig {
	t.Helper()
	sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true, ApprovalTTL: 24 * time.Hour})
	r := &pollRig{sim: sim, api: approvaltest.SimAPI{Sim: sim, Token: "tok"}, polls: approval.NewPolls()}
	r.checker = &simChecker{w: approval.Waiter{API: r.api, Polls: r.polls, Identity: "tok"}}
	db, err := store.Open(filepath.Join(t.TempDir(), "accords.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	keys, err := keyring.New(make([]byte, 32))
	require.NoError(t, err)
	r.store = task.NewStore(db, 0)
	r.x, err = tasks.New(tasks.Options{Store: r.store, Keys: keys, Sessions: noSessions{}, Checker: r.checker,
		Finish: func(context.Context, string, approval.Continuation, approval.WaitResult) envelope.Envelope {
			return envelope.Success(map[string]any{}, envelope.Meta{})
		}})
	require.NoError(t, err)
	return r
}

// follow stores a working task on h and starts following it.
func (r *pollRig) follow(t *testing.T, h approval.Handle) string {
	t.Helper()
	_, tk, err := r.store.Create(task.Task{Owner: task.Owner{Caller: "local", Scope: "default"}, Tool: approval.ToolConnectorExecuteJob,
		Handle: h, Continuation: approval.Continuation{Tool: approval.ToolConnectorExecuteJob}, PollIntervalMS: tasks.DefaultPollInterval.Milliseconds()})
	require.NoError(t, err)
	require.NoError(t, r.x.Start())
	return tk.Ref
}

func (r *pollRig) jobGets(h approval.Handle) int {
	return len(r.sim.RequestsTo(http.MethodGet, "/v0/jobs/"+h.JobID))
}

// TestTaskPollsBackOffWithAge follows one task for the fifteen minutes of
// a Gmail approval nobody decides: it polls every 2 s while young, then
// ever less often, never more than 30 s apart, about 80 times in all
// where a fixed 2 s would have been 450; and still finishes once the
// person decides.
func TestTaskPollsBackOffWithAge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newPollRig(t)
		h, err := r.api.PendingJob(t.Context())
		require.NoError(t, err)
		ref := r.follow(t, h)
		time.Sleep(15 * time.Minute)
		synctest.Wait()

		at := r.checker.times()
		assert.Equal(t, len(at), r.jobGets(h), "each check is one Vault request")
		assert.Greater(t, len(at), 60)
		assert.Less(t, len(at), 100, "a fixed 2 s interval would be 450 polls")
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			if i < 20 {
				assert.Equal(t, tasks.DefaultPollInterval, gap, "young: every interval (poll %d)", i)
			}
			assert.LessOrEqual(t, gap, tasks.MaxPollDelay)
			assert.GreaterOrEqual(t, gap, at[i-1].Sub(at[max(i-2, 0)]), "gaps never shrink (poll %d)", i)
		}

		p := r.sim.PendingApprovals()
		require.Len(t, p, 1)
		require.NoError(t, r.sim.Approve(p[0].PendingID))
		time.Sleep(tasks.MaxPollDelay)
		synctest.Wait()
		done, ok, err := r.store.Load(ref)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, task.StatusCompleted, done.Status, "decided within one (longest) poll delay")
		assert.Zero(t, r.x.Following())
		r.x.Close()
	})
}

// TestTaskAndWaitsOnOneJobShareItsPolls: a task and three
// vaultclaw_approval_wait calls on the same job, all polling every 2 s,
// cost Vault one request per 2 s between them, and all see the decision.
func TestTaskAndWaitsOnOneJobShareItsPolls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newPollRig(t)
		h, err := r.api.PendingJob(t.Context())
		require.NoError(t, err)
		start := time.Now()
		ref := r.follow(t, h)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				time.Sleep(time.Duration(i)*500*time.Millisecond + 100*time.Millisecond)
				w := approval.Waiter{API: r.api, Polls: r.polls, Identity: "tok"}
				res, err := w.Wait(context.Background(), h, approval.WaitOptions{TimeoutMS: 3600000, PollIntervalMS: 2000})
				assert.NoError(t, err)
				assert.Equal(t, approval.OutcomeAllow, res.Outcome)
			})
		}
		time.Sleep(30 * time.Second) // the task's first 30 s: it polls every 2 s too
		synctest.Wait()
		polled := r.jobGets(h)
		assert.LessOrEqual(t, polled, int(time.Since(start)/(2*time.Second))+1, "four waiters, one poll per interval")
		assert.Greater(t, len(r.checker.times()), 10, "the task kept checking, from the shared polls")

		p := r.sim.PendingApprovals()
		require.Len(t, p, 1)
		require.NoError(t, r.sim.Approve(p[0].PendingID))
		wg.Wait()
		time.Sleep(tasks.DefaultPollInterval)
		synctest.Wait()
		done, ok, err := r.store.Load(ref)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, task.StatusCompleted, done.Status)
		r.x.Close()
	})
}

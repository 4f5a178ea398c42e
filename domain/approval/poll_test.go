package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simAPI calls a simulator's handler in memory (no sockets, so it runs in
// a synctest bubble on fake time), as the vault client would over HTTP.
type simAPI struct {
	sim   *vaultsim.Sim
	token string
}

func (a simAPI) do(ctx context.Context, method, path string, body any) (Reply, error) {
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set("Authorization", "Bearer "+a.token)
	rec := httptest.NewRecorder()
	a.sim.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	return Reply{Status: rec.Code, Body: out}, nil
}

func (a simAPI) JobGet(ctx context.Context, id string) (Reply, error) {
	return a.do(ctx, http.MethodGet, "/v0/jobs/"+url.PathEscape(id), nil)
}

func (a simAPI) PlanRunGet(ctx context.Context, id string) (Reply, error) {
	return a.do(ctx, http.MethodGet, "/v0/connectors/plans/runs/"+url.PathEscape(id), nil)
}

func (a simAPI) PendingApprovals(ctx context.Context, q url.Values) (Reply, error) {
	return a.do(ctx, http.MethodGet, "/v0/connectors/approvals/pending?"+q.Encode(), nil)
}

// pendingGmailJob submits a Gmail send as a job, which the simulator holds
// for approval, and returns its handle.
func pendingGmailJob(t *testing.T, sim *vaultsim.Sim, api simAPI) Handle {
	t.Helper()
	r, err := api.do(t.Context(), http.MethodPost, "/v0/connectors/execute-job", map[string]any{
		"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1", "module_hash": sim.PolicyHash("google"),
		"request": map[string]any{"user_id": "me", "to": []any{"bob@example.com"}, "subject": "s", "text_plain": "t"},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	id, _ := obj(r.Body["job"])["job_id"].(string)
	require.NotEmpty(t, id)
	return Handle{Kind: KindJob, JobID: id}
}

func jobGets(sim *vaultsim.Sim, h Handle) int {
	return len(sim.RequestsTo(http.MethodGet, "/v0/jobs/"+h.JobID))
}

// TestSharedPollsOneRequestPerInterval is many waiters on one job: six
// vaultclaw_approval_wait calls and six task checks, all every 2 s and
// started at different moments, cost Vault one poll per interval between
// them (not one each), and every one of them still sees the decision.
func TestSharedPollsOneRequestPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true})
		api := simAPI{sim: sim, token: "tok"}
		h := pendingGmailJob(t, sim, api)
		polls := NewPolls()
		const interval, waiters = 2 * time.Second, 6
		start := time.Now()

		var wg sync.WaitGroup
		results := make(chan WaitResult, 2*waiters)
		for i := range waiters {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 300 * time.Millisecond)
				w := Waiter{API: api, Polls: polls, Identity: "tok"}
				res, err := w.Wait(context.Background(), h, WaitOptions{TimeoutMS: 600000, PollIntervalMS: int(interval.Milliseconds())})
				assert.NoError(t, err)
				results <- res
			})
			wg.Go(func() {
				// A task: one check per interval with its own cursor.
				time.Sleep(time.Duration(i)*300*time.Millisecond + 150*time.Millisecond)
				cur := &Cursor{MaxAge: interval}
				w := Waiter{API: api, Polls: polls, Identity: "tok"}
				for {
					res, err := w.Check(context.Background(), h, cur)
					assert.NoError(t, err)
					if err != nil || res.Done {
						results <- res
						return
					}
					time.Sleep(interval)
				}
			})
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		polled := jobGets(sim, h)
		// One request per interval, plus the first.
		assert.LessOrEqual(t, polled, int(time.Since(start)/interval)+1, "12 waiters polling every 2 s for a minute")
		assert.GreaterOrEqual(t, polled, int(time.Since(start)/interval)-1, "but every interval does poll")

		p := sim.PendingApprovals()
		require.Len(t, p, 1)
		require.NoError(t, sim.Approve(p[0].PendingID))
		wg.Wait()
		close(results)
		n := 0
		for res := range results {
			n++
			assert.True(t, res.Done)
			assert.Equal(t, "SUCCEEDED", res.State)
			assert.Equal(t, OutcomeAllow, res.Outcome)
		}
		assert.Equal(t, 2*waiters, n)
		assert.LessOrEqual(t, jobGets(sim, h)-polled, 1, "the decision reached all of them through one poll")
	})
}

// A waiter alone polls as it always did: once per interval and at the
// deadline, never served a state older than its own last poll.
func TestSharedPollsAloneIsAnOrdinaryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true})
		api := simAPI{sim: sim, token: "tok"}
		h := pendingGmailJob(t, sim, api)
		w := Waiter{API: api, Polls: NewPolls(), Identity: "tok"}
		res, err := w.Wait(context.Background(), h, WaitOptions{TimeoutMS: 1000, PollIntervalMS: 400})
		require.Error(t, err, "MCP_WAIT_TIMEOUT")
		assert.Equal(t, 4, res.Polls)
		assert.Equal(t, 4, jobGets(sim, h), "polls at 0, 400, 800 and 1000 ms, each reaching Vault")
	})
}

// Polls are shared only within one Vault identity: waiters with another
// token poll for themselves.
func TestSharedPollsNeverCrossIdentities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true})
		api := simAPI{sim: sim, token: "tok"}
		h := pendingGmailJob(t, sim, api)
		polls := NewPolls()
		a := Waiter{API: api, Polls: polls, Identity: "identity-a"}
		b := Waiter{API: api, Polls: polls, Identity: "identity-b"}
		_, err := a.Check(context.Background(), h, &Cursor{MaxAge: time.Minute})
		require.NoError(t, err)
		_, err = b.Check(context.Background(), h, &Cursor{MaxAge: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, 2, jobGets(sim, h))
		// The same identity takes the state a fresh poll brought.
		_, err = a.Check(context.Background(), h, &Cursor{MaxAge: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, 2, jobGets(sim, h))
	})
}

// Waiters that arrive while a poll is in flight join it; when every one of
// them leaves, the poll is cancelled and nothing is left behind (goleak in
// TestMain checks the goroutine).
func TestSharedPollsJoinAndAbandon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true})
		api := simAPI{sim: sim, token: "tok"}
		h := pendingGmailJob(t, sim, api)
		sim.InjectFault(vaultsim.Fault{Method: http.MethodGet, Path: "/v0/jobs/" + h.JobID, Latency: 10 * time.Second})
		polls := NewPolls()
		w := Waiter{API: api, Polls: polls, Identity: "tok"}

		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				res, err := w.Check(context.Background(), h, &Cursor{})
				assert.NoError(t, err)
				assert.Equal(t, "PENDING", res.State)
			})
		}
		wg.Wait()
		assert.Equal(t, 1, jobGets(sim, h), "twenty waiters, one request")

		// A slow poll every waiter gives up on is cancelled.
		sim.InjectFault(vaultsim.Fault{Method: http.MethodGet, Path: "/v0/jobs/" + h.JobID, Latency: time.Hour})
		for range 3 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := w.Check(ctx, h, &Cursor{})
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			})
		}
		wg.Wait()
		synctest.Wait()
	})
}

// Each waiter gets its own copy of a shared reply.
func TestSharedPollsCopyTheReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := vaultsim.New(vaultsim.Options{AgentToken: "tok", NoSeed: true})
		api := simAPI{sim: sim, token: "tok"}
		h := pendingGmailJob(t, sim, api)
		w := Waiter{API: api, Polls: NewPolls(), Identity: "tok"}
		first, err := w.Check(context.Background(), h, &Cursor{MaxAge: time.Minute})
		require.NoError(t, err)
		first.Job["status"] = "TAMPERED"
		second, err := w.Check(context.Background(), h, &Cursor{MaxAge: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, 1, jobGets(sim, h))
		assert.Equal(t, "PENDING", second.Job["status"])
	})
}

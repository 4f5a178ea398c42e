//go:build etcd

// The multi-replica suite (go test -tags=etcd ./test/scaleout/, run by
// .ci/extra): three accords-mcp processes serving HTTP on loopback, one
// etcd (the real server, /usr/bin/etcd, for the tests; the embedded one
// for the benchmarks, which read its request counters), round-robin
// clients.
package scaleout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// binary builds cmd/accords-mcp once (without -race: the replicas are
// the system under test, not the race detector's subject).
func binary(t testing.TB) string { return testbin.AccordsMCP(t) }

const simToken = "vc_tok_scaleout_tests_0123456789"

// unlimited lifts the default HTTP rate limits for the load tests.
const unlimited = "[defaults]\ncalls_per_minute = 0\n"

type fleet struct {
	t testing.TB
	// etcd is the server the replicas share; proc is the same server when
	// it is a real etcd process (tests), nil when embedded (benchmarks).
	etcd interface {
		Stop()
		Restart(testing.TB)
	}
	proc   *etcdtest.Process
	addr   string
	sim    *vaultsim.Sim
	env    []string
	dirs   []string
	reps   []*mcpproc.Server
	perRep int
	prefix string
	// header goes with every request of the client sessions.
	header http.Header
}

// startFleet runs n replicas, each with perRep client sessions, on one
// real etcd process, with policy as the policy file.
func startFleet(t *testing.T, n, perRep int, policy string, extra ...string) *fleet {
	t.Helper()
	p := etcdtest.StartProcess(t)
	f := &fleet{t: t, etcd: p, proc: p, addr: p.Endpoint}
	return f.run(n, perRep, policy, extra...)
}

// startFleetB is startFleet for benchmarks, without rate limits, on an
// embedded etcd.
func startFleetB(b *testing.B, n, perRep int) *fleet {
	b.Helper()
	s := etcdtest.Start(b)
	f := &fleet{t: b, etcd: s, addr: s.Endpoint}
	return f.run(n, perRep, unlimited)
}

func (f *fleet) run(n, perRep int, policy string, extra ...string) *fleet {
	t := f.t
	t.Helper()
	f.perRep, f.prefix = perRep, "/fleet/"
	f.sim = vaultsim.New(vaultsim.Options{AgentToken: simToken})
	hs := httptest.NewServer(f.sim)
	t.Cleanup(hs.Close)
	pol := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(pol, []byte(policy), 0o600))
	f.env = append([]string{
		"ACCORDS_MCP_STORE=etcd://" + f.addr,
		"ACCORDS_MCP_ETCD_PREFIX=" + f.prefix,
		"ACCORDS_MCP_ETCD_TIMEOUT=1s",
		"ACCORDS_MCP_AUDIT_KEY=" + strings.Repeat("6b", 32),
		"ACCORDS_MCP_POLICY_FILE=" + pol,
		"VC_AGENT_TOKEN=" + simToken, "VC_BASE_URL=" + hs.URL,
	}, extra...)
	for range n {
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o700))
		f.dirs = append(f.dirs, dir)
		f.reps = append(f.reps, nil)
	}
	for i := range n {
		f.start(i)
	}
	t.Cleanup(func() {
		for _, r := range f.reps {
			if r != nil {
				r.Close()
			}
		}
	})
	return f
}

func (f *fleet) start(i int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := mcpproc.Start(ctx, mcpproc.Options{Bin: binary(f.t), DBPath: filepath.Join(f.dirs[i], "a.db"),
		Transport: mcpproc.HTTP, Clients: f.perRep, Env: f.env, Header: f.header})
	require.NoError(f.t, err)
	f.reps[i] = srv
}

// session i of replica r.
func (f *fleet) session(r, i int) *mcp.ClientSession {
	return f.reps[r].Sessions[i%len(f.reps[r].Sessions)]
}

// store opens the fleet's etcd store in the test process.
func (f *fleet) store() *store.DB {
	return openEtcdAt(f.t, f.addr, f.prefix)
}

func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (mcptest.Envelope, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return mcptest.Envelope{}, "", err
	}
	id, _ := res.Meta["accords/call_id"].(string)
	env, err := mcptest.Decode(res)
	return env, id, err
}

func searchFinds(ctx context.Context, cs *mcp.ClientSession, query, id string) bool {
	env, _, err := call(ctx, cs, workload.ToolSearch, map[string]any{"query": query, "limit": 50})
	if err != nil || !env.OK {
		return false
	}
	items, _ := env.Object()["items"].([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); m["cookbook_id"] == id {
			return true
		}
	}
	return false
}

// A cookbook upserted on replica 1 is found by a search on replica 3
// within a second (the watch, not a restart or a poll of the store).
func TestReplicasUpsertOnOneFoundOnAnother(t *testing.T) {
	f := startFleet(t, 3, 1, unlimited)
	ctx := context.Background()
	for i := range 5 {
		b, info := workload.Corpus{Seed: 11}.Bundle(i, "1.0.0")
		id := b["cookbook_id"].(string)
		env, _, err := call(ctx, f.session(0, 0), workload.ToolUpsert, map[string]any{"bundle": b})
		require.NoError(t, err)
		require.True(t, env.OK, "%v", env.Raw)
		acked := time.Now()
		for !searchFinds(ctx, f.session(2, 0), info.Words[0]+" "+info.Words[1], id) {
			require.Less(t, time.Since(acked), time.Second, "replica 3 did not find %s within 1s of the upsert on replica 1", id)
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("upsert %d found on replica 3 after %v", i, time.Since(acked).Round(time.Millisecond))
	}
}

// An approval handed off on replica 1 is waited on and completed on
// replica 2, and replica 3 lists the handle as finished.
func TestReplicasApprovalHandedOffAndCompletedElsewhere(t *testing.T) {
	f := startFleet(t, 3, 1, unlimited)
	ctx := context.Background()
	env, _, err := call(ctx, f.session(0, 0), "vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{
		"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{"a@example.com"}, "subject": "hi", "text_plain": "x"},
	}})
	require.NoError(t, err)
	require.Equal(t, "MCP_APPROVAL_REQUIRED", env.Code(), "%v", env.Raw)
	a, _ := env.Details()["approval"].(map[string]any)
	na, _ := a["next_action"].(map[string]any)
	args, _ := na["arguments"].(map[string]any)
	h, _ := args["handle"].(map[string]any)
	require.NotNil(t, h)
	pid, _ := h["pending_id"].(string)
	require.NotEmpty(t, pid)

	list := func(r int) []any {
		env, _, err := call(ctx, f.session(r, 0), "vaultclaw_approval_handles_list", map[string]any{})
		require.NoError(t, err)
		require.True(t, env.OK, "%v", env.Raw)
		items, _ := env.Object()["items"].([]any)
		if items == nil {
			items, _ = env.Object()["handles"].([]any)
		}
		return items
	}
	require.NotEmpty(t, list(2), "the handle stored by replica 1 is listed by replica 3")

	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = f.sim.Approve(pid)
	}()
	wenv, _, err := call(ctx, f.session(1, 0), "vaultclaw_approval_wait", map[string]any{"handle": h, "timeout_ms": 20000, "poll_interval_ms": 100})
	require.NoError(t, err)
	require.True(t, wenv.OK, "the wait on replica 2 completes the approval: %v", wenv.Raw)
	require.Eventually(t, func() bool {
		for _, it := range list(2) {
			m, _ := it.(map[string]any)
			if m["terminal"] == true && m["state"] == "SUCCEEDED" {
				return true
			}
		}
		return false
	}, 5*time.Second, 50*time.Millisecond, "replica 3 sees the handle finished: %v", list(2))
}

func seconds(def int) time.Duration {
	if v, err := strconv.Atoi(os.Getenv("ACCORDS_SCALEOUT_SECONDS")); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return time.Duration(def) * time.Second
}

// 3 replicas × 8 concurrent clients for 30 s (ACCORDS_SCALEOUT_SECONDS):
// one audit log results, it verifies, and it holds every call exactly
// once.
func TestReplicasConcurrentClientsWriteOneAuditLog(t *testing.T) {
	const n, perRep = 3, 8
	f := startFleet(t, n, perRep, unlimited)
	ctx := context.Background()
	corpus := workload.Corpus{Seed: 5}
	var mu sync.Mutex
	ids := map[string]int{}
	var calls, failures atomic.Int64
	deadline := time.Now().Add(seconds(30))
	var wg sync.WaitGroup
	for r := range n {
		for c := range perRep {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(r), uint64(c)))
				own := fmt.Sprintf("fleet.r%d.c%d", r, c)
				for v := 0; time.Now().Before(deadline); v++ {
					var tool string
					var args map[string]any
					switch rng.IntN(4) {
					case 0:
						b, _ := corpus.Bundle(r*100+c, fmt.Sprintf("1.%d.0", v))
						b["cookbook_id"] = own
						tool, args = workload.ToolUpsert, map[string]any{"bundle": b}
					case 1:
						tool, args = workload.ToolList, map[string]any{}
					case 2:
						tool, args = workload.ToolStatus, map[string]any{}
					default:
						tool, args = workload.ToolSearch, corpus.SearchQuery(rng, 200)
					}
					env, id, err := call(ctx, f.session(r, c), tool, args)
					calls.Add(1)
					if err != nil || !env.OK || id == "" {
						failures.Add(1)
						t.Errorf("%s on replica %d: %v %v", tool, r, err, env.Raw)
						return
					}
					mu.Lock()
					ids[id]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for i, r := range f.reps {
		require.NoError(t, r.Close())
		f.reps[i] = nil
	}
	t.Logf("%d calls by %d clients on %d replicas, %.0f calls/s", calls.Load(), n*perRep, n, float64(calls.Load())/seconds(30).Seconds())
	require.Zero(t, failures.Load())

	db := f.store()
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: fleetKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	rs, err := audit.List(db, audit.Filter{Limit: 10_000_000})
	require.NoError(t, err)
	logged := map[string]int{}
	for _, r := range rs {
		logged[r.CallID]++
	}
	for id, n := range ids {
		require.Equal(t, n, logged[id], "call %s is in the log exactly once", id)
	}
	require.Len(t, logged, len(ids), "the log holds no call the clients did not make")
}

func fleetKey(t testing.TB) *audit.Key {
	k, err := audit.LoadKey(audit.KeySpec{Env: strings.Repeat("6b", 32)}, false)
	require.NoError(t, err)
	return k
}

// SIGKILL of a replica while its clients write loses nothing that was
// acknowledged: every upsert that answered ok is readable on another
// replica with the content it was given, and its receipt is in the log,
// which verifies.
func TestReplicaSIGKILLLosesNothingAcknowledged(t *testing.T) {
	f := startFleet(t, 3, 4, unlimited)
	ctx := context.Background()
	corpus := workload.Corpus{Seed: 13}
	type ack struct{ id, version, hash, callID string }
	var mu sync.Mutex
	var acked []ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for v := 0; ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				b, _ := corpus.Bundle(c, fmt.Sprintf("2.%d.0", v))
				b["cookbook_id"] = fmt.Sprintf("kill.c%d", c)
				env, id, err := call(ctx, f.session(0, c), workload.ToolUpsert, map[string]any{"bundle": b})
				if err != nil || !env.OK {
					return // the replica is gone
				}
				cb, _ := env.Object()["content_hash"].(string)
				mu.Lock()
				acked = append(acked, ack{b["cookbook_id"].(string), b["version"].(string), cb, id})
				mu.Unlock()
			}
		})
	}
	time.Sleep(3 * time.Second)
	require.NoError(t, f.reps[0].Cmd.Process.Kill())
	close(stop)
	wg.Wait()
	f.reps[0].Kill()
	f.reps[0] = nil
	require.NotEmpty(t, acked)
	t.Logf("%d upserts acknowledged before the SIGKILL", len(acked))
	for _, a := range acked {
		env, _, err := call(ctx, f.session(1, 0), workload.ToolGet, map[string]any{"cookbook_id": a.id, "version": a.version})
		require.NoError(t, err)
		require.True(t, env.OK, "acknowledged %s@%s lost: %v", a.id, a.version, env.Raw)
		stored, err := catalog.BundleFromValue(env.Object()["bundle"])
		require.NoError(t, err)
		_, got, err := catalog.Prepare(stored)
		require.NoError(t, err)
		require.Equal(t, a.hash, got, "%s@%s holds what was acknowledged", a.id, a.version)
	}
	db := f.store()
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: fleetKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	rs, err := audit.List(db, audit.Filter{Limit: 10_000_000})
	require.NoError(t, err)
	logged := map[string]int{}
	for _, r := range rs {
		logged[r.CallID]++
	}
	for _, a := range acked {
		require.Equal(t, 1, logged[a.callID], "the receipt of acknowledged call %s", a.callID)
	}
}

// Every replica survives an etcd restart: while etcd is down searches
// answer from the local index and writes refuse with a retryable
// envelope; once it is back, writes work on every replica and reach the
// others' indexes.
func TestReplicasSurviveEtcdRestart(t *testing.T) {
	f := startFleet(t, 3, 1, unlimited)
	ctx := context.Background()
	b, info := workload.Corpus{Seed: 17}.Bundle(1, "1.0.0")
	env, _, err := call(ctx, f.session(0, 0), workload.ToolUpsert, map[string]any{"bundle": b})
	require.NoError(t, err)
	require.True(t, env.OK)
	query := info.Words[0] + " " + info.Words[1]
	id := b["cookbook_id"].(string)
	require.Eventually(t, func() bool { return searchFinds(ctx, f.session(2, 0), query, id) }, 5*time.Second, 20*time.Millisecond)

	f.etcd.Stop()
	for r := range 3 {
		require.True(t, searchFinds(ctx, f.session(r, 0), query, id), "replica %d searches with etcd down", r+1)
		b2, _ := workload.Corpus{Seed: 17}.Bundle(2, fmt.Sprintf("1.%d.0", r))
		env, _, err := call(ctx, f.session(r, 0), workload.ToolUpsert, map[string]any{"bundle": b2})
		require.NoError(t, err)
		require.False(t, env.OK)
		require.NotNil(t, env.Error)
		require.True(t, env.Error.Retryable, "replica %d refuses a write retryably: %v", r+1, env.Raw)
	}

	f.etcd.Restart(t)
	for r := range 3 {
		b3, info3 := workload.Corpus{Seed: 19}.Bundle(r, "1.0.0")
		require.Eventually(t, func() bool {
			env, _, err := call(ctx, f.session(r, 0), workload.ToolUpsert, map[string]any{"bundle": b3})
			return err == nil && env.OK
		}, 30*time.Second, 250*time.Millisecond, "replica %d writes again", r+1)
		other := (r + 1) % 3
		require.Eventually(t, func() bool {
			return searchFinds(ctx, f.session(other, 0), info3.Words[0]+" "+info3.Words[1], b3["cookbook_id"].(string))
		}, 10*time.Second, 20*time.Millisecond, "replica %d's write reaches replica %d", r+1, other+1)
	}
}

// The fleet holds a caller's rate limit within the documented bound
// (docs/scale-out.md): with calls spread round robin over 3 replicas,
// admitted calls over a window T stay within rate×T + burst + replicas −
// 1, and reach at least the limit's share of it.
func TestFleetRateLimitHoldsWithinBound(t *testing.T) {
	f := startFleet(t, 3, 1, ratePolicy)
	ctx := context.Background()
	// Every replica must count the others before the window starts.
	require.Eventually(t, func() bool {
		db := f.store()
		st, err := db.EtcdStatus(ctx)
		return err == nil && st.Replicas == 3
	}, 15*time.Second, 100*time.Millisecond)
	admitted, refused, bound := rateWindow(t, f)
	require.Positive(t, refused, "the limit was reached")
	require.LessOrEqual(t, float64(admitted), bound, "the fleet admits no more than its bound")
	require.GreaterOrEqual(t, float64(admitted), ratePerMinute/60*rateWindowFor.Seconds(), "nor fewer than the rate over the window")
}

// The limit of the rate-limit tests: 120 calls a minute, burst 6.
const (
	ratePerMinute = 120.0
	rateBurst     = 6
	rateWindowFor = 4 * time.Second
)

var ratePolicy = fmt.Sprintf("[defaults]\ncalls_per_minute = %g\nburst = %d\n", ratePerMinute, rateBurst)

// statusOnlyPolicy limits only the tool rateWindow calls (tasks/get and
// the calls that hand tasks off stay unlimited).
var statusOnlyPolicy = fmt.Sprintf("[defaults]\ncalls_per_minute = 0\n[defaults.tools.%s]\ncalls_per_minute = %g\nburst = %d\n",
	workload.ToolStatus, ratePerMinute, rateBurst)

// rateWindow calls session status round robin over the fleet's replicas
// for rateWindowFor, once the buckets have refilled, and returns the calls
// admitted and refused and the documented bound of the admitted ones.
func rateWindow(t *testing.T, f *fleet) (admitted, refused int, bound float64) {
	t.Helper()
	ctx := context.Background()
	n := len(f.reps)
	// Each replica's bucket holds a share of the burst, refilled at its
	// share of the rate: wait until earlier calls no longer count.
	time.Sleep(time.Duration(float64(rateBurst) / (ratePerMinute / 60) * float64(time.Second)))
	start := time.Now()
	for i := 0; time.Since(start) < rateWindowFor; i++ {
		env, _, err := call(ctx, f.session(i%n, 0), workload.ToolStatus, map[string]any{})
		require.NoError(t, err)
		switch {
		case env.OK:
			admitted++
		case env.Code() == "MCP_RATE_LIMITED":
			refused++
		default:
			t.Fatalf("unexpected answer: %v", env.Raw)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	bound = ratePerMinute/60*elapsed.Seconds() + rateBurst + float64(n) - 1
	t.Logf("admitted %d, refused %d in %v; bound %.1f", admitted, refused, elapsed.Round(time.Millisecond), bound)
	return admitted, refused, bound
}

// latencies runs tool with args from fn sequentially n times on cs and
// returns the sorted durations.
func latencies(t testing.TB, cs *mcp.ClientSession, n int, tool string, fn func(i int) map[string]any) []time.Duration {
	ctx := context.Background()
	out := make([]time.Duration, 0, n)
	for i := range n {
		args := fn(i)
		t0 := time.Now()
		env, _, err := call(ctx, cs, tool, args)
		d := time.Since(t0)
		require.NoError(t, err)
		require.True(t, env.OK, "%s: %v", tool, env.Raw)
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func p50(ds []time.Duration) float64 { return float64(ds[len(ds)/2].Microseconds()) / 1000 }

// A task created on replica 1 (a Tasks-extension client's handoff) is
// completed although replica 1 is killed before the approval: another
// replica takes the orphaned task over, and the client reads the result
// from replica 2.
func TestReplicasTaskCreatedOnOneCompletedAfterItDies(t *testing.T) {
	f := startFleet(t, 3, 1, unlimited, "ACCORDS_MCP_TASK_POLL_INTERVAL=250ms")
	c1 := approvaltest.ConnectHTTP(t, f.reps[0].Endpoint, approvaltest.NewClient(true, nil, nil), "", nil)
	res := c1.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	require.Equal(t, "task", res["resultType"], "%v", res)
	id := approvaltest.Str(res, "taskId")
	require.NotEmpty(t, id)

	c2 := approvaltest.ConnectHTTP(t, f.reps[1].Endpoint, approvaltest.NewClient(true, nil, nil), "", nil)
	got, err := c2.GetTask(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "working", got.Status, "replica 2 reads the task replica 1 created")

	f.reps[0].Kill()
	f.reps[0] = nil
	var pending string
	for _, p := range f.sim.PendingApprovals() {
		if p.State == vaultsim.StateWaiting {
			pending = p.PendingID
		}
	}
	require.NotEmpty(t, pending)
	require.NoError(t, f.sim.Approve(pending))
	done := c2.AwaitTask(t, id)
	require.Equal(t, "completed", done.Status, "another replica finished the task of the dead one")
}

// TestMain removes the built command after the tests.
func TestMain(m *testing.M) { testbin.Main(m) }

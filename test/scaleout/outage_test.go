//go:build etcd

package scaleout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// outageFor is how long the attacks keep etcd from answering: longer than
// the membership lease, so every replica's lease expires.
const outageFor = store.FleetTTL + 3*time.Second

// healthAnswer is one /healthz answer and how long it took.
type healthAnswer struct {
	Status   string   `json:"status"`
	Degraded []string `json:"degraded"`
	Store    struct {
		Reachable  bool `json:"reachable"`
		Registered bool `json:"registered"`
		Replicas   int  `json:"replicas"`
	} `json:"store"`
	took time.Duration
}

func healthOf(t testing.TB, rep *mcpproc.Server) healthAnswer {
	t.Helper()
	url := strings.TrimSuffix(rep.Endpoint, "/v1/mcp") + "/healthz"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var h healthAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	h.took = time.Since(t0)
	require.Equal(t, http.StatusOK, resp.StatusCode, "an etcd replica stays in the balancer: %+v", h)
	return h
}

func mentions(list []string, word string) bool {
	for _, s := range list {
		if strings.Contains(s, word) {
			return true
		}
	}
	return false
}

// duringOutage samples every replica's /healthz until the outage has
// lasted outageFor: each answer comes within a second (a hang guard for a
// 1–5 s load-balancer probe, not a benchmark), and every replica comes to
// say degraded, first for the store it cannot reach, then for the
// membership it lost.
func duringOutage(t *testing.T, f *fleet, began time.Time) {
	t.Helper()
	unreachable := make([]bool, len(f.reps))
	lapsed := make([]bool, len(f.reps))
	for time.Since(began) < outageFor {
		for r, rep := range f.reps {
			h := healthOf(t, rep)
			require.Less(t, h.took, time.Second, "replica %d's /healthz answers from cached state while etcd does not answer", r+1)
			if h.Status == "degraded" && !h.Store.Reachable && mentions(h.Degraded, "store unavailable") {
				unreachable[r] = true
			}
			if h.Status == "degraded" && !h.Store.Registered && mentions(h.Degraded, "membership") {
				lapsed[r] = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for r := range f.reps {
		require.True(t, unreachable[r], "replica %d said degraded (store unavailable) during the outage", r+1)
		require.True(t, lapsed[r], "replica %d said degraded (membership lapsed) once its lease expired", r+1)
	}
}

// memberLeases are the leases the replicas' membership keys are on.
func memberLeases(t testing.TB, f *fleet) []clientv3.LeaseID {
	t.Helper()
	resp, err := f.store().Etcd().Client().Get(context.Background(), f.prefix+"members/", clientv3.WithPrefix())
	require.NoError(t, err)
	var out []clientv3.LeaseID
	for _, kv := range resp.Kvs {
		out = append(out, clientv3.LeaseID(kv.Lease))
	}
	require.Len(t, out, len(f.reps))
	return out
}

// recovers checks what an outage longer than the membership lease must
// not break once etcd answers again, and once the leases held before it
// are gone (after a restart etcd keeps them alive for one more TTL, which
// no replica renews): every replica re-registers (each
// /healthz counts all of them and is no longer degraded, and its log says
// it lost and regained its membership), a task created before the outage
// and one created after it both finish once Vault decides, the fleet's
// rate limit is shared out among all replicas again, and a restore is
// refused while they serve.
func recovers(t *testing.T, f *fleet, before string, c1 *approvaltest.Client, old []clientv3.LeaseID) {
	t.Helper()
	n := len(f.reps)
	cli := f.store().Etcd().Client()
	require.Eventually(t, func() bool {
		for _, id := range old {
			ttl, err := cli.TimeToLive(context.Background(), id)
			if err != nil || ttl.TTL > 0 {
				return false
			}
		}
		return true
	}, 3*store.FleetTTL, 100*time.Millisecond, "the leases from before the outage expire")
	require.Eventually(t, func() bool {
		for _, rep := range f.reps {
			h := healthOf(t, rep)
			if h.Store.Replicas != n || h.Status != "ok" || !h.Store.Registered || !h.Store.Reachable {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every replica re-registers and counts %d replicas", n)
	for r, rep := range f.reps {
		require.Contains(t, rep.Stderr(), "fleet membership lost", "replica %d logs the lapse", r+1)
		require.Contains(t, rep.Stderr(), "fleet membership restored", "replica %d logs its return", r+1)
	}

	after := c1.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("carol@example.com"))
	require.Equal(t, "task", after["resultType"], "%v", after)
	afterID := approvaltest.Str(after, "taskId")
	waiting := 0
	for _, p := range f.sim.PendingApprovals() {
		if p.State == vaultsim.StateWaiting {
			require.NoError(t, f.sim.Approve(p.PendingID))
			waiting++
		}
	}
	require.Equal(t, 2, waiting, "both tasks wait for Vault")
	c2 := approvaltest.ConnectHTTP(t, f.reps[1].Endpoint, approvaltest.NewClient(true, nil, nil), "", nil)
	for _, id := range []string{before, afterID} {
		done := c2.AwaitTask(t, id)
		require.Equal(t, "completed", done.Status, "task %s finishes after Vault decided", id)
	}

	admitted, refused, bound := rateWindow(t, f)
	require.Positive(t, refused, "the limit was reached")
	require.LessOrEqual(t, float64(admitted), bound, "the fleet admits no more than its bound after the outage")

	db := f.store()
	var buf bytes.Buffer
	_, err := backup.Snapshot(db, &buf)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "fleet.backup")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
	dir := t.TempDir()
	_, err = backup.RestoreEtcd(db, file, nil, backup.RestoreOptions{DBPath: filepath.Join(dir, "a.db")})
	require.ErrorContains(t, err, fmt.Sprintf("%d replica(s) are registered", n), "a restore is refused while the replicas serve")
}

// outageFleet starts three replicas with the rate limit of rateWindow on
// the tool it calls, and a task created on replica 1 that waits for
// Vault.
func outageFleet(t *testing.T) (*fleet, string, *approvaltest.Client, []clientv3.LeaseID) {
	f := startFleet(t, 3, 1, statusOnlyPolicy, "ACCORDS_MCP_TASK_POLL_INTERVAL=250ms")
	require.Eventually(t, func() bool {
		for _, rep := range f.reps {
			if healthOf(t, rep).Store.Replicas != 3 {
				return false
			}
		}
		return true
	}, 15*time.Second, 100*time.Millisecond)
	c1 := approvaltest.ConnectHTTP(t, f.reps[0].Endpoint, approvaltest.NewClient(true, nil, nil), "", nil)
	res := c1.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	require.Equal(t, "task", res["resultType"], "%v", res)
	return f, approvaltest.Str(res, "taskId"), c1, memberLeases(t, f)
}

// etcd stalls (SIGSTOP) for longer than the membership lease, then
// continues: every lease has expired. The replicas answer /healthz from
// cached state meanwhile and say degraded; once etcd answers they open
// new sessions, re-register and re-claim their tasks.
func TestFleetRecoversFromEtcdStall(t *testing.T) {
	f, before, c1, old := outageFleet(t)
	began := time.Now()
	f.proc.Pause(t)
	duringOutage(t, f, began)
	f.proc.Resume(t)
	recovers(t, f, before, c1, old)
}

// etcd is stopped for longer than the membership lease and started again
// on its data: the leases it restores are ones no replica keeps alive any
// more, and the replicas re-register as after a stall.
func TestFleetRecoversFromEtcdRestart(t *testing.T) {
	f, before, c1, old := outageFleet(t)
	began := time.Now()
	f.proc.Stop()
	duringOutage(t, f, began)
	f.proc.Start(t)
	recovers(t, f, before, c1, old)
}

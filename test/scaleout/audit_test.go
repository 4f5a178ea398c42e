package scaleout

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/stretchr/testify/require"
)

func auditKey(t testing.TB) *audit.Key {
	k, err := audit.NewKey(make([]byte, audit.KeySize), "test")
	require.NoError(t, err)
	return k
}

// Three logs on one etcd store (three replicas) append concurrently: one
// chain results, it verifies, and it holds every receipt exactly once,
// each caller that waited (AppendSync, write calls) told the number its
// receipt got; those that did not (Append, read calls) get none and find
// theirs by call id.
func TestSharedAuditLogIsOneChain(t *testing.T) {
	srv := etcdtest.Start(t)
	var logs []*audit.Log
	for range 3 {
		db := openEtcd(t, srv, "/audit/")
		l, err := audit.Open(db, audit.Options{Key: auditKey(t), Shared: true, Cadence: audit.Cadence{Every: 16}})
		require.NoError(t, err)
		logs = append(logs, l)
	}
	const perWriter = 15
	var mu sync.Mutex
	refs := map[string]uint64{}
	var wg sync.WaitGroup
	for i, l := range logs {
		for w := range 4 {
			wg.Go(func() {
				for n := range perWriter {
					id := fmt.Sprintf("r%d-w%d-%d", i, w, n)
					rec := audit.Receipt{CallID: id, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Tool: "t", Outcome: "ok"}
					appendFn := l.AppendSync
					if w%2 == 1 {
						appendFn = l.Append
					}
					ref, err := appendFn(rec)
					if err != nil {
						t.Error(err)
						return
					}
					if (w%2 == 1) != (ref.Seq == 0) {
						t.Errorf("%s: reference %+v (AppendSync gives the committed number, Append none)", id, ref)
					}
					mu.Lock()
					refs[id] = ref.Seq
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for _, l := range logs {
		require.NoError(t, l.Close())
	}
	db := openEtcd(t, srv, "/audit/")
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	rs, err := audit.List(db, audit.Filter{Limit: 100000})
	require.NoError(t, err)
	seen := map[string]uint64{}
	for _, r := range rs {
		_, dup := seen[r.CallID]
		require.False(t, dup, "receipt %s logged twice", r.CallID)
		seen[r.CallID] = r.Seq
	}
	require.Len(t, seen, 3*4*perWriter)
	for id, seq := range refs {
		if seq != 0 {
			require.Equal(t, seq, seen[id], "the reference handed back is where the receipt is")
		}
	}
}

// A shared log's commits and retention passes fit in etcd transactions:
// many receipts queued at once are committed in chunks, retention prunes
// in small steps, and the log verifies.
func TestSharedAuditLogCommitsAndPrunesWithinEtcdLimits(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/audit-limits/")
	l, err := audit.Open(db, audit.Options{Key: auditKey(t), Shared: true, Retention: audit.Retention{MaxCount: 60},
		Linger: 50 * time.Millisecond, PruneEvery: 1})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 100 { // far more than one commit's chunk at once
		wg.Go(func() {
			for n := range 3 {
				if _, err := l.Append(audit.Receipt{CallID: fmt.Sprintf("w%d-%d", w, n), Tool: "t", Outcome: "ok",
					Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Prune())
	healthy, why := l.Healthy()
	require.True(t, healthy, why)
	require.NoError(t, l.Close())
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	rs, err := audit.List(db, audit.Filter{Limit: 100000})
	require.NoError(t, err)
	require.LessOrEqual(t, len(rs), 60, "retention kept the newest 60")
	require.NotEmpty(t, rs)
	require.Equal(t, uint64(300), rs[0].Seq, "every receipt was numbered")
}

// The tenant floor on etcd: one tenant's volume fills the count bound from
// two replicas; the other tenant's receipts stay below the base, every
// pruning transaction within etcd's operation limit, and the log verifies.
func TestSharedAuditLogKeepsEachTenantsFloor(t *testing.T) {
	srv := etcdtest.Start(t)
	db1, db2 := openEtcd(t, srv, "/audit-floor/"), openEtcd(t, srv, "/audit-floor/")
	opts := audit.Options{Key: auditKey(t), Shared: true, Retention: audit.Retention{MaxCount: 40, Floor: 5}, Linger: 20 * time.Millisecond, PruneEvery: 1}
	l1, err := audit.Open(db1, opts)
	require.NoError(t, err)
	l2, err := audit.Open(db2, opts)
	require.NoError(t, err)
	rec := func(scope string, n int) audit.Receipt {
		return audit.Receipt{CallID: fmt.Sprint(scope, n), Scope: scope, Tool: "t", Outcome: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	}
	for n := range 3 {
		_, err := l1.AppendSync(rec("globex", n))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for w, l := range []*audit.Log{l1, l2} {
		wg.Go(func() {
			for n := range 150 {
				if _, err := l.Append(rec(fmt.Sprint("acme-", w), n)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, l1.Prune())
	require.NoError(t, l2.Prune())
	for _, l := range []*audit.Log{l1, l2} {
		healthy, why := l.Healthy()
		require.True(t, healthy, why)
		require.NoError(t, l.Close())
	}
	victim, err := audit.List(db1, audit.Filter{Scope: "globex"})
	require.NoError(t, err)
	require.Len(t, victim, 3, "the other tenant's receipts survive the flood")
	rep, err := audit.Verify(db1, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	require.LessOrEqual(t, rep.Count, 40)
}

// A replica whose last commit is the newest in the shared log commits its
// next receipts without reading the log's position again (one etcd
// request each); when another replica has committed in between, the
// commit conflicts, runs again on the stored position, and the chain
// stays one.
func TestSharedAuditLogWriterAloneCommitsWithoutReads(t *testing.T) {
	srv := etcdtest.Start(t)
	db1, db2 := openEtcd(t, srv, "/audit-alone/"), openEtcd(t, srv, "/audit-alone/")
	l1, err := audit.Open(db1, audit.Options{Key: auditKey(t), Shared: true})
	require.NoError(t, err)
	l2, err := audit.Open(db2, audit.Options{Key: auditKey(t), Shared: true})
	require.NoError(t, err)
	<-l1.Verified()
	<-l2.Verified()
	n := 0
	appendSync := func(l *audit.Log) audit.Ref {
		n++
		ref, err := l.AppendSync(audit.Receipt{CallID: fmt.Sprint("c", n), Tool: "t", Outcome: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		require.NoError(t, err)
		return ref
	}
	appendSync(l1)
	before := db1.Etcd().Stats()
	for range 5 {
		appendSync(l1)
	}
	after := db1.Etcd().Stats()
	require.Equal(t, before.Reads, after.Reads, "no reads while this writer is alone")
	require.Equal(t, before.Commits+5, after.Commits)
	require.Equal(t, before.Conflicts, after.Conflicts)

	require.Equal(t, uint64(7), appendSync(l2).Seq, "the other replica numbers after the stored head")
	ref := appendSync(l1)
	require.Equal(t, uint64(8), ref.Seq, "the stale position was noticed, the receipt chained after the other replica's")
	require.Equal(t, after.Conflicts+1, db1.Etcd().Stats().Conflicts)

	require.NoError(t, l1.Close())
	require.NoError(t, l2.Close())
	rep, err := audit.Verify(db1, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	require.Equal(t, 8, rep.Count)
}

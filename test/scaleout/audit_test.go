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
// each caller told the number its receipt got.
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
					ref, err := l.Append(audit.Receipt{CallID: id, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Tool: "t", Outcome: "ok"})
					if err != nil {
						t.Error(err)
						return
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
		require.Equal(t, seq, seen[id], "the reference handed back is where the receipt is")
	}
}

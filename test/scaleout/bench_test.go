package scaleout

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/stretchr/testify/require"
)

// BenchmarkSharedAudit appends from 3 logs (replicas) × 8 goroutines on
// one embedded etcd: receipts/s, and etcd reads and conflicts per commit.
func BenchmarkSharedAudit(b *testing.B) {
	srv := etcdtest.Start(b)
	var dbs []*store.DB
	var logs []*audit.Log
	for range 3 {
		db := openEtcd(b, srv, "/bench-audit/")
		l, err := audit.Open(db, audit.Options{Key: auditKey(b), Shared: true})
		require.NoError(b, err)
		dbs, logs = append(dbs, db), append(logs, l)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := max(b.N/24, 1)
	for i, l := range logs {
		for w := range 8 {
			wg.Go(func() {
				for n := range per {
					if _, err := l.Append(audit.Receipt{CallID: fmt.Sprint(i, w, n), Tool: "t", Outcome: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	var st struct{ commits, conflicts, reads int64 }
	for _, db := range dbs {
		s := db.Etcd().Stats()
		st.commits += s.Commits
		st.conflicts += s.Conflicts
		st.reads += s.Reads
	}
	b.ReportMetric(float64(per*24)/el.Seconds(), "receipts/s")
	b.ReportMetric(float64(st.conflicts)/float64(max(st.commits, 1)), "conflicts/commit")
	b.ReportMetric(float64(st.reads)/float64(max(st.commits, 1)), "reads/commit")
	b.ReportMetric(float64(per*24)/float64(max(st.commits, 1)), "receipts/commit")
	for _, l := range logs {
		l.Close()
	}
}

// BenchmarkEtcdUpsert is one catalog upsert at a time on embedded etcd.
func BenchmarkEtcdUpsert(b *testing.B) {
	srv := etcdtest.Start(b)
	db := openEtcd(b, srv, "/bench-upsert/")
	cat, err := catalog.Open(context.Background(), db, b.TempDir()+"/index", catalog.Options{})
	require.NoError(b, err)
	defer cat.Close()
	r0 := db.Etcd().Stats().Reads
	b.ResetTimer()
	for i := range b.N {
		bd, _ := bundle(b, i, "1.0.0")
		if _, err := cat.Upsert(context.Background(), bd, catalog.UpsertOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(db.Etcd().Stats().Reads-r0)/float64(b.N), "reads/op")
}

// BenchmarkBoltUpsert is BenchmarkEtcdUpsert on a bbolt file (the
// single-replica baseline, same catalog code).
func BenchmarkBoltUpsert(b *testing.B) {
	db, err := store.Open(b.TempDir()+"/a.db", store.Options{})
	require.NoError(b, err)
	defer db.Close()
	cat, err := catalog.Open(context.Background(), db, b.TempDir()+"/index", catalog.Options{})
	require.NoError(b, err)
	defer cat.Close()
	b.ResetTimer()
	for i := range b.N {
		bd, _ := bundle(b, i, "1.0.0")
		if _, err := cat.Upsert(context.Background(), bd, catalog.UpsertOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEtcdUpsertThreeReplicas upserts from 3 catalogs (replicas) × 4
// goroutines on one embedded etcd: upserts/s and conflicts per commit.
func BenchmarkEtcdUpsertThreeReplicas(b *testing.B) {
	srv := etcdtest.Start(b)
	var dbs []*store.DB
	var cats []*catalog.Service
	for range 3 {
		db := openEtcd(b, srv, "/bench-upsert3/")
		cat, err := catalog.Open(context.Background(), db, b.TempDir()+"/index", catalog.Options{})
		require.NoError(b, err)
		cat.Follow(context.Background())
		defer cat.Close()
		dbs, cats = append(dbs, db), append(cats, cat)
	}
	per := max(b.N/12, 1)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, cat := range cats {
		for w := range 4 {
			wg.Go(func() {
				for n := range per {
					bd, _ := bundle(b, (i*4+w)*100000+n, "1.0.0")
					if _, err := cat.Upsert(context.Background(), bd, catalog.UpsertOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	var commits, conflicts int64
	for _, db := range dbs {
		s := db.Etcd().Stats()
		commits += s.Commits
		conflicts += s.Conflicts
	}
	b.ReportMetric(float64(per*12)/el.Seconds(), "upserts/s")
	b.ReportMetric(float64(conflicts)/float64(max(commits, 1)), "conflicts/commit")
}

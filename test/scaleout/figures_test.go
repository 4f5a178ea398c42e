//go:build etcd

package scaleout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// seedCatalog upserts n corpus cookbooks through cs.
func seedCatalog(t testing.TB, cs *mcp.ClientSession, n int) {
	ctx := context.Background()
	for i := range n {
		b, _ := workload.Corpus{Seed: 29}.Bundle(i, "1.0.0")
		env, _, err := call(ctx, cs, workload.ToolUpsert, map[string]any{"bundle": b})
		require.NoError(t, err)
		require.True(t, env.OK, "%v", env.Raw)
	}
}

// mixed runs clients over sessions for d: 8 searches, 1 upsert and 1
// session status in 10 calls; it returns calls per second.
func mixed(t testing.TB, sessions []*mcp.ClientSession, d time.Duration, catalogSize int) float64 {
	ctx := context.Background()
	corpus := workload.Corpus{Seed: 29}
	var calls atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c, cs := range sessions {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for v := 0; time.Now().Before(deadline); v++ {
				tool, args := workload.ToolSearch, corpus.SearchQuery(rng, catalogSize)
				switch v % 10 {
				case 4:
					b, _ := corpus.Bundle(10_000+c, fmt.Sprintf("1.%d.0", v))
					tool, args = workload.ToolUpsert, map[string]any{"bundle": b}
				case 9:
					tool, args = workload.ToolStatus, map[string]any{}
				}
				env, _, err := call(ctx, cs, tool, args)
				if err != nil || !env.OK {
					t.Errorf("%s: %v %v", tool, err, env.Raw)
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(calls.Load()) / d.Seconds()
}

// etcdRequests is the number of unary requests the embedded etcd (in this
// process) has served: from every replica, the followers' index updates
// included.
func etcdRequests(t testing.TB) float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "etcd_server_client_requests_total" {
			continue
		}
		n := 0.0
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" && l.GetValue() == "unary" {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	t.Fatal("the embedded etcd exports no etcd_server_client_requests_total")
	return 0
}

// BenchmarkFleet measures, in one run, the figures of docs/scale-out.md:
// search and upsert p50 over HTTP on one bbolt replica and on a fleet of
// three etcd replicas, and the throughput of a mixed workload with the
// same 12 clients spread over 1, 2 and 3 etcd replicas. Run it with
// -benchtime 1x (each figure is its own measurement).
func BenchmarkFleet(b *testing.B) {
	const catalogSize, samples, clients = 200, 200, 12
	dur := seconds(10)
	corpus := workload.Corpus{Seed: 29}
	upsertArgs := func(base int) func(i int) map[string]any {
		return func(i int) map[string]any {
			bd, _ := corpus.Bundle(base+i, "1.0.0")
			return map[string]any{"bundle": bd}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	searchArgs := func(int) map[string]any { return corpus.SearchQuery(rng, catalogSize) }

	// One bbolt replica.
	dir := b.TempDir()
	require.NoError(b, os.Chmod(dir, 0o700))
	pol := filepath.Join(b.TempDir(), "policy.toml")
	require.NoError(b, os.WriteFile(pol, []byte(unlimited), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	bolt, err := mcpproc.Start(ctx, mcpproc.Options{Bin: binary(b), DBPath: filepath.Join(dir, "a.db"), Transport: mcpproc.HTTP,
		Clients: clients, Env: []string{"ACCORDS_MCP_POLICY_FILE=" + pol, "ACCORDS_MCP_AUDIT_KEY=" + fmt.Sprintf("%064d", 7)}})
	cancel()
	require.NoError(b, err)
	seedCatalog(b, bolt.Sessions[0], catalogSize)
	boltSearch := p50(latencies(b, bolt.Sessions[0], samples, workload.ToolSearch, searchArgs))
	boltUpsert := p50(latencies(b, bolt.Sessions[0], samples, workload.ToolUpsert, upsertArgs(50_000)))
	boltRate := mixed(b, bolt.Sessions, dur, catalogSize)
	require.NoError(b, bolt.Close())

	// Three etcd replicas; the search runs on another replica than the
	// upserts that filled the catalog.
	f := startFleetB(b, 3, clients/3+1)
	seedCatalog(b, f.session(0, 0), catalogSize)
	time.Sleep(time.Second)
	r0 := etcdRequests(b)
	etcdSearch := p50(latencies(b, f.session(1, 0), samples, workload.ToolSearch, searchArgs))
	r1 := etcdRequests(b)
	etcdUpsert := p50(latencies(b, f.session(2, 0), samples, workload.ToolUpsert, upsertArgs(60_000)))
	r2 := etcdRequests(b)
	var rates [3]float64
	for n := 1; n <= 3; n++ {
		var ss []*mcp.ClientSession
		for c := range clients {
			ss = append(ss, f.session(c%n, c/n))
		}
		rates[n-1] = mixed(b, ss, dur, catalogSize)
	}
	b.ReportMetric(boltSearch, "bolt-search-p50-ms")
	b.ReportMetric(etcdSearch, "etcd3-search-p50-ms")
	b.ReportMetric(boltUpsert, "bolt-upsert-p50-ms")
	b.ReportMetric(etcdUpsert, "etcd3-upsert-p50-ms")
	b.ReportMetric((r1-r0)/samples, "etcd3-requests/search")
	b.ReportMetric((r2-r1)/samples, "etcd3-requests/upsert")
	b.ReportMetric(boltRate, "bolt-calls/s")
	for i, r := range rates {
		b.ReportMetric(r, fmt.Sprintf("etcd%d-calls/s", i+1))
	}
}

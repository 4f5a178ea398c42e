// Package benchcat builds realistic cookbook catalogs (test/workload's
// corpus, the one the load tool seeds: five entries a bundle, recipes and
// templates) for in-process benchmarks. It is imported only by tests.
package benchcat

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/workload"
)

// Seed is the corpus seed every benchmark uses, so figures are comparable.
const Seed = workload.DefaultSeed

// Corpus is the benchmark corpus.
var Corpus = workload.Corpus{Seed: Seed}

// Catalog is an open catalog on its own database.
type Catalog struct {
	Dir string
	DB  *store.DB
	Svc *catalog.Service
	N   int
}

// DBPath and IndexPath locate the files, for reopening.
func (c *Catalog) DBPath() string    { return filepath.Join(c.Dir, "accords.db") }
func (c *Catalog) IndexPath() string { return c.DBPath() + ".index" }

// Build writes bundles 0..n-1 of the corpus into a fresh catalog under dir
// in one transaction (the bulk path the built-in seeding uses; the upsert
// path is what the benchmarks measure, not what they prepare with).
func Build(tb testing.TB, dir string, n int) *Catalog {
	tb.Helper()
	c := &Catalog{Dir: dir, N: n}
	c.open(tb)
	bundles := make([]*catalog.Bundle, 0, n)
	for i := range n {
		raw, _ := Corpus.Bundle(i, "1.0.0")
		b, err := catalog.BundleFromValue(raw)
		if err != nil {
			tb.Fatalf("bundle %d: %v", i, err)
		}
		bundles = append(bundles, b)
	}
	start := time.Now()
	if _, err := c.Svc.SeedBuiltins(context.Background(), bundles); err != nil {
		tb.Fatalf("seed %d bundles: %v", n, err)
	}
	tb.Logf("built a %d-bundle catalog in %s", n, time.Since(start).Round(time.Millisecond))
	return c
}

func (c *Catalog) open(tb testing.TB) {
	tb.Helper()
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := store.Open(c.DBPath(), store.Options{})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	svc, err := catalog.Open(context.Background(), db, c.IndexPath(), catalog.Options{})
	if err != nil {
		db.Close()
		tb.Fatalf("open catalog: %v", err)
	}
	c.DB, c.Svc = db, svc
}

// Reopen closes and opens the catalog again (start-up on an existing one).
func (c *Catalog) Reopen(tb testing.TB) {
	tb.Helper()
	c.Close()
	c.open(tb)
}

// Close closes the catalog and its database.
func (c *Catalog) Close() {
	if c.Svc != nil {
		_ = c.Svc.Close()
		c.Svc = nil
	}
	if c.DB != nil {
		_ = c.DB.Close()
		c.DB = nil
	}
}

// Latencies collects per-operation times so a benchmark can report the
// median (p50-ns) and tail (p99-ns) the targets are stated in, not only
// the mean that ns/op is.
type Latencies struct{ d []time.Duration }

// Time runs fn and records its duration.
func (l *Latencies) Time(fn func()) {
	t0 := time.Now()
	fn()
	l.d = append(l.d, time.Since(t0))
}

// Report adds p50-ns and p99-ns metrics to b.
func (l *Latencies) Report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	// Nearest rank: the smallest value at or above p percent of the calls.
	at := func(p int) float64 { return float64(s[max((len(s)*p+99)/100, 1)-1].Nanoseconds()) }
	b.ReportMetric(at(50), "p50-ns")
	b.ReportMetric(at(99), "p99-ns")
}

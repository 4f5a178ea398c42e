package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

// benchLog opens a log with opts (and the test key) on a new database;
// closeAll closes both, at the end of each round of the benchmark.
func benchLog(b *testing.B, opts Options) (db *store.DB, l *Log, closeAll func()) {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	opts.Key = testKey(b)
	l, err = Open(db, opts)
	if err != nil {
		db.Close()
		b.Fatal(err)
	}
	return db, l, func() {
		_ = l.Close()
		_ = db.Close()
	}
}

// BenchmarkAppendSync is one durable commit per receipt (write tools).
func BenchmarkAppendSync(b *testing.B) {
	_, l, closeAll := benchLog(b, Options{})
	defer closeAll()
	r := receipt(1, "default", time.Now())
	b.ResetTimer()
	for range b.N {
		if _, err := l.AppendSync(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend is the read-tool path: enqueue only; the writer
// group-commits in the background.
func BenchmarkAppend(b *testing.B) {
	_, l, closeAll := benchLog(b, Options{})
	defer closeAll()
	r := receipt(1, "default", time.Now())
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriterPerReceipt is the writer's cost per receipt when receipts
// arrive back to back: the bbolt put, its tree hashes (1 + trailing ones)
// and the amortised group commit and checkpoint signing, measured as
// appends plus a final flush over b.N receipts.
func BenchmarkWriterPerReceipt(b *testing.B) {
	_, l, closeAll := benchLog(b, Options{})
	defer closeAll()
	r := receipt(1, "default", time.Now())
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEnqueue is what a read tool's call itself pays: numbering,
// chaining, the receipt's hashes and its leaf hash (the writer is stopped
// from competing by a large queue and no flush in the timed loop).
func BenchmarkEnqueue(b *testing.B) {
	_, l, closeAll := benchLog(b, Options{QueueSize: b.N + 1, MaxBacklog: b.N + 1, Linger: time.Hour})
	defer closeAll()
	r := receipt(1, "default", time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// BenchmarkGrowthPer1000 reports what 1,000 tool calls add to the
// database: the bytes in use in the audit buckets (receipts, tree hashes,
// checkpoints) per 1,000 receipts with realistic field sizes (full-length
// call ids and digests), and the file's growth. Retention (default 90
// days and 100,000 receipts) bounds the total at about 100 times this.
func BenchmarkGrowthPer1000(b *testing.B) {
	db, l, closeAll := benchLog(b, Options{})
	defer closeAll()
	digest := "hmac-sha256:" + strings.Repeat("ab", 32)
	inUse := func() int {
		n := 0
		_ = db.Bolt().View(func(tx *bolt.Tx) error {
			s := tx.Bucket(store.BucketAudit).Stats()
			n = s.LeafInuse + s.BranchInuse
			return nil
		})
		return n
	}
	size := func() int64 {
		st, err := os.Stat(db.Path())
		if err != nil {
			b.Fatal(err)
		}
		return st.Size()
	}
	used0, size0 := inUse(), size()
	b.ResetTimer()
	for i := range b.N * 1000 {
		r := receipt(i, "default", time.Now())
		r.CallID = "call_" + strings.Repeat("0f", 12)
		r.Tool = "vaultclaw_recipes_search"
		r.CapabilityUsed = "catalog_view"
		r.ParamsHash, r.ResultHash = digest, digest
		r.Session = "stdio-" + strings.Repeat("1", 16)
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(inUse()-used0)/float64(b.N), "bytes-in-use/1000calls")
	b.ReportMetric(float64(size()-size0)/float64(b.N), "file-bytes/1000calls")
}

// BenchmarkAppendBetweenCalls is a read tool's append as calls arrive one
// at a time: the writer has gone to sleep (lingering, or waiting for the
// queue) before each append, as it does between the calls of a client.
func BenchmarkAppendBetweenCalls(b *testing.B) {
	_, l, closeAll := benchLog(b, Options{})
	defer closeAll()
	<-l.Verified()
	r := receipt(1, "default", time.Now())
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		time.Sleep(100 * time.Microsecond)
		b.StartTimer()
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

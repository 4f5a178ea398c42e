package audit

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// BenchmarkAppendSync is one durable commit per receipt (write tools).
func BenchmarkAppendSync(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := Open(db, Options{Key: testKey(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
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
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := Open(db, Options{Key: testKey(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
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
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := Open(db, Options{Key: testKey(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
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
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l, err := Open(db, Options{Key: testKey(b), QueueSize: b.N + 1, Linger: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
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

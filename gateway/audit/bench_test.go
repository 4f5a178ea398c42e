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

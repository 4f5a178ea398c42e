package backup_test

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

// benchDB is a database of about 20 MB (20 000 records of 1 KiB).
func benchDB(b *testing.B) *store.DB {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { db.Close() })
	val := make([]byte, 1024)
	for batch := range 20 {
		require.NoError(b, db.Update(func(tx store.Tx) error {
			bk := tx.Bucket(store.BucketCatalog)
			for i := range 1000 {
				if err := bk.Put([]byte(fmt.Sprintf("k%02d-%04d", batch, i)), val); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	return db
}

// BenchmarkSnapshot measures the hot snapshot (bytes/s via SetBytes).
func BenchmarkSnapshot(b *testing.B) {
	db := benchDB(b)
	n, err := backup.Snapshot(db, io.Discard)
	require.NoError(b, err)
	b.SetBytes(n)
	b.ResetTimer()
	for b.Loop() {
		if _, err := backup.Snapshot(db, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck measures the full verification restore runs on a backup.
func BenchmarkCheck(b *testing.B) {
	db := benchDB(b)
	p := filepath.Join(b.TempDir(), "snap.db")
	require.NoError(b, backup.WriteFile(p, func(w io.Writer) error { _, err := backup.Snapshot(db, w); return err }))
	n, _ := backup.Snapshot(db, io.Discard)
	b.SetBytes(n)
	b.ResetTimer()
	for b.Loop() {
		if _, err := backup.Check(p); err != nil {
			b.Fatal(err)
		}
	}
}

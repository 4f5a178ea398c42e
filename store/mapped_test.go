package store_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/accordsai/accords-mcp/platform/resident"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func value(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("value %06d;", i)), 300) }

// The database file's mapping is released over and over while writers
// grow the file and readers read it: every value reads back as written,
// and releasing takes the pages read off the resident set (run with
// -race).
func TestReleasingTheDatabaseMappingWhileItIsReadAndWritten(t *testing.T) {
	if _, err := resident.FileResident(); err != nil {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	bucket := []byte("mapped_test")
	require.NoError(t, db.Update(func(tx store.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }))

	g := resident.New(resident.Options{Budget: 1})
	g.Add("database", func(release func(resident.Range)) error {
		return db.Mapped(func(addr uintptr, n int) { release(resident.Range{Addr: addr, Len: n}) })
	})
	const total = 3000
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				g.Trim()
			}
		}
	})
	for r := range 2 {
		wg.Go(func() {
			for k := r; ; k += 7 {
				select {
				case <-stop:
					return
				default:
				}
				n := int(written.Load())
				if n == 0 {
					continue
				}
				i := k % n
				err := db.View(func(tx store.Tx) error {
					if got := tx.Bucket(bucket).Get([]byte(fmt.Sprint(i))); !bytes.Equal(got, value(i)) {
						return fmt.Errorf("value %d reads %d bytes, not as written", i, len(got))
					}
					return nil
				})
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	for from := 0; from < total; from += 100 {
		require.NoError(t, db.Update(func(tx store.Tx) error {
			for i := from; i < from+100; i++ {
				if err := tx.Bucket(bucket).Put([]byte(fmt.Sprint(i)), value(i)); err != nil {
					return err
				}
			}
			return nil
		}))
		written.Store(int64(from + 100))
	}
	close(stop)
	wg.Wait()
	require.Positive(t, g.Trims())

	fi, err := os.Stat(path)
	require.NoError(t, err)
	var size int
	require.NoError(t, db.Mapped(func(addr uintptr, n int) {
		assert.NotZero(t, addr)
		size = n
	}))
	assert.Greater(t, size, total*len(value(0)), "the used part of the file holds every value")
	assert.LessOrEqual(t, int64(size), fi.Size())

	// Read everything, then release: the resident set drops.
	require.NoError(t, db.View(func(tx store.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error { return nil })
	}))
	before, err := resident.FileResident()
	require.NoError(t, err)
	g.Trim()
	after, err := resident.FileResident()
	require.NoError(t, err)
	assert.Less(t, after, before-int64(total*len(value(0))/2), "released")
	require.NoError(t, db.View(func(tx store.Tx) error {
		for i := range total {
			if !bytes.Equal(tx.Bucket(bucket).Get([]byte(fmt.Sprint(i))), value(i)) {
				return fmt.Errorf("value %d changed", i)
			}
		}
		return nil
	}))
}

// Package kvtest is the conformance suite every store backend passes.
package kvtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/stretchr/testify/require"
)

// Store is what the suite drives.
type Store interface {
	View(fn func(kv.Tx) error) error
	Update(fn func(kv.Tx) error) error
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// Run runs the suite; open returns a new, empty store.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Run("buckets", func(t *testing.T) { testBuckets(t, open(t)) })
	t.Run("keys", func(t *testing.T) { testKeys(t, open(t)) })
	t.Run("rollback", func(t *testing.T) { testRollback(t, open(t)) })
	t.Run("cursor", func(t *testing.T) { testCursor(t, open(t)) })
	t.Run("cursor sees own writes", func(t *testing.T) { testCursorOverlay(t, open(t)) })
	t.Run("read only", func(t *testing.T) { testReadOnly(t, open(t)) })
	t.Run("serializable increments", func(t *testing.T) { testIncrements(t, open(t)) })
	t.Run("no lost range update", func(t *testing.T) { testRangeConflict(t, open(t)) })
}

func testBuckets(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		require.Nil(t, tx.Bucket([]byte("a")))
		a, err := tx.CreateBucket([]byte("a"))
		require.NoError(t, err)
		_, err = tx.CreateBucket([]byte("a"))
		require.ErrorIs(t, err, kv.ErrBucketExists)
		n, err := a.CreateBucketIfNotExists([]byte("scope/with odd\x00bytes"))
		require.NoError(t, err)
		require.NoError(t, n.Put([]byte("k"), []byte("v")))
		_, err = tx.CreateBucketIfNotExists([]byte("b"))
		require.NoError(t, err)
		require.NoError(t, a.Put([]byte("plain"), []byte("1")))
		_, err = a.CreateBucket([]byte("plain"))
		require.ErrorIs(t, err, kv.ErrIncompatible)
		return nil
	}))
	require.NoError(t, s.View(func(tx kv.Tx) error {
		var names []string
		require.NoError(t, tx.ForEach(func(name []byte, b kv.Bucket) error {
			require.NotNil(t, b)
			names = append(names, string(name))
			return nil
		}))
		require.Equal(t, []string{"a", "b"}, names)
		a := tx.Bucket([]byte("a"))
		require.NotNil(t, a)
		var subs []string
		require.NoError(t, a.ForEachBucket(func(n []byte) error { subs = append(subs, string(n)); return nil }))
		require.Equal(t, []string{"scope/with odd\x00bytes"}, subs)
		n := a.Bucket([]byte("scope/with odd\x00bytes"))
		require.NotNil(t, n)
		require.Equal(t, "v", string(n.Get([]byte("k"))))
		require.Nil(t, a.Get([]byte("scope/with odd\x00bytes")), "a bucket name has no value")
		require.Nil(t, a.Bucket([]byte("plain")), "a key is not a bucket")
		require.Nil(t, tx.Bucket([]byte("missing")))
		return nil
	}))
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		a := tx.Bucket([]byte("a"))
		require.ErrorIs(t, a.DeleteBucket([]byte("none")), kv.ErrBucketNotFound)
		require.NoError(t, a.DeleteBucket([]byte("scope/with odd\x00bytes")))
		require.Nil(t, a.Bucket([]byte("scope/with odd\x00bytes")))
		return nil
	}))
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		a := tx.Bucket([]byte("a"))
		require.Nil(t, a.Bucket([]byte("scope/with odd\x00bytes")), "deletion committed")
		n, err := a.CreateBucket([]byte("scope/with odd\x00bytes"))
		require.NoError(t, err)
		require.Nil(t, n.Get([]byte("k")), "a bucket created again starts empty")
		return nil
	}))
}

func testKeys(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		require.NoError(t, err)
		require.ErrorIs(t, b.Put(nil, []byte("x")), kv.ErrKeyRequired)
		require.NoError(t, b.Put([]byte("k"), []byte("v1")))
		require.Equal(t, "v1", string(b.Get([]byte("k"))), "a transaction reads its own writes")
		require.NoError(t, b.Put([]byte("empty"), []byte{}))
		require.NotNil(t, b.Get([]byte("empty")), "an empty value is present, not absent")
		require.NoError(t, b.Put(u64(7), []byte("binary")))
		return nil
	}))
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		b := tx.Bucket([]byte("b"))
		require.Equal(t, "v1", string(b.Get([]byte("k"))))
		require.Equal(t, "binary", string(b.Get(u64(7))))
		require.NoError(t, b.Delete([]byte("k")))
		require.Nil(t, b.Get([]byte("k")))
		require.NoError(t, b.Delete([]byte("never there")))
		return nil
	}))
	require.NoError(t, s.View(func(tx kv.Tx) error {
		require.Nil(t, tx.Bucket([]byte("b")).Get([]byte("k")))
		return nil
	}))
}

func testRollback(t *testing.T, s Store) {
	boom := errors.New("boom")
	require.NoError(t, s.Update(func(tx kv.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }))
	err := s.Update(func(tx kv.Tx) error {
		require.NoError(t, tx.Bucket([]byte("b")).Put([]byte("k"), []byte("v")))
		_, err := tx.CreateBucket([]byte("c"))
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.NoError(t, s.View(func(tx kv.Tx) error {
		require.Nil(t, tx.Bucket([]byte("b")).Get([]byte("k")), "nothing of a failed transaction is written")
		require.Nil(t, tx.Bucket([]byte("c")))
		return nil
	}))
}

func collect(c kv.Cursor, first func() ([]byte, []byte), next func() ([]byte, []byte)) []string {
	var out []string
	for k, v := first(); k != nil; k, v = next() {
		if v == nil {
			out = append(out, "["+string(k)+"]")
		} else {
			out = append(out, string(k)+"="+string(v))
		}
	}
	_ = c
	return out
}

func testCursor(t *testing.T, s Store) {
	const n = 700 // several pages; written 100 to a transaction (etcd's op limit)
	require.NoError(t, s.Update(func(tx kv.Tx) error { _, err := tx.CreateBucket([]byte("seq")); return err }))
	for from := uint64(1); from <= n; from += 100 {
		require.NoError(t, s.Update(func(tx kv.Tx) error {
			b := tx.Bucket([]byte("seq"))
			for i := from; i < from+100 && i <= n; i++ {
				if err := b.Put(u64(i), fmt.Appendf(nil, "%d", i)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	require.NoError(t, s.View(func(tx kv.Tx) error {
		b := tx.Bucket([]byte("seq"))
		c := b.Cursor()
		i := uint64(0)
		for k, v := c.First(); k != nil; k, v = c.Next() {
			i++
			require.Equal(t, u64(i), k)
			require.Equal(t, fmt.Sprint(i), string(v))
		}
		require.Equal(t, uint64(n), i)
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			require.Equal(t, u64(i), k)
			i--
		}
		require.Zero(t, i)
		k, _ := c.Seek(u64(350))
		require.Equal(t, u64(350), k)
		k, _ = c.Prev()
		require.Equal(t, u64(349), k)
		k, _ = c.Next()
		require.Equal(t, u64(350), k)
		k, _ = c.Seek(u64(n + 1))
		require.Nil(t, k)
		k, _ = c.Seek(append(u64(10), 0))
		require.Equal(t, u64(11), k, "seek lands on the next key")
		count := 0
		require.NoError(t, b.ForEach(func(_, _ []byte) error { count++; return nil }))
		require.Equal(t, n, count)
		return nil
	}))
	// Keys and nested buckets interleave in byte order.
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		b, err := tx.CreateBucket([]byte("mixed"))
		require.NoError(t, err)
		require.NoError(t, b.Put([]byte("a"), []byte("1")))
		_, err = b.CreateBucket([]byte("b"))
		require.NoError(t, err)
		require.NoError(t, b.Put([]byte("c"), []byte("3")))
		return nil
	}))
	require.NoError(t, s.View(func(tx kv.Tx) error {
		c := tx.Bucket([]byte("mixed")).Cursor()
		require.Equal(t, []string{"a=1", "[b]", "c=3"}, collect(c, c.First, c.Next))
		require.Equal(t, []string{"c=3", "[b]", "a=1"}, collect(c, c.Last, c.Prev))
		empty := tx.Bucket([]byte("mixed")).Bucket([]byte("b")).Cursor()
		k, _ := empty.First()
		require.Nil(t, k)
		k, _ = empty.Last()
		require.Nil(t, k)
		return nil
	}))
}

func testCursorOverlay(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		b, err := tx.CreateBucket([]byte("o"))
		require.NoError(t, err)
		for _, k := range []string{"b", "d", "f"} {
			require.NoError(t, b.Put([]byte(k), []byte(k)))
		}
		return nil
	}))
	require.NoError(t, s.Update(func(tx kv.Tx) error {
		b := tx.Bucket([]byte("o"))
		require.NoError(t, b.Put([]byte("a"), []byte("new")))
		require.NoError(t, b.Put([]byte("d"), []byte("changed")))
		require.NoError(t, b.Delete([]byte("f")))
		require.NoError(t, b.Put([]byte("g"), []byte("new")))
		c := b.Cursor()
		require.Equal(t, []string{"a=new", "b=b", "d=changed", "g=new"}, collect(c, c.First, c.Next))
		require.Equal(t, []string{"g=new", "d=changed", "b=b", "a=new"}, collect(c, c.Last, c.Prev))
		k, v := c.Seek([]byte("e"))
		require.Equal(t, "g", string(k))
		require.Equal(t, "new", string(v))
		return nil
	}))
}

func testReadOnly(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error { _, err := tx.CreateBucket([]byte("r")); return err }))
	require.NoError(t, s.View(func(tx kv.Tx) error {
		require.False(t, tx.Writable())
		require.ErrorIs(t, tx.Bucket([]byte("r")).Put([]byte("k"), []byte("v")), kv.ErrTxNotWritable)
		return nil
	}))
}

// testIncrements runs read-modify-write transactions from many goroutines:
// none may be lost (each commit saw the value the previous one wrote).
func testIncrements(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error { _, err := tx.CreateBucket([]byte("n")); return err }))
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- s.Update(func(tx kv.Tx) error {
					b := tx.Bucket([]byte("n"))
					var cur uint64
					if raw := b.Get([]byte("count")); raw != nil {
						cur = binary.BigEndian.Uint64(raw)
					}
					return b.Put([]byte("count"), u64(cur+1))
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.View(func(tx kv.Tx) error {
		require.Equal(t, u64(workers*each), tx.Bucket([]byte("n")).Get([]byte("count")))
		return nil
	}))
}

// testRangeConflict appends after the last key from many goroutines: a
// transaction whose cursor read went stale must not commit.
func testRangeConflict(t *testing.T, s Store) {
	require.NoError(t, s.Update(func(tx kv.Tx) error { _, err := tx.CreateBucket([]byte("log")); return err }))
	const workers, each = 6, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				err := s.Update(func(tx kv.Tx) error {
					b := tx.Bucket([]byte("log"))
					next := uint64(1)
					if k, _ := b.Cursor().Last(); k != nil {
						next = binary.BigEndian.Uint64(k) + 1
					}
					return b.Put(u64(next), fmt.Appendf(nil, "%d/%d", w, i))
				})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, firstErr)
	require.NoError(t, s.View(func(tx kv.Tx) error {
		seen := map[string]bool{}
		i := uint64(0)
		c := tx.Bucket([]byte("log")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			i++
			require.True(t, bytes.Equal(u64(i), k))
			require.False(t, seen[string(v)])
			seen[string(v)] = true
		}
		require.Equal(t, uint64(workers*each), i, "every append kept")
		return nil
	}))
}

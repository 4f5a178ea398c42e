package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/stretchr/testify/require"
)

// committed is the id of the last committed transaction of db's file.
func committed(t *testing.T, db *store.DB) int {
	t.Helper()
	id := -1
	require.NoError(t, db.View(func(tx store.Tx) error {
		btx, ok := kv.UnwrapBolt(tx)
		require.True(t, ok)
		id = btx.ID()
		return nil
	}))
	return id
}

// An Update that changes nothing commits nothing (and so syncs nothing);
// every kind of change, at any depth and however the bucket was reached,
// still commits, and what it wrote is there afterwards.
func TestUpdateCommitsOnlyWhatChanged(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "accords.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("t"))
		if err != nil {
			return err
		}
		if _, err := b.CreateBucketIfNotExists([]byte("nested")); err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}))

	noChange := map[string]func(tx store.Tx) error{
		"reads": func(tx store.Tx) error {
			require.Equal(t, "v", string(tx.Bucket([]byte("t")).Get([]byte("k"))))
			c := tx.Bucket([]byte("t")).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
			}
			return nil
		},
		"existing buckets": func(tx store.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("t"))
			if err != nil {
				return err
			}
			_, err = b.CreateBucketIfNotExists([]byte("nested"))
			return err
		},
		"a fill hint": func(tx store.Tx) error {
			tx.Bucket([]byte("t")).SetFillPercent(0.9)
			return nil
		},
	}
	for name, fn := range noChange {
		before := committed(t, db)
		require.NoError(t, db.Update(fn), name)
		require.Equal(t, before, committed(t, db), "%s: committed a transaction that changed nothing", name)
	}

	changes := map[string]struct {
		fn    func(tx store.Tx) error
		check func(tx store.Tx) bool
	}{
		"put": {func(tx store.Tx) error { return tx.Bucket([]byte("t")).Put([]byte("p"), []byte("1")) },
			func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Get([]byte("p")) != nil }},
		"put in a nested bucket": {func(tx store.Tx) error {
			return tx.Bucket([]byte("t")).Bucket([]byte("nested")).Put([]byte("n"), []byte("1"))
		}, func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Bucket([]byte("nested")).Get([]byte("n")) != nil }},
		"put through a bucket's Tx": {func(tx store.Tx) error {
			return tx.Bucket([]byte("t")).Tx().Bucket([]byte("t")).Put([]byte("q"), []byte("1"))
		}, func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Get([]byte("q")) != nil }},
		"put in a bucket reached by ForEach": {func(tx store.Tx) error {
			return tx.ForEach(func(name []byte, b store.Bucket) error {
				if string(name) != "t" {
					return nil
				}
				return b.Put([]byte("f"), []byte("1"))
			})
		}, func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Get([]byte("f")) != nil }},
		"delete": {func(tx store.Tx) error { return tx.Bucket([]byte("t")).Delete([]byte("k")) },
			func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Get([]byte("k")) == nil }},
		"new top-level bucket": {func(tx store.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("u")); return err },
			func(tx store.Tx) bool { return tx.Bucket([]byte("u")) != nil }},
		"new nested bucket": {func(tx store.Tx) error {
			_, err := tx.Bucket([]byte("t")).CreateBucket([]byte("n2"))
			return err
		}, func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Bucket([]byte("n2")) != nil }},
		"deleted nested bucket": {func(tx store.Tx) error { return tx.Bucket([]byte("t")).DeleteBucket([]byte("n2")) },
			func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Bucket([]byte("n2")) == nil }},
		"deleted top-level bucket": {func(tx store.Tx) error { return tx.DeleteBucket([]byte("u")) },
			func(tx store.Tx) bool { return tx.Bucket([]byte("u")) == nil }},
		"a write through the raw transaction": {func(tx store.Tx) error {
			btx, _ := kv.UnwrapBolt(tx)
			return btx.Bucket([]byte("t")).Put([]byte("raw"), []byte("1"))
		}, func(tx store.Tx) bool { return tx.Bucket([]byte("t")).Get([]byte("raw")) != nil }},
	}
	for _, name := range []string{"put", "put in a nested bucket", "put through a bucket's Tx", "put in a bucket reached by ForEach",
		"delete", "new top-level bucket", "new nested bucket", "deleted nested bucket", "deleted top-level bucket",
		"a write through the raw transaction"} {
		c := changes[name]
		before := committed(t, db)
		require.NoError(t, db.Update(c.fn), name)
		require.Equal(t, before+1, committed(t, db), "%s: not committed", name)
		require.NoError(t, db.View(func(tx store.Tx) error {
			require.True(t, c.check(tx), "%s: not there after the commit", name)
			return nil
		}))
	}

	// A failing Update still reports its error and leaves nothing behind.
	boom := errors.New("boom")
	before := committed(t, db)
	err = db.Update(func(tx store.Tx) error {
		if err := tx.Bucket([]byte("t")).Put([]byte("lost"), []byte("1")); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, before, committed(t, db))
	require.NoError(t, db.View(func(tx store.Tx) error {
		require.Nil(t, tx.Bucket([]byte("t")).Get([]byte("lost")))
		return nil
	}))
}

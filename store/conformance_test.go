package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/accordsai/accords-mcp/store/kv/kvtest"
	"github.com/stretchr/testify/require"
)

// Both backends pass the same suite, each test on an empty store (a fresh
// file; a fresh prefix on one shared embedded etcd).
func TestConformanceBolt(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Store {
		db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{Migrations: []migrations.Migration{}})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	var n atomic.Int64
	kvtest.Run(t, func(t *testing.T) kvtest.Store {
		return openEtcd(t, srv, fmt.Sprintf("/conformance-%d/", n.Add(1)), []migrations.Migration{})
	})
}

func openEtcd(t *testing.T, srv *etcdtest.Server, prefix string, migs []migrations.Migration) *store.DB {
	t.Helper()
	db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{srv.Endpoint}, Prefix: prefix}, store.Options{Migrations: migs})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// etcd's request limits are checked before sending: an oversized write
// fails whole with ErrTooLarge and leaves nothing behind.
func TestEtcdRefusesTransactionsOverItsLimits(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/limits/", nil)
	err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		for i := range 200 {
			if err := b.Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, store.ErrTooLarge)
	err = db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketMeta).Put([]byte("big"), make([]byte, 2<<20))
	})
	require.ErrorIs(t, err, store.ErrTooLarge)
	require.NoError(t, db.View(func(tx store.Tx) error {
		require.Nil(t, tx.Bucket(store.BucketMeta).Get([]byte("k0")))
		require.Nil(t, tx.Bucket(store.BucketMeta).Get([]byte("big")))
		return nil
	}))
	v, err := db.SchemaVersion()
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), v, "migrations ran on etcd")
}

// Unreachable etcd is ErrUnavailable (the retryable envelope), for reads
// and writes, and the store works again once etcd is back.
func TestEtcdUnavailableIsRetryable(t *testing.T) {
	srv := etcdtest.Start(t)
	db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{srv.Endpoint}, Prefix: "/down/", RequestTimeout: 500 * time.Millisecond}, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	srv.Stop()
	err = db.Update(func(tx store.Tx) error { return tx.Bucket(store.BucketMeta).Put([]byte("k"), []byte("v")) })
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.ErrorIs(t, db.Ping(), store.ErrUnavailable)
	srv.Restart(t)
	require.Eventually(t, func() bool {
		return db.Update(func(tx store.Tx) error { return tx.Bucket(store.BucketMeta).Put([]byte("k"), []byte("v")) }) == nil
	}, 20*time.Second, 100*time.Millisecond)
}

// A key put with a time to live (the policy-hash cache) is removed by
// etcd's lease once it expires.
func TestEtcdTTLKeysExpireByLease(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/ttl/", nil)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketPolicyHash)
		exp, ok := b.(kv.Expiring)
		require.True(t, ok, "etcd buckets expire keys")
		require.NoError(t, b.Put([]byte("kept"), []byte("v")))
		return exp.PutTTL([]byte("k"), []byte("v"), 1)
	}))
	get := func(k string) []byte {
		var v []byte
		require.NoError(t, db.View(func(tx store.Tx) error {
			v = tx.Bucket(store.BucketPolicyHash).Get([]byte(k))
			return nil
		}))
		return v
	}
	require.Equal(t, "v", string(get("k")))
	require.Eventually(t, func() bool { return get("k") == nil }, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, "v", string(get("kept")))
}

// Follow reports commits to the watched bucket by anyone, and says so
// when etcd compacted the history it was asked to start from (the catalog
// then rebuilds its index).
func TestEtcdFollowReportsChangesAndCompaction(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/follow/", nil)
	put := func(k string) {
		require.NoError(t, db.Update(func(tx store.Tx) error { return tx.Bucket(store.BucketCatalog).Put([]byte(k), []byte("v")) }))
	}
	put("a")
	old, err := db.Revision(context.Background())
	require.NoError(t, err)
	put("b")
	put("c")
	now, err := db.Revision(context.Background())
	require.NoError(t, err)
	_, err = db.Etcd().Client().Compact(context.Background(), now)
	require.NoError(t, err)

	ctx := t.Context()
	changed, compacted := make(chan int64, 16), make(chan int64, 16)
	db.Follow(ctx, store.BucketCatalog, old, func(r int64) { changed <- r }, func(r int64) { compacted <- r })
	select {
	case r := <-compacted:
		require.GreaterOrEqual(t, r, now)
	case <-time.After(10 * time.Second):
		t.Fatal("no compaction reported for a watch from a compacted revision")
	}
	put("d")
	deadline := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case r := <-changed:
			seen = r > now // events replayed from the compaction revision come first
		case <-deadline:
			t.Fatal("a commit after the compaction was not reported")
		}
	}
	require.NoError(t, db.Update(func(tx store.Tx) error { return tx.Bucket(store.BucketMeta).Put([]byte("other"), []byte("v")) }))
	select {
	case r := <-changed:
		t.Fatalf("a commit to another bucket was reported (rev %d)", r)
	case <-time.After(300 * time.Millisecond):
	}
}

// A transaction that walks the same range twice reads it from etcd once
// (at its snapshot the range cannot change), still sees its own writes in
// the second walk, and still conflicts when another writer changes the
// range before it commits.
func TestEtcdRangeReadOncePerTransaction(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/pages/", nil)
	other := openEtcd(t, srv, "/pages/", nil)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		for i := range 5 {
			if err := tx.Bucket(store.BucketMeta).Put(fmt.Appendf(nil, "p%d", i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}))
	walk := func(b store.Bucket) (keys []string) {
		c := b.Cursor()
		for k, _ := c.Seek([]byte("p")); k != nil && k[0] == 'p'; k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return keys
	}
	runs := 0
	require.NoError(t, db.Update(func(tx store.Tx) error {
		runs++
		b := tx.Bucket(store.BucketMeta)
		first := walk(b)
		r0 := db.Etcd().Stats().Reads
		require.Equal(t, first, walk(b))
		require.Equal(t, r0, db.Etcd().Stats().Reads, "the second walk of the range made no etcd read")
		require.NoError(t, b.Put([]byte("p9"), []byte("mine")))
		require.Equal(t, append(first, "p9"), walk(b), "the transaction's own write is seen")
		if runs == 1 {
			require.NoError(t, other.Update(func(tx store.Tx) error {
				return tx.Bucket(store.BucketMeta).Put([]byte("p2"), []byte("theirs"))
			}))
		}
		return nil
	}))
	require.Equal(t, 2, runs, "a change to the walked range made the transaction run again")
}

// kv.Revisioned: a transaction relying on a bucket as of a revision
// commits while nothing directly in the bucket changed since, and runs
// again when a value was written or deleted there (a change in a nested
// bucket is not covered).
func TestEtcdUnchangedSinceRevision(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/unchanged/", nil)
	other := openEtcd(t, srv, "/unchanged/", nil)
	var rev int64
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		if _, err := b.CreateBucketIfNotExists([]byte("nested")); err != nil {
			return err
		}
		tx.(kv.Revisioned).OnCommit(func(r int64) { rev = r })
		return b.Put([]byte("a"), []byte("1"))
	}))
	require.NotZero(t, rev)
	relying := func(change func(b store.Bucket) error) int {
		runs := 0
		require.NoError(t, db.Update(func(tx store.Tx) error {
			runs++
			b := tx.Bucket(store.BucketMeta)
			if runs == 1 {
				tx.(kv.Revisioned).Unchanged(b, rev)
				require.NoError(t, other.Update(func(tx store.Tx) error { return change(tx.Bucket(store.BucketMeta)) }))
			}
			return b.Put([]byte("mine"), []byte("x"))
		}))
		return runs
	}
	require.Equal(t, 1, relying(func(b store.Bucket) error { return b.Bucket([]byte("nested")).Put([]byte("n"), []byte("1")) }),
		"a nested bucket's change is not the bucket's")
	require.NoError(t, db.Update(func(tx store.Tx) error {
		tx.(kv.Revisioned).OnCommit(func(r int64) { rev = r })
		return tx.Bucket(store.BucketMeta).Put([]byte("b"), []byte("1"))
	}))
	require.Equal(t, 2, relying(func(b store.Bucket) error { return b.Put([]byte("a"), []byte("2")) }), "a value written since")
	require.NoError(t, db.Update(func(tx store.Tx) error {
		tx.(kv.Revisioned).OnCommit(func(r int64) { rev = r })
		return tx.Bucket(store.BucketMeta).Put([]byte("c"), []byte("1"))
	}))
	require.Equal(t, 2, relying(func(b store.Bucket) error { return b.Delete([]byte("a")) }), "a value deleted since")
}

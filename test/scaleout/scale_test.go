//go:build scale

package scaleout

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// The tests here (-tags=scale, run by .ci/extra) write more keys than one
// etcd transaction holds (128 operations); bbolt's tests of the same code
// paths run by default.

// Pruning 300 stale approval handles on etcd runs in transactions the
// store accepts (one transaction of 300 deletions would be refused).
func TestScaleHandlePruneFitsEtcdTransactions(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/handles/")
	hs := approval.NewStore(db, time.Hour)
	now := time.Now()
	hs.SetClock(func() time.Time { return now })
	for i := range 300 {
		_, err := hs.Save("tenant", &approval.Handoff{Handle: approval.Handle{Kind: approval.KindJob, JobID: fmt.Sprint("job_", i)}}, "x")
		require.NoError(t, err)
	}
	now = now.Add(2 * time.Hour)
	n, err := hs.Prune()
	require.NoError(t, err)
	require.Equal(t, 300, n)
	left, err := hs.List("tenant", nil, 1000)
	require.NoError(t, err)
	require.Empty(t, left)
}

// A catalog on etcd written before bundles were packed: the next start
// packs them in transactions etcd accepts (one transaction of 250 writes
// would exceed its 128 operations), and every bundle reads back the same.
func TestScalePlainBundlesOnEtcdArePackedInSteps(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/pack/")
	cat, err := catalog.Open(context.Background(), db, filepath.Join(t.TempDir(), "index"), catalog.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	const n = 250
	hashes := map[string]string{}
	var mu sync.Mutex
	bundles := bundles(t, n)
	each(t, n, func(i int) error {
		bd := bundles[i]
		res, err := cat.Upsert(ctx, bd, catalog.UpsertOptions{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		hashes[bd.CookbookID] = res.ContentHash
		return nil
	})
	require.Len(t, hashes, n)
	require.NoError(t, cat.Close())

	// Unpack every bundle as an older binary wrote it, 100 a transaction.
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	isFrame := func(v []byte) bool { return bytes.HasPrefix(v, []byte{0x28, 0xb5, 0x2f, 0xfd}) }
	var keys [][]byte
	require.NoError(t, db.View(func(tx store.Tx) error {
		c := tx.Bucket(store.BucketCatalog).Cursor()
		for k, v := c.Seek([]byte("b/")); k != nil && bytes.HasPrefix(k, []byte("b/")); k, v = c.Next() {
			require.True(t, isFrame(v), "%s is stored packed", k)
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	}))
	require.Len(t, keys, n)
	for start := 0; start < n; start += 100 {
		require.NoError(t, db.Update(func(tx store.Tx) error {
			root := tx.Bucket(store.BucketCatalog)
			for _, k := range keys[start:min(start+100, n)] {
				plain, err := dec.DecodeAll(root.Get(k), nil)
				if err != nil {
					return err
				}
				if err := root.Put(k, plain); err != nil {
					return err
				}
			}
			return root.Delete([]byte("stored_form"))
		}))
	}

	cat = openCatalog(t, db)
	packed := 0
	require.NoError(t, db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		require.Equal(t, "zstd", string(root.Get([]byte("stored_form"))))
		for _, k := range keys {
			if isFrame(root.Get(k)) {
				packed++
			}
		}
		return nil
	}))
	require.Equal(t, n, packed)
	for id, hash := range hashes {
		st, err := cat.Get(ctx, id, "")
		require.NoError(t, err)
		require.Equal(t, hash, st.Hash, id)
	}
}

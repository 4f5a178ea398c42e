package scaleout

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/stretchr/testify/require"
)

func openCatalog(t *testing.T, db *store.DB) *catalog.Service {
	t.Helper()
	cat, err := catalog.Open(context.Background(), db, filepath.Join(t.TempDir(), "index"), catalog.Options{})
	require.NoError(t, err)
	cat.Follow(context.Background())
	t.Cleanup(func() { cat.Close() })
	return cat
}

func bundle(t testing.TB, i int, version string) (*catalog.Bundle, workload.BundleInfo) {
	t.Helper()
	v, info := workload.Corpus{Seed: 3}.Bundle(i, version)
	b, err := catalog.BundleFromValue(v)
	require.NoError(t, err)
	return b, info
}

// bundles returns bundles 0..n-1 at version 1.0.0.
func bundles(t testing.TB, n int) []*catalog.Bundle {
	t.Helper()
	out := make([]*catalog.Bundle, n)
	for i := range out {
		out[i], _ = bundle(t, i, "1.0.0")
	}
	return out
}

func found(t *testing.T, cat *catalog.Service, word, id string) bool {
	res, err := cat.Search(context.Background(), index.Query{Text: word, Limit: 50})
	require.NoError(t, err)
	for _, h := range res.Items {
		if h.CookbookID == id {
			return true
		}
	}
	return false
}

// Two catalogs on one etcd store (two replicas): a write on either is
// found by a search on the other (the watch), deletes included, and a
// replica's own index never skips the other's revisions.
func TestCatalogIndexFollowsOtherReplicas(t *testing.T) {
	srv := etcdtest.Start(t)
	a := openCatalog(t, openEtcd(t, srv, "/cat/"))
	b := openCatalog(t, openEtcd(t, srv, "/cat/"))
	ctx := context.Background()
	for i := range 6 {
		w, r := a, b
		if i%2 == 1 {
			w, r = b, a
		}
		bd, info := bundle(t, i, "1.0.0")
		_, err := w.Upsert(ctx, bd, catalog.UpsertOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return found(t, r, info.Words[0], bd.CookbookID) }, 5*time.Second, 10*time.Millisecond,
			"upsert %d on one replica found on the other", i)
	}
	bd, info := bundle(t, 0, "1.0.0")
	_, err := b.Delete(ctx, bd.CookbookID, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !found(t, a, info.Words[0], bd.CookbookID) }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return a.IndexRev() == b.IndexRev() && a.IndexRev() == a.Rev() }, 5*time.Second, 10*time.Millisecond)
}

// With etcd stopped a search answers from the local index; writes refuse
// with the store-unavailable error; after etcd is back, both work again
// and the other replica's index catches up.
func TestCatalogSurvivesEtcdRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	dbA := openEtcdTimeout(t, srv, "/restart/", 700*time.Millisecond)
	a := openCatalog(t, dbA)
	b := openCatalog(t, openEtcdTimeout(t, srv, "/restart/", 700*time.Millisecond))
	ctx := context.Background()
	bd, info := bundle(t, 1, "1.0.0")
	_, err := a.Upsert(ctx, bd, catalog.UpsertOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return found(t, b, info.Words[0], bd.CookbookID) }, 5*time.Second, 10*time.Millisecond)

	srv.Stop()
	require.True(t, found(t, b, info.Words[0], bd.CookbookID), "search from the local index with etcd down")
	bd2, info2 := bundle(t, 2, "1.0.0")
	_, err = a.Upsert(ctx, bd2, catalog.UpsertOptions{})
	require.ErrorIs(t, err, store.ErrUnavailable)

	srv.Restart(t)
	require.Eventually(t, func() bool {
		_, err := a.Upsert(ctx, bd2, catalog.UpsertOptions{})
		return err == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.Eventually(t, func() bool { return found(t, b, info2.Words[0], bd2.CookbookID) }, 10*time.Second, 20*time.Millisecond,
		"the watch resumed after the restart")
}

// A backup of an etcd store is a bbolt file that checks like any backup;
// restoring it into etcd gives back every key, the audit chain verifies,
// and replicas' indexes rebuild rather than trust their old revision.
func TestEtcdBackupAndRestore(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/backup/")
	cat := openCatalog(t, db)
	ctx := context.Background()
	bundles := bundles(t, 150) // more keys than one etcd transaction holds
	each(t, len(bundles), func(i int) error {
		_, err := cat.Upsert(ctx, bundles[i], catalog.UpsertOptions{})
		return err
	})
	lg, err := audit.Open(db, audit.Options{Key: auditKey(t), Shared: true})
	require.NoError(t, err)
	for i := range 20 {
		_, err := lg.AppendSync(audit.Receipt{CallID: fmt.Sprint("c", i), Tool: "t", Outcome: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		require.NoError(t, err)
	}
	require.NoError(t, lg.Close())
	revBefore := cat.Rev()

	var buf bytes.Buffer
	_, err = backup.Snapshot(db, &buf)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "etcd.backup")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
	info, err := backup.Check(file)
	require.NoError(t, err)
	require.Equal(t, 20, info.Audit.Count)

	// Change the store after the backup, then restore it.
	bd, _ := bundle(t, 999, "1.0.0")
	_, err = cat.Upsert(ctx, bd, catalog.UpsertOptions{})
	require.NoError(t, err)
	cat.Close()
	dir := t.TempDir()
	_, err = backup.RestoreEtcd(db, file, nil, backup.RestoreOptions{DBPath: filepath.Join(dir, "a.db"), IndexDir: filepath.Join(dir, "a.db.index")})
	require.NoError(t, err)

	var again bytes.Buffer
	_, err = backup.Snapshot(db, &again)
	require.NoError(t, err)
	file2 := filepath.Join(t.TempDir(), "again.backup")
	require.NoError(t, os.WriteFile(file2, again.Bytes(), 0o600))
	_, err = backup.Check(file2)
	require.NoError(t, err)
	rep, err := audit.Verify(db, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK)

	cat2, err := catalog.Open(ctx, db, filepath.Join(t.TempDir(), "index2"), catalog.Options{})
	require.NoError(t, err)
	defer cat2.Close()
	require.Greater(t, cat2.Rev(), revBefore+1, "the catalog revision moved past both histories")
	_, err = cat2.Get(ctx, bd.CookbookID, "")
	require.Error(t, err, "the cookbook written after the backup is gone")
	items, err := cat2.List(ctx, catalog.ListFilter{})
	require.NoError(t, err)
	require.Len(t, items, 150)

	// A replica still running during a restore is refused.
	fleet, err := db.JoinFleet("still-running", store.FleetOptions{})
	require.NoError(t, err)
	defer fleet.Leave()
	_, err = backup.RestoreEtcd(db, file, nil, backup.RestoreOptions{DBPath: filepath.Join(dir, "a.db")})
	require.ErrorContains(t, err, "stop every replica")
}

// A task is followed by one replica: its claim is refused to the others
// while the claiming replica lives, and taken over once it has left.
func TestFleetClaimsAreExclusiveAndTakenOver(t *testing.T) {
	srv := etcdtest.Start(t)
	a, err := openEtcd(t, srv, "/claims/").JoinFleet("a", store.FleetOptions{})
	require.NoError(t, err)
	b, err := openEtcd(t, srv, "/claims/").JoinFleet("b", store.FleetOptions{})
	require.NoError(t, err)
	defer b.Leave()
	require.Eventually(t, func() bool { return a.Live() == 2 && b.Live() == 2 }, 5*time.Second, 20*time.Millisecond)
	require.True(t, a.Claim("task-1"))
	require.True(t, a.Claim("task-1"), "a claim held is held again")
	require.False(t, b.Claim("task-1"))
	a.Release("task-1")
	require.True(t, b.Claim("task-1"), "a released claim is free")
	require.True(t, a.Claim("task-2"))
	a.Leave()
	require.True(t, b.Claim("task-2"), "a replica that left gives up its claims")
	require.Eventually(t, func() bool { return b.Live() == 1 }, 5*time.Second, 20*time.Millisecond)
}

// A replica that starts without an index rebuilds it in the background on
// etcd too: it opens at once, follows the other replica's writes made
// while it builds, and ends with every cookbook searchable and its index
// at the catalog revision.
func TestCatalogBackgroundRebuildOnEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	a := openCatalog(t, openEtcd(t, srv, "/cat/"))
	ctx := context.Background()
	var ids []string
	var words []string
	upsert := func(i int) {
		bd, info := bundle(t, i, "1.0.0")
		_, err := a.Upsert(ctx, bd, catalog.UpsertOptions{})
		require.NoError(t, err)
		ids, words = append(ids, bd.CookbookID), append(words, info.Words[0])
	}
	for i := range 30 {
		upsert(i)
	}
	b, err := catalog.Open(ctx, openEtcd(t, srv, "/cat/"), filepath.Join(t.TempDir(), "index"), catalog.Options{BackgroundRebuild: true})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.True(t, b.Report().Background, "%+v", b.Report())
	b.Follow(ctx)
	for i := 30; i < 40; i++ {
		upsert(i)
	}
	require.NoError(t, b.WaitIndex(ctx))
	for i, id := range ids {
		require.Eventually(t, func() bool { return found(t, b, words[i], id) }, 5*time.Second, 10*time.Millisecond, "cookbook %d", i)
	}
	require.Eventually(t, func() bool { return b.IndexRev() == a.Rev() && b.Rev() == a.Rev() }, 5*time.Second, 10*time.Millisecond)
}

package catalog

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/within"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildGate holds a background rebuild once its snapshot is taken: the
// first build waits for release (or its context); calls counts builds.
type buildGate struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
	calls   atomic.Int32
	// fail, when set, is returned by the first build instead of waiting.
	fail error
	// during runs inside the first build before it waits.
	during func()
}

// newBuildGate returns a gate that lets the build go when the test ends
// (so a test that failed does not hang closing the database).
func newBuildGate(t *testing.T) *buildGate {
	g := &buildGate{started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *buildGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *buildGate) hook(ctx context.Context) error {
	if g.calls.Add(1) != 1 {
		return nil
	}
	close(g.started)
	if g.fail != nil {
		return g.fail
	}
	if g.during != nil {
		g.during()
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openBackground opens the catalog with background rebuilds and g's hook;
// Open must return while the hook holds the build.
func (e *env) openBackground(t *testing.T, g *buildGate) {
	t.Helper()
	db, err := store.Open(e.dbPath(), store.Options{})
	require.NoError(t, err)
	e.db = db
	within.Run(t, "Open with the rebuild held", func() {
		e.svc, err = Open(context.Background(), db, e.indexPath(), Options{BackgroundRebuild: true, buildHook: g.hook})
	})
	require.NoError(t, err)
	within.Run(t, "the rebuild to start", func() { <-g.started })
}

// seededWithoutIndex is a closed catalog of three cookbooks whose index
// folder was deleted.
func seededWithoutIndex(t *testing.T) *env {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("alpha", "1.0.0", 2), "")
	mustUpsert(t, e.svc, sample("beta", "1.0.0", 1), "")
	mustUpsert(t, e.svc, mustBundle(t, netHTTP), "")
	e.close()
	require.NoError(t, os.RemoveAll(e.indexPath()))
	return e
}

// TestBackgroundRebuildServesWhileBuilding: Open returns with the rebuild
// held; get, list, entry and render answer meanwhile; an upsert commits
// at once; a search waits for the rebuild and then finds everything,
// including that upsert; a search whose context ends returns its error.
func TestBackgroundRebuildServesWhileBuilding(t *testing.T) {
	e := seededWithoutIndex(t)
	g := newBuildGate(t)
	e.openBackground(t, g)
	rep := e.svc.Report()
	assert.True(t, rep.Rebuilt)
	assert.True(t, rep.Background)
	assert.Equal(t, "index missing", rep.Reason)
	assert.True(t, e.svc.Rebuilding())
	_, _, _, err := e.svc.IndexStats()
	assert.ErrorIs(t, err, ErrIndexRebuilding)

	ctx := t.Context()
	within.Run(t, "reads that need no index", func() {
		st, err := e.svc.Get(ctx, "alpha", "")
		require.NoError(t, err)
		assert.Equal(t, "1.0.0", st.Bundle.Version)
		items, err := e.svc.List(ctx, ListFilter{})
		require.NoError(t, err)
		assert.Len(t, items, 3)
		_, err = e.svc.Entry(ctx, "beta", "", "entry_0")
		require.NoError(t, err)
		res, err := e.svc.Render(ctx, RenderRequest{CookbookID: "net.http", TemplateID: "tpl_get", Inputs: map[string]any{"url": "u"}})
		require.NoError(t, err)
		assert.NotNil(t, res)
	})
	within.Run(t, "an upsert during the rebuild", func() {
		mustUpsert(t, e.svc, sample("gamma", "1.0.0", 3), "")
		mustUpsert(t, e.svc, sample("alpha", "2.0.0", 1), "")
		_, err := e.svc.Delete(ctx, "beta", "1.0.0")
		require.NoError(t, err)
	})
	assert.True(t, e.svc.Rebuilding(), "the writes did not wait for the rebuild")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.svc.Search(cancelled, index.Query{CookbookID: "alpha"})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, apperr.CodeInternal, apperr.As(err).Code)

	found := make(chan []string, 1)
	go func() { found <- searchIDs(t, e.svc, index.Query{Text: "recipe", Limit: index.MaxLimit}) }()
	select {
	case ids := <-found:
		t.Fatalf("the search answered before the rebuild was done: %v", ids)
	case <-time.After(100 * time.Millisecond):
	}
	g.open()
	var ids []string
	within.Run(t, "the search after the rebuild", func() { ids = <-found })
	// Latest versions only: alpha@2.0.0 (1 entry), gamma (3); beta deleted.
	assert.ElementsMatch(t, []string{"alpha@2.0.0/entry_0", "gamma@1.0.0/entry_0", "gamma@1.0.0/entry_1", "gamma@1.0.0/entry_2"}, ids)
	assert.False(t, e.svc.Rebuilding())
	assert.Equal(t, e.svc.Rev(), e.svc.IndexRev())
	docs, irev, srev, err := e.svc.SettledIndexStats()
	require.NoError(t, err)
	assert.Equal(t, srev, irev)
	assert.Equal(t, int(docs), 2+1+3+len(mustBundle(t, netHTTP).Entries), "alpha 1.0.0 and 2.0.0, gamma, net.http")

	// The index answers exactly as a synchronous rebuild of the same store.
	q := index.Query{AllVersions: true, Limit: index.MaxLimit}
	live := searchIDs(t, e.svc, q)
	require.NoError(t, e.svc.Reindex(ctx, nil))
	assert.Equal(t, searchIDs(t, e.svc, q), live)
	assert.Equal(t, int32(1), g.calls.Load())
}

// TestBackgroundRebuildCloseCancels: Close during the rebuild cancels and
// waits for it and leaves no index folder; the next Open rebuilds, and a
// write made while the first rebuild ran is found.
func TestBackgroundRebuildCloseCancels(t *testing.T) {
	e := seededWithoutIndex(t)
	g := newBuildGate(t)
	e.openBackground(t, g)
	mustUpsert(t, e.svc, sample("during", "1.0.0", 1), "")
	within.Run(t, "Close during the rebuild", func() { require.NoError(t, e.svc.Close()) })
	e.svc = nil
	_, err := index.Open(e.indexPath())
	assert.Error(t, err, "a cancelled rebuild left an index behind")
	require.NoError(t, e.db.Close())
	e.db = nil

	e.open()
	assert.True(t, e.svc.Report().Rebuilt)
	assert.Equal(t, "index missing", e.svc.Report().Reason)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "during"}), 1)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "alpha"}), 2)
}

// TestBackgroundRebuildRetiresAnIndexAhead: an index ahead of the
// database is moved aside when the background rebuild starts, so a crash
// (here Close) before it finishes cannot leave it to pass for current once
// writes bring the store to its revision.
func TestBackgroundRebuildRetiresAnIndexAhead(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 1), "")
	setRev := func(rev uint64) {
		require.NoError(t, e.db.Update(func(tx store.Tx) error {
			return tx.Bucket(store.BucketCatalog).Put(keyRev, store.U64(rev))
		}))
	}
	setRev(50)
	e.reopen() // index rebuilt at 50
	setRev(10)
	e.close()
	g := newBuildGate(t)
	e.openBackground(t, g)
	assert.Equal(t, "index ahead of the database", e.svc.Report().Reason)
	require.NoError(t, e.svc.Close())
	e.svc = nil
	setRev(50)
	require.NoError(t, e.db.Close())
	e.db = nil
	e.open()
	assert.True(t, e.svc.Report().Rebuilt, "the index from before the restore was taken as current")
	assert.Equal(t, uint64(50), e.svc.IndexRev())
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "a"}), 1)
}

// TestBackgroundRebuildFailureRetriedBySearch: a failed rebuild is logged,
// everything else still answers, the waiting read gets the error, and the
// next search rebuilds and answers.
func TestBackgroundRebuildFailureRetriedBySearch(t *testing.T) {
	e := seededWithoutIndex(t)
	g := newBuildGate(t)
	g.fail = errors.New("disk on fire")
	e.openBackground(t, g)
	err := e.svc.WaitIndex(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk on fire")
	assert.False(t, e.svc.Rebuilding())
	_, err = e.svc.Get(t.Context(), "alpha", "")
	require.NoError(t, err)
	mustUpsert(t, e.svc, sample("after", "1.0.0", 2), "")
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "after"}), 2)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "alpha"}), 2)
	assert.Equal(t, int32(2), g.calls.Load())
	assert.Equal(t, e.svc.Rev(), e.svc.IndexRev())
}

// TestBackgroundRebuildStartsOverWhenTheLogIsPruned: writes during the
// build whose change-log records are gone by the swap (here removed by
// hand, as pruning past MaxChanges does) make the rebuild go round again
// from a new snapshot that holds them.
func TestBackgroundRebuildStartsOverWhenTheLogIsPruned(t *testing.T) {
	e := seededWithoutIndex(t)
	g := newBuildGate(t)
	opened, ended := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(ended) })
	g.during = func() {
		select {
		case <-opened:
		case <-ended: // the test failed before Open returned
			return
		}
		mustUpsert(t, e.svc, sample("pruned", "1.0.0", 2), "")
		rev := e.svc.Rev()
		require.NoError(t, e.db.Update(func(tx store.Tx) error {
			return tx.Bucket(store.BucketCatalog).Delete(changeKey(rev))
		}))
	}
	e.openBackground(t, g)
	close(opened)
	g.open()
	require.NoError(t, e.svc.WaitIndex(t.Context()))
	assert.Equal(t, int32(2), g.calls.Load(), "the first round's catch-up could not reach back")
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "pruned"}), 2)
	assert.Equal(t, e.svc.Rev(), e.svc.IndexRev())
}

// TestReindexSupersedesBackgroundRebuild: an explicit reindex during a
// background rebuild cancels it and rebuilds itself; a search waiting on
// the background one is answered, not failed.
func TestReindexSupersedesBackgroundRebuild(t *testing.T) {
	e := seededWithoutIndex(t)
	g := newBuildGate(t)
	e.openBackground(t, g)
	found := make(chan []string, 1)
	go func() { found <- searchIDs(t, e.svc, index.Query{CookbookID: "alpha"}) }()
	within.Run(t, "Reindex during a background rebuild", func() { require.NoError(t, e.svc.Reindex(t.Context(), nil)) })
	within.Run(t, "the search that waited", func() { assert.Len(t, <-found, 2) })
	assert.False(t, e.svc.Rebuilding())
	assert.Equal(t, e.svc.Rev(), e.svc.IndexRev())
}

package catalog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWritesDoNotWaitForTheIndex: an upsert returns once committed while
// its index update is held back; a search issued then waits for the update
// and finds the write; updates that queued meanwhile are applied as one.
func TestWritesDoNotWaitForTheIndex(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 1), "")
	e.svc.indexers.Wait()
	hold := make(chan struct{})
	var applied []uint64
	var mu sync.Mutex
	setHook := func(fn func()) { e.svc.beforeIndex.Store(&fn) }
	setHook(func() { <-hold })
	t.Cleanup(func() { e.svc.beforeIndex.Store(nil) })

	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, id := range []string{"b", "c", "d"} {
			mustUpsert(t, e.svc, sample(id, "1.0.0", 2), "")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the upserts waited for the held index update")
	}
	assert.Equal(t, uint64(4), e.svc.Rev())

	found := make(chan []string)
	go func() { found <- searchIDs(t, e.svc, index.Query{CookbookID: "d"}) }()
	select {
	case <-found:
		t.Fatal("the search answered before the index had the writes")
	case <-time.After(100 * time.Millisecond):
	}
	setHook(func() {
		mu.Lock()
		applied = append(applied, e.svc.indexRev.Load())
		mu.Unlock()
	})
	close(hold)
	assert.Len(t, <-found, 2)
	e.svc.indexers.Wait()
	assert.Equal(t, uint64(4), e.svc.indexRev.Load())
	for _, id := range []string{"b", "c", "d"} {
		assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: id}), 2, id)
	}
	mu.Lock()
	defer mu.Unlock()
	// The first update was held at revision 1; what queued behind it (the
	// other two upserts) went in one batch.
	assert.LessOrEqual(t, len(applied), 1, "updates after the held one: %v", applied)
}

func TestMergeUpdates(t *testing.T) {
	doc := func(id, v string) index.Doc { return index.Doc{CookbookID: id, Version: v, EntryID: "e"} }
	gs := []groupTx{
		{first: 5, last: 5, upd: index.Update{Rev: 5, Cookbooks: []string{"a"}, Created: []string{"a"}, Docs: []index.Doc{doc("a", "1")}}},
		{first: 6, last: 7, upd: index.Update{Rev: 7, Cookbooks: []string{"a", "b", "c"}, Created: []string{"b"},
			Docs: []index.Doc{doc("a", "1"), doc("a", "2"), doc("b", "1"), doc("c", "9")}}},
		{first: 8, last: 8, upd: index.Update{Rev: 8, Cookbooks: []string{"b"}}}, // b deleted
	}
	got := mergeUpdates(gs)
	assert.Equal(t, uint64(8), got.Rev)
	assert.Equal(t, []string{"a", "b", "c"}, got.Cookbooks)
	assert.Equal(t, []string{"a", "b"}, got.Created)
	assert.Equal(t, []index.Doc{doc("a", "1"), doc("a", "2"), doc("c", "9")}, got.Docs)
	require.Equal(t, gs[0].upd, mergeUpdates(gs[:1]))
}

// TestIndexLagIsBoundedUnderConcurrentWriters: writers that outpace the
// index wait for it past maxIndexLag revisions, so the index stays close
// behind the store and the first read after a burst has little to catch
// up (unbounded, it fell a thousand revisions behind in five seconds).
func TestIndexLagIsBoundedUnderConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	const writers = 8
	for i := range 40 {
		mustUpsert(t, e.svc, sample(fmt.Sprintf("cb%d", i), "1.0.0", 3), "")
	}
	var worst atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				mustUpsert(t, e.svc, sample(fmt.Sprintf("cb%d", (w*5+k)%40), fmt.Sprintf("2.%d.%d", w, k), 3), "")
				if lag := e.svc.storeRev.Load() - e.svc.indexRev.Load(); lag > worst.Load() {
					worst.Store(lag)
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	assert.LessOrEqual(t, worst.Load(), uint64(maxIndexLag+writers), "largest lag seen by a writer")
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "cb1"}), 3)
}

// TestStoreRevisionOnlyRises: a commit that lands after a later revision was
// seen (another replica's, through the watch) does not lower it, so reads
// still catch up to the later one.
func TestStoreRevisionOnlyRises(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 1), "")
	e.svc.raiseStoreRev(10)
	e.svc.afterCommit(groupTx{first: 2, last: 2, upd: index.Update{Rev: 2, Cookbooks: []string{"a"}}})
	assert.Equal(t, uint64(10), e.svc.Rev())
	e.svc.raiseStoreRev(3)
	assert.Equal(t, uint64(10), e.svc.Rev())
	e.svc.indexers.Wait()
	e.svc.indexRev.Store(12)
	assert.Zero(t, e.svc.indexLag(), "an index ahead is not behind")
}

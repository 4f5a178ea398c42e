package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/resident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mappedSource is the index as the resident governor's source.
func mappedSource(ix *Index) resident.Source {
	return func(release func(resident.Range)) error {
		return ix.Mapped(func(addr uintptr, n int) { release(resident.Range{Addr: addr, Len: n}) })
	}
}

// The persisted segments' mappings are released over and over while
// writes add segments, merges retire them (unmapping their files) and
// searches read them: every search still answers as the index does alone
// (run with -race; a range released after its segment was unmapped would
// zero whatever was mapped there since).
func TestReleasingSegmentMappingsWhileTheIndexChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	var seed []Doc
	for i := range 300 {
		seed = append(seed, compactDocs(r, fmt.Sprintf("cb%03d", i))...)
	}
	ix := openBuilt(t, filepath.Join(t.TempDir(), "x.index"), 1, seed)
	var ranges int
	require.NoError(t, ix.Mapped(func(addr uintptr, n int) {
		ranges++
		assert.NotZero(t, addr)
		assert.Positive(t, n)
	}))
	require.Positive(t, ranges, "a built index has a persisted segment")

	g := resident.New(resident.Options{Budget: 1})
	g.Add("index", mappedSource(ix))
	stop := make(chan struct{})
	var trims atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			g.Trim()
			trims.Add(1)
		}
	})
	// The seed's cookbooks are never rewritten and the new ones match none
	// of the queries, so what they match holds.
	queries := []Query{{Text: "invoice report", Limit: 10}, {Text: "meeting", Limit: 25}, {ConnectorID: "conn1", Limit: 10}}
	want := make([]Result, len(queries))
	for i, q := range queries {
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		want[i] = res
	}
	wg.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			i := k % len(queries)
			res, err := ix.Search(context.Background(), queries[i])
			if assert.NoError(t, err) {
				sameAnswer(t, queries[i], want[i], res)
			}
		}
	})
	// New cookbooks only, ranked by their own words: written a persister
	// nap apart, each becomes a segment, and scorch merges them.
	wr := rand.New(rand.NewPCG(43, 44))
	for rev := uint64(2); rev < 14; rev++ {
		id := fmt.Sprintf("zz%02d", rev)
		docs := compactDocs(wr, id)
		for i := range docs {
			docs[i].Title, docs[i].Description, docs[i].ConnectorID = "unrelated words", "nothing shared", "conn9"
			docs[i].Verb, docs[i].Tags = "v.none", nil
		}
		require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{id}, Created: []string{id}, Docs: docs, Rev: rev}))
		time.Sleep(PersistNap + 20*time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Positive(t, trims.Load())
	for i, q := range queries {
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		sameAnswer(t, q, want[i], res)
	}
}

// sameAnswer compares a listing hit by hit; a text search by how many
// documents match (its scores, and so the order of its page, move with
// the number of documents in the index).
func sameAnswer(t *testing.T, q Query, want, got Result) {
	t.Helper()
	assert.Equal(t, want.Total, got.Total, "%+v", q)
	if q.Text == "" {
		assert.Equal(t, hitIDs(want), hitIDs(got), "%+v", q)
	}
}

func hitIDs(r Result) []string {
	var ids []string
	for _, h := range r.Items {
		ids = append(ids, h.CookbookID+"/"+h.EntryID)
	}
	return ids
}

package catalog

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/require"
)

// TestIndexAfterRandomWritesEqualsRebuild: concurrent random upserts
// (new versions, rewritten versions, versions below the latest) and
// deletes, committed in groups and indexed by merged queued updates, with
// reopens between rounds (the index persists and merges its segments),
// leave an index that answers every listing and search exactly as a full
// rebuild of the same store does.
func TestIndexAfterRandomWritesEqualsRebuild(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	words := []string{"invoice", "refund", "ticket", "deploy", "backup"}
	bundle := func(r *rand.Rand, id, version string) *Bundle {
		b := &Bundle{Type: BundleType, CookbookID: id, Version: version, Title: "Cookbook " + id + " " + words[r.Intn(len(words))]}
		for i := range 1 + r.Intn(4) {
			c := fmt.Sprint("conn", r.Intn(3))
			b.Entries = append(b.Entries, Entry{
				EntryID: fmt.Sprintf("entry_%d", i), EntryType: TypeRecipeVerb,
				Title:       words[r.Intn(len(words))] + " " + words[r.Intn(len(words))],
				Description: "Handles " + words[r.Intn(len(words))], Tags: []string{"t" + fmt.Sprint(r.Intn(3))},
				ConnectorID: c, Verb: fmt.Sprintf("%s.verb.%d", c, r.Intn(4)), Request: map[string]any{"n": float64(r.Intn(9))},
			})
		}
		return b
	}
	queries := []index.Query{}
	for _, all := range []bool{false, true} {
		queries = append(queries, index.Query{AllVersions: all, Limit: index.MaxLimit}, index.Query{AllVersions: all, Limit: 6})
		for c := range 3 {
			queries = append(queries, index.Query{ConnectorID: fmt.Sprint("conn", c), AllVersions: all, Limit: index.MaxLimit})
		}
		queries = append(queries, index.Query{Tags: []string{"t1"}, AllVersions: all, Limit: index.MaxLimit},
			index.Query{CookbookID: "cb2", AllVersions: all, Limit: index.MaxLimit})
		for _, w := range words {
			queries = append(queries, index.Query{Text: w, AllVersions: all, Limit: index.MaxLimit}, index.Query{Text: w + " handles", AllVersions: all, Limit: 4})
		}
	}
	answers := func() []index.Result {
		var out []index.Result
		for _, q := range queries {
			res, err := e.svc.Search(ctx, q)
			require.NoError(t, err)
			out = append(out, res)
		}
		return out
	}
	for round := range 3 {
		var wg sync.WaitGroup
		for w := range 4 {
			r := rand.New(rand.NewSource(int64(round*10 + w)))
			wg.Go(func() {
				for range 15 {
					id := fmt.Sprint("cb", r.Intn(5))
					version := fmt.Sprintf("1.%d.0", r.Intn(6))
					var err error
					if r.Intn(4) == 0 {
						_, err = e.svc.Delete(ctx, id, version)
					} else {
						_, err = e.svc.Upsert(ctx, bundle(r, id, version), UpsertOptions{Policy: PolicyOverwrite})
					}
					if err != nil && apperr.As(err).Code != apperr.CodeCatalogNotFound {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if round < 2 {
			e.reopen()
		}
	}
	live := answers()
	require.NoError(t, e.svc.Reindex(ctx, nil))
	rebuilt := answers()
	for i, q := range queries {
		require.Equal(t, rebuilt[i], live[i], "query %+v", q)
	}
	require.NotEmpty(t, rebuilt[0].Items)
}

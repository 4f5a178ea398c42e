package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/require"
)

// sortedByIndex is what topScored replaces: bleve sorting every match by
// score, then list_key.
func sortedByIndex(t *testing.T, ix *Index, q query.Query, limit int) ([]string, uint64) {
	t.Helper()
	req := bleve.NewSearchRequestOptions(q, limit, 0, false)
	req.SortBy([]string{"-_score", "list_key"})
	res, err := ix.bi.SearchInContext(context.Background(), req)
	require.NoError(t, err)
	out := make([]string, 0, len(res.Hits))
	for _, h := range res.Hits {
		out = append(out, fmt.Sprintf("%s@%v", h.ID, h.Score))
	}
	return out, res.Total
}

// topScored answers as an index-side sort by score then list_key does:
// the same hits, bit-equal scores, the same order and total, for pages
// that end inside groups of equal scores, over an index of several
// segments holding several versions of a cookbook.
func TestTopScoredEqualsTheIndexSort(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields("alpha beta gamma delta")
	path := filepath.Join(t.TempDir(), "x.index")
	doc := func(cb string, v, e int) Doc {
		w := func() string { return words[r.IntN(len(words))] }
		return Doc{CookbookID: cb, Version: fmt.Sprintf("%d.0.0", v), VersionSort: versionSort(v), Latest: true,
			EntryID: fmt.Sprintf("e%d", e), EntryType: "recipe.verb.v1", Title: w() + " " + w(),
			Description: w(), ConnectorID: "c" + fmt.Sprint(r.IntN(2)), Tags: []string{w()}}
	}
	var docs []Doc
	for i := range 150 {
		for e := range 4 {
			docs = append(docs, doc(fmt.Sprintf("cb%03d", i), 1+i%3, e))
			if i%5 == 0 {
				// An older version: exact-id clauses must skip it.
				older := doc(fmt.Sprintf("cb%03d", i), 4+i%3, e)
				older.Version, older.Latest = "0.9.0", false
				docs = append(docs, older)
			}
		}
	}
	ix := openBuilt(t, path, 1, docs)
	for i := range 4 {
		// A new cookbook, and a rewritten one whose documents in the
		// first segment are deleted: internal ids count those too.
		id, old := fmt.Sprintf("late%d", i), fmt.Sprintf("cb%03d", 10*i)
		require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{id, old}, Created: []string{id},
			Docs: []Doc{doc(id, 2, 0), doc(id, 2, 1), doc(old, 1, 0), doc(old, 1, 1)}, Rev: uint64(2 + i)}))
		time.Sleep(PersistNap + 30*time.Millisecond)
	}
	require.Greater(t, ix.segments(), uint64(1))

	ties := 0
	for _, text := range []string{"alpha", "beta gamma", "delta alpha beta", "gamma", "zeta", "alpha c1", "e1", "cb010", "cb005"} {
		for _, filter := range []string{"", "c0"} {
			for _, limit := range []int{1, 2, 5, 10, 37, 600, 1000} {
				q := Query{Text: text, ConnectorID: filter, Limit: limit}
				bq := query.NewBooleanQuery(nil, nil, nil)
				bq.AddMust(plainTextQuery(text))
				if filter != "" {
					c := query.NewTermQuery(filter)
					c.SetField("connector_id")
					bq.AddFilter(query.NewConjunctionQuery([]query.Query{c}))
				}
				want, wantTotal := sortedByIndex(t, ix, bq, limit)
				hits, total, err := ix.topScored(context.Background(), bq, limit)
				require.NoError(t, err)
				got := make([]string, 0, len(hits))
				for _, h := range hits {
					got = append(got, fmt.Sprintf("%s@%v", DocID(h.CookbookID, h.Version, h.EntryID), h.Score))
				}
				require.Equal(t, wantTotal, total, "%+v", q)
				require.Equal(t, want, got, "%+v", q)
				if len(hits) > 1 && hits[len(hits)-1].Score == hits[len(hits)-2].Score {
					ties++
				}
				// And Search gives the same page.
				res, err := ix.Search(context.Background(), q)
				require.NoError(t, err)
				require.Equal(t, total, res.Total)
				require.Len(t, res.Items, len(hits))
				for k := range hits {
					require.Equal(t, hits[k].CookbookID+hits[k].EntryID+hits[k].Version, res.Items[k].CookbookID+res.Items[k].EntryID+res.Items[k].Version)
					require.Equal(t, hits[k].Score, res.Items[k].Score, "the same score, to the bit")
				}
			}
		}
	}
	require.Greater(t, ties, 20, "pages ending inside ties were tried")

	// Listings without text: the same page as bleve's search request
	// sorted by list_key with the stored hits it loads itself.
	for _, filter := range []string{"c0", "c1"} {
		for _, limit := range []int{1, 7, 100, 1000} {
			q := Query{ConnectorID: filter, Limit: limit}
			c := query.NewTermQuery(filter)
			c.SetField("connector_id")
			older := query.NewTermQuery("0")
			older.SetField("latest")
			bq := query.NewBooleanQuery([]query.Query{query.NewConjunctionQuery([]query.Query{c})}, nil, []query.Query{older})
			req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
			req.Fields = []string{"hit"}
			req.Score = "none"
			req.SortBy([]string{"list_key"})
			want, err := ix.bi.SearchInContext(context.Background(), req)
			require.NoError(t, err)
			res, err := ix.Search(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, want.Total, res.Total, "%+v", q)
			require.Len(t, res.Items, len(want.Hits), "%+v", q)
			for k, h := range want.Hits {
				stored, err := decodeStoredHit(h.ID, []byte(h.Fields["hit"].(string)))
				require.NoError(t, err)
				require.Equal(t, stored, res.Items[k], "%+v item %d", q, k)
			}
		}
	}
}

// plainTextQuery is textQuery (latest versions) as bleve's own queries
// compose it, without the lighter forms Search uses for the exact-id
// clauses and for filters: what Search must answer exactly like.
func plainTextQuery(text string) query.Query {
	match := func(field string, boost float64) query.Query { return matchQuery(text, field, boost) }
	exact := func(field string, boost float64) query.Query {
		t := query.NewTermQuery(text)
		t.SetField(field)
		t.SetBoost(boost)
		older := query.NewTermQuery("0")
		older.SetField("latest")
		return query.NewBooleanQuery([]query.Query{t}, nil, []query.Query{older})
	}
	return query.NewDisjunctionQuery([]query.Query{
		match("title", boostTitle), match("text", boostText), exact("entry_id", boostExactID),
		exact("verb", boostExactField), exact("cookbook_id", boostExactField), exact("tags", boostExactField),
	})
}

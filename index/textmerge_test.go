package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTopTextEqualsBleve: random texts, with and without a filter, answer
// through topText exactly as bleve's own search of the plain query sorted
// by score then list_key does: the same hits in the same order, scores
// equal to the bit, the same total. The index has several segments,
// deleted documents and older versions, and is rewritten and merged half
// way; the texts repeat words, mix case,
// hold stop words and punctuation, and run past the terms topText takes.
func TestTopTextEqualsBleve(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	vocab := strings.Fields("inbox message send label draft calendar event invite weather forecast city file folder share sheet row the of and")
	w := func() string { return vocab[r.IntN(len(vocab))] }
	doc := func(cb string, v, e int, latest bool) Doc {
		d := Doc{CookbookID: cb, Version: fmt.Sprintf("%d.0.0", v), VersionSort: versionSort(v), Latest: latest,
			EntryID: fmt.Sprintf("e%d", e), EntryType: "recipe.verb.v1", ConnectorID: "c" + fmt.Sprint(r.IntN(3)),
			Verb: "svc." + w() + ".list"}
		for range 1 + r.IntN(4) {
			d.Title += w() + " "
		}
		for range r.IntN(12) {
			d.Description += w() + " "
		}
		if r.IntN(3) == 0 {
			d.Tags = []string{w()}
		}
		return d
	}
	var docs []Doc
	for i := range 300 {
		for e := range 3 {
			docs = append(docs, doc(fmt.Sprintf("cb%03d", i), 2, e, true))
			if i%7 == 0 {
				docs = append(docs, doc(fmt.Sprintf("cb%03d", i), 1, e, false))
			}
		}
	}
	ix := openBuilt(t, filepath.Join(t.TempDir(), "x.index"), 1, docs)
	for i := range 3 {
		id, old := fmt.Sprintf("late%d", i), fmt.Sprintf("cb%03d", 20*i+3)
		require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{id, old}, Created: []string{id},
			Docs: []Doc{doc(id, 1, 0, true), doc(old, 3, 0, true), doc(old, 3, 1, true)}, Rev: uint64(2 + i)}))
		time.Sleep(PersistNap + 30*time.Millisecond)
	}
	require.Greater(t, ix.segments(), uint64(1))

	fast := 0
	const runs = 400
	for run := range runs {
		if run == runs/2 {
			// Half way: rewrite some cookbooks and merge every segment
			// into one, so the documents renumber and the kept list_keys
			// of the old segments must not be used.
			for i := range 3 {
				old := fmt.Sprintf("cb%03d", 40*i+1)
				require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{old},
					Docs: []Doc{doc(old, 4, 0, true), doc(old, 4, 2, true)}, Rev: uint64(10 + i)}))
			}
			require.Eventually(t, func() bool {
				// Segments still being persisted are merged by a later try.
				return scorchOf(ix.bi).ForceMerge(context.Background(), nil) == nil && ix.segments() == 1
			}, 20*time.Second, 50*time.Millisecond)
		}
		var words []string
		for range 1 + r.IntN(12) {
			word := w()
			switch r.IntN(6) {
			case 0:
				word = strings.ToUpper(word)
			case 1:
				word += ","
			}
			words = append(words, word)
		}
		text := strings.Join(words, " ")
		var filter query.Query
		q := Query{Text: text, Limit: []int{1, 3, 10, 50, 1000}[r.IntN(5)]}
		bq := query.NewBooleanQuery(nil, nil, nil)
		bq.AddMust(plainTextQuery(text))
		if run%3 == 0 {
			q.ConnectorID = "c" + fmt.Sprint(r.IntN(3))
			c := query.NewTermQuery(q.ConnectorID)
			c.SetField("connector_id")
			filter = query.NewConjunctionQuery([]query.Query{c})
			bq.AddFilter(filter)
		}
		want, wantTotal := sortedByIndex(t, ix, bq, q.Limit)

		hits, total, ok, err := ix.topText(context.Background(), text, filter, q.Limit)
		require.NoError(t, err)
		if ok {
			fast++
			require.Equal(t, wantTotal, total, "%+v", q)
			got := make([]string, 0, len(hits))
			for _, h := range hits {
				got = append(got, fmt.Sprintf("%s@%v", DocID(h.CookbookID, h.Version, h.EntryID), h.Score))
			}
			require.Equal(t, want, got, "%+v", q)
		}
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		require.Equal(t, wantTotal, res.Total, "%+v", q)
		got := make([]string, 0, len(res.Items))
		for _, h := range res.Items {
			got = append(got, fmt.Sprintf("%s@%v", DocID(h.CookbookID, h.Version, h.EntryID), h.Score))
		}
		require.Equal(t, want, got, "%+v", q)
	}
	t.Logf("fast %d of %d", fast, runs)
	// Texts of eleven or more words, and of stop words alone, go to
	// topScored; most take the merge.
	require.Greater(t, fast, runs/2)
	require.Less(t, fast, runs)
}

// Searches running at once share the kept list_keys and answer as they do
// alone (run with -race: the cache is written by whichever reads first).
func TestConcurrentSearchesShareKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	words := strings.Fields("alpha beta gamma delta")
	var docs []Doc
	for i := range 400 {
		docs = append(docs, Doc{CookbookID: fmt.Sprintf("cb%03d", i), Version: "1.0.0", VersionSort: versionSort(1), Latest: true,
			EntryID: "e", EntryType: "recipe.verb.v1", Title: words[r.IntN(4)] + " " + words[r.IntN(4)]})
	}
	ix := openBuilt(t, filepath.Join(t.TempDir(), "x.index"), 1, docs)
	queries := []Query{{Text: "alpha beta", Limit: 5}, {Text: "gamma", Limit: 20}, {Text: "delta alpha", Limit: 3}}
	want := make([]Result, len(queries))
	for i, q := range queries {
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		want[i] = res
	}
	ix.keys = keyCache{} // start cold, so the goroutines race to fill it
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 30 {
				i := (g + k) % len(queries)
				res, err := ix.Search(context.Background(), queries[i])
				if assert.NoError(t, err) {
					assert.Equal(t, want[i], res)
				}
			}
		})
	}
	wg.Wait()
}

package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var compactWords = strings.Fields("invoice report customer order payment email calendar meeting contract ticket " +
	"refund shipment survey agenda budget")

// compactDocs is one cookbook's entries with words drawn from r.
func compactDocs(r *rand.Rand, cookbook string) []Doc {
	w := func() string { return compactWords[r.IntN(len(compactWords))] }
	var docs []Doc
	for e := range 5 {
		docs = append(docs, Doc{CookbookID: cookbook, Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true,
			EntryID: fmt.Sprintf("entry_%d", e), EntryType: "recipe.verb.v1", Title: w() + " " + w(),
			Description: w() + " " + w() + " " + w(), ConnectorID: "conn" + fmt.Sprint(r.IntN(3)),
			Verb: "v." + w(), Tags: []string{w()}})
	}
	return docs
}

// answers is what a fixed set of searches returns, hits in order.
func answers(t *testing.T, ix *Index) []string {
	t.Helper()
	var out []string
	queries := []Query{{Limit: MaxLimit}, {ConnectorID: "conn1", Limit: MaxLimit}, {Tags: []string{"refund"}, Limit: 7}}
	for _, w := range compactWords {
		queries = append(queries, Query{Text: w, Limit: 10}, Query{Text: w + " " + compactWords[len(w)%len(compactWords)], Limit: 25})
	}
	for _, q := range queries {
		res, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		line := fmt.Sprintf("%+v total=%d:", q, res.Total)
		for _, h := range res.Items {
			line += fmt.Sprintf(" %s/%s@%.6f", h.CookbookID, h.EntryID, h.Score)
		}
		out = append(out, line)
	}
	return out
}

// sameAnswers fails at the first search whose answer differs.
func sameAnswers(t *testing.T, want, got []string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i] != got[i] {
			w, g := strings.Fields(want[i]), strings.Fields(got[i])
			for j := range min(len(w), len(g)) {
				if w[j] != g[j] {
					t.Fatalf("search %d answers differently from word %d: want %q, got %q\nwhole answer: %.300s", i, j, w[j], g[j], want[i])
				}
			}
			t.Fatalf("search %d: answers of %d and %d words", i, len(w), len(g))
		}
	}
}

// An index left in many segments by a burst of updates is merged into one
// once updates stop, and answers every search exactly as before.
func TestSettledIndexIsCompacted(t *testing.T) {
	old := compactQuiet
	compactQuiet = 400 * time.Millisecond
	t.Cleanup(func() { compactQuiet = old })
	r := rand.New(rand.NewPCG(7, 8))
	path := filepath.Join(t.TempDir(), "x.index")
	var seed []Doc
	for i := range 300 {
		seed = append(seed, compactDocs(r, fmt.Sprintf("cb%03d", i))...)
	}
	ix := openBuilt(t, path, 1, seed)

	// Updates a persister nap apart are written as segments of their own;
	// stop before scorch's own merge policy takes them (at about ten).
	rev := uint64(1)
	for ix.segments() <= compactMaxSegments {
		require.Less(t, rev, uint64(9), "the updates left the index in more than %d segments", compactMaxSegments)
		rev++
		id := fmt.Sprintf("new%02d", rev)
		require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{id}, Created: []string{id}, Docs: compactDocs(r, id), Rev: rev}))
		time.Sleep(PersistNap + 60*time.Millisecond)
	}
	before := answers(t, ix)

	require.Eventually(t, func() bool {
		ix.cmp.mu.Lock()
		defer ix.cmp.mu.Unlock()
		return ix.cmp.merges == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return ix.segments() == 1 }, 5*time.Second, 10*time.Millisecond)
	sameAnswers(t, before, answers(t, ix))
	got, err := ix.Rev()
	require.NoError(t, err)
	assert.Equal(t, rev, got)

	// A write after that adds a segment and causes no merge.
	require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{"cb001"}, Docs: compactDocs(r, "cb001"), Rev: rev + 1}))
	time.Sleep(compactQuiet + 300*time.Millisecond)
	ix.cmp.mu.Lock()
	assert.Equal(t, 1, ix.cmp.merges)
	ix.cmp.mu.Unlock()
}

// Closing an index while its compaction is pending or running returns
// promptly, and an index closed before its quiet period ends never merges.
func TestCloseStopsCompaction(t *testing.T) {
	old := compactQuiet
	compactQuiet = time.Millisecond
	t.Cleanup(func() { compactQuiet = old })
	r := rand.New(rand.NewPCG(9, 10))
	path := filepath.Join(t.TempDir(), "x.index")
	require.NoError(t, Build(context.Background(), path, Source{Rev: 1, Each: func(func(Doc) error) error { return nil }}, nil))
	for round := range 5 {
		ix, err := Open(path)
		require.NoError(t, err)
		for i := range 6 {
			id := fmt.Sprintf("r%d-%d", round, i)
			require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{id}, Created: []string{id}, Docs: compactDocs(r, id), Rev: uint64(2 + round*10 + i)}))
		}
		time.Sleep(time.Duration(round) * 3 * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- ix.Close() }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(FlushTimeout):
			t.Fatal("Close hung")
		}
		ix.scheduleCompaction() // after Close: a no-op, never a panic
	}
}

// Merges are spaced by the quiet period, by compactEvery after the last
// one, and by a hundred times its duration when it took long.
func TestCompactionSpacing(t *testing.T) {
	now := time.Now()
	var c compactor
	assert.Equal(t, compactQuiet, c.delay(now), "never merged: the quiet period")
	c.last, c.took = now.Add(-time.Minute), 100*time.Millisecond
	assert.Equal(t, compactQuiet, c.delay(now), "a short merge a minute ago")
	c.last = now.Add(-10 * time.Second)
	assert.Equal(t, 20*time.Second, c.delay(now), "compactEvery after the last merge")
	c.took = 8 * time.Second
	assert.Equal(t, 790*time.Second, c.delay(now), "a hundred times an 8 s merge, from its start")
}

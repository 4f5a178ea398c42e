package index

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// catalogModel is what the index should hold: cookbook → version number →
// that version's entries.
type catalogModel map[string]map[int][]Doc

// docs lists a cookbook's documents, its highest version flagged latest.
func (m catalogModel) docs(cb string) []Doc {
	vs := slices.Sorted(maps.Keys(m[cb]))
	var out []Doc
	for _, v := range vs {
		for _, d := range m[cb][v] {
			d.Latest = v == vs[len(vs)-1]
			out = append(out, d)
		}
	}
	return out
}

func (m catalogModel) all() []Doc {
	var out []Doc
	for _, cb := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m.docs(cb)...)
	}
	return out
}

var (
	mergeWords      = []string{"alpha", "bravo", "charlie", "delta", "echo"}
	mergeConnectors = []string{"google", "slack", "github"}
	mergeTags       = []string{"mail", "chat", "code"}
)

func randomVersion(r *rand.Rand, cb string, v int) []Doc {
	var docs []Doc
	for e := range 5 {
		if r.Intn(3) == 0 {
			continue
		}
		c := mergeConnectors[r.Intn(len(mergeConnectors))]
		docs = append(docs, Doc{CookbookID: cb, Version: fmt.Sprintf("%d.0.0", v), VersionSort: versionSort(v),
			EntryID: fmt.Sprintf("e%d", e), EntryType: []string{"recipe.verb.v1", "template.plan.v1"}[r.Intn(2)],
			Title:       mergeWords[r.Intn(len(mergeWords))] + " " + mergeWords[r.Intn(len(mergeWords))],
			Description: "does " + mergeWords[r.Intn(len(mergeWords))], ConnectorID: c, Verb: c + ".verb." + strconv.Itoa(e),
			Tags: []string{mergeTags[r.Intn(len(mergeTags))]}, CookbookTitle: "Cookbook " + cb})
	}
	if len(docs) == 0 {
		return randomVersion(r, cb, v)
	}
	return docs
}

// mergeQueries are the searches the live index and a rebuild must answer
// alike: listings (sorted on the tie-break fields' doc values) and text
// searches, with
// and without older versions, filtered and not, with pages small enough to
// cut through ties.
func mergeQueries() []Query {
	var qs []Query
	for _, all := range []bool{false, true} {
		qs = append(qs, Query{AllVersions: all, Limit: MaxLimit}, Query{AllVersions: all, Limit: 7})
		for _, c := range mergeConnectors {
			qs = append(qs, Query{ConnectorID: c, AllVersions: all, Limit: MaxLimit})
		}
		for _, tag := range mergeTags {
			qs = append(qs, Query{Tags: []string{tag}, EntryType: "recipe.verb.v1", AllVersions: all, Limit: MaxLimit})
		}
		qs = append(qs, Query{CookbookID: "cb3", AllVersions: all, Limit: MaxLimit})
		for _, w := range mergeWords {
			qs = append(qs, Query{Text: w, AllVersions: all, Limit: MaxLimit}, Query{Text: w + " does", AllVersions: all, Limit: 5})
		}
		qs = append(qs, Query{Text: "google.verb.1", AllVersions: all, Limit: MaxLimit}, Query{Text: "charlie", ConnectorID: "slack", AllVersions: all, Limit: MaxLimit})
	}
	return qs
}

// TestIncrementalIndexEqualsRebuild: after random writes and deletes, each
// its own batch, with the persister merging in-memory batches and scorch
// merging the files, every search answers exactly as a fresh build of the
// same documents does (items, order, scores, totals), and the full listing
// comes in tie-break order.
func TestIncrementalIndexEqualsRebuild(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { checkIncrementalEqualsRebuild(t, seed) })
	}
}

func checkIncrementalEqualsRebuild(t *testing.T, seed int64) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.index")
	require.NoError(t, Build(ctx, path, Source{Rev: 1, Each: func(func(Doc) error) error { return nil }}, nil))
	ix, err := Open(path)
	require.NoError(t, err)
	defer ix.Close()

	r := rand.New(rand.NewSource(seed))
	m := catalogModel{}
	rev := uint64(1)
	step := func() {
		// One or two cookbooks per update, as when queued writes merge.
		var cbs, created []string
		for range 1 + r.Intn(2) {
			cb := fmt.Sprintf("cb%d", r.Intn(6))
			if slices.Contains(cbs, cb) {
				continue
			}
			cbs = append(cbs, cb)
			if len(m[cb]) == 0 {
				created = append(created, cb)
				m[cb] = map[int][]Doc{}
			}
			vs := slices.Sorted(maps.Keys(m[cb]))
			switch op := r.Intn(10); {
			case op < 5 || len(vs) == 0: // a new version, most often the highest
				v := 1 + r.Intn(12)
				m[cb][v] = randomVersion(r, cb, v)
			case op < 7: // an existing version rewritten
				v := vs[r.Intn(len(vs))]
				m[cb][v] = randomVersion(r, cb, v)
			case op < 9: // a version deleted (often the latest)
				v := vs[len(vs)-1]
				if r.Intn(2) == 0 {
					v = vs[r.Intn(len(vs))]
				}
				delete(m[cb], v)
			default: // the whole cookbook deleted
				clear(m[cb])
			}
		}
		var docs []Doc
		for _, cb := range cbs {
			docs = append(docs, m.docs(cb)...)
			if len(m[cb]) == 0 {
				delete(m, cb)
			}
		}
		rev++
		require.NoError(t, ix.Apply(ctx, Update{Cookbooks: cbs, Created: created, Docs: docs, Rev: rev}))
	}
	check := func(round int) {
		ref := filepath.Join(dir, fmt.Sprintf("ref-%d.index", round))
		all := m.all()
		require.NoError(t, Build(ctx, ref, Source{Rev: rev, Total: len(all), Each: func(yield func(Doc) error) error {
			for _, d := range all {
				if err := yield(d); err != nil {
					return err
				}
			}
			return nil
		}}, nil))
		rx, err := Open(ref)
		require.NoError(t, err)
		defer rx.Close()
		for _, q := range mergeQueries() {
			want, err := rx.Search(ctx, q)
			require.NoError(t, err)
			got, err := ix.Search(ctx, q)
			require.NoError(t, err)
			require.Equal(t, want, got, "round %d, query %+v", round, q)
		}
		// The live index lists in tie-break order.
		var latest []Doc
		for _, d := range all {
			if d.Latest {
				latest = append(latest, d)
			}
		}
		slices.SortFunc(latest, func(a, b Doc) int {
			return cmp.Or(-cmp.Compare(a.VersionSort, b.VersionSort), cmp.Compare(a.CookbookID, b.CookbookID), cmp.Compare(a.EntryID, b.EntryID))
		})
		var want []string
		for _, d := range latest {
			want = append(want, d.ID())
		}
		got, err := ix.Search(ctx, Query{Limit: MaxLimit})
		require.NoError(t, err)
		var ids []string
		for _, h := range got.Items {
			ids = append(ids, DocID(h.CookbookID, h.Version, h.EntryID))
		}
		require.Equal(t, want, ids, "round %d: the listing in tie-break order", round)
		n, err := ix.DocCount()
		require.NoError(t, err)
		require.Equal(t, uint64(len(all)), n)
	}
	for round := range 3 {
		for range 20 {
			step()
			if r.Intn(6) == 0 { // the persister writes (and merges) what is in memory
				ix.waitPersisted(FlushTimeout)
			}
		}
		check(round)
	}
	stats := scorchStats(ix.bi)
	merged, _ := stats["TotFileMergeSegments"].(uint64)
	memMerged, _ := stats["TotMemMergeSegments"].(uint64)
	require.NotZero(t, merged+memMerged, "segments were merged")
}

// TestApplyFindsEveryDocumentOfLargeCookbooks: an update finds every
// indexed document of a cookbook of more than one page (1,000) of them, so
// the documents of a deleted version all go.
func TestApplyFindsEveryDocumentOfLargeCookbooks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.index")
	require.NoError(t, Build(ctx, path, Source{Rev: 1, Each: func(func(Doc) error) error { return nil }}, nil))
	ix, err := Open(path)
	require.NoError(t, err)
	defer ix.Close()
	m := catalogModel{"big": {}}
	for v := 1; v <= 3; v++ {
		var docs []Doc
		for e := range 450 {
			docs = append(docs, Doc{CookbookID: "big", Version: fmt.Sprintf("%d.0.0", v), VersionSort: versionSort(v),
				EntryID: fmt.Sprintf("e%03d", e), EntryType: "recipe.verb.v1", Title: "Quokka"})
		}
		m["big"][v] = docs
	}
	require.NoError(t, ix.Apply(ctx, Update{Cookbooks: []string{"big"}, Created: []string{"big"}, Docs: m.docs("big"), Rev: 2}))
	delete(m["big"], 2)
	delete(m["big"], 3)
	require.NoError(t, ix.Apply(ctx, Update{Cookbooks: []string{"big"}, Docs: m.docs("big"), Rev: 3}))
	n, err := ix.DocCount()
	require.NoError(t, err)
	require.Equal(t, 450, int(n), "every document of the deleted versions is gone")
	r, err := ix.Search(ctx, Query{Text: "quokka", AllVersions: true, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, uint64(450), r.Total)
	require.True(t, r.Items[0].Latest)
}

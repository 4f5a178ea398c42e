package catalog

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListSkipsOnlyRowsTheFilterDrops: filtered listings, which skip rows
// by their raw bytes, equal the same filter applied to the full listing,
// for tags and queries with the text that could trip a byte-level check:
// letter case, words across tags, JSON escapes, non-ASCII letters whose
// lower case is ASCII (K, the Kelvin sign), entry tags that are not
// cookbook tags.
func TestListSkipsOnlyRowsTheFilterDrops(t *testing.T) {
	e := newEnv(t)
	titles := []string{"Send EMAIL now", "Kelvin \u212a scale", "Fish & <chips>", "İstanbul trips", "plain one", `quote "q" here`,
		"untagged", "brackets"}
	tags := [][]string{{"Alpha", "beta"}, {"beta", "gamma"}, {"a&b", "<x>"}, {"café"}, {"t0"}, {`say "hi"`},
		nil, {`x],"entry_count":1`, "]", "beta]"}}
	for i, title := range titles {
		for _, v := range []string{"1.0.0", "2.0.0"} {
			b := sample("cb"+string(rune('a'+i)), v, 2)
			b.Title, b.Tags = title, tags[i]
			b.Description = "Description " + strings.ToUpper(title)
			if title == "untagged" {
				// Entries carry the tags a filter looks for; the cookbook
				// has none of its own.
				for j := range b.Entries {
					b.Entries[j].Tags = []string{"beta", "t0", "]"}
				}
			}
			mustUpsert(t, e.svc, b, "")
		}
	}
	all, err := e.svc.List(t.Context(), ListFilter{})
	require.NoError(t, err)
	require.Len(t, all, 16)
	keep := func(f ListFilter, it Item) bool {
		q := strings.ToLower(strings.TrimSpace(f.Query))
		if f.Tag != "" && !slices.Contains(it.Tags, f.Tag) {
			return false
		}
		if f.LatestOnly && !it.Latest {
			return false
		}
		return q == "" || strings.Contains(strings.ToLower(it.CookbookID), q) || strings.Contains(strings.ToLower(it.Title), q) ||
			strings.Contains(strings.ToLower(it.Description), q) || strings.Contains(strings.ToLower(strings.Join(it.Tags, " ")), q)
	}
	var filters []ListFilter
	for _, tag := range []string{"Alpha", "alpha", "beta", "a&b", "<x>", "café", `say "hi"`, "t0", "t1", "none",
		"]", "beta]", `x],"entry_count":1`, "x", "sample"} {
		filters = append(filters, ListFilter{Tag: tag}, ListFilter{Tag: tag, LatestOnly: true})
	}
	for _, q := range []string{"email", "EMAIL", "send email", "alpha beta", "beta gamma", "k", "kelvin", "istanbul", "i", "trips",
		"fish & <chips>", "chips", "\"q\"", "quote", "cookbook", "cbc", "description", "zzz", "café", " plain "} {
		filters = append(filters, ListFilter{Query: q}, ListFilter{Query: q, Tag: "beta"})
	}
	for _, f := range filters {
		got, err := e.svc.List(t.Context(), f)
		require.NoError(t, err)
		var want []Item
		for _, it := range all {
			if keep(f, it) {
				want = append(want, it)
			}
		}
		if want == nil {
			want = []Item{}
		}
		assert.Equal(t, want, got, "%+v", f)
	}
	// The Kelvin sign lower-cases to an ASCII k: found by "k", though the
	// row's bytes hold no k in that title.
	got, err := e.svc.List(t.Context(), ListFilter{Query: "\u212a"})
	require.NoError(t, err)
	assert.NotEmpty(t, got)
}

// TestListingsLatestIsTheStoredLatest: a listing of latest versions reads
// each cookbook's latest from its list rows, Get from its bundles; through
// upserts out of order, prereleases and deletes of the latest and of older
// versions, the two name the same version of every cookbook.
func TestListingsLatestIsTheStoredLatest(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	versions := map[string][]string{
		"cba": {"1.0.0", "1.10.0", "1.9.0", "1.2.0"},
		"cbb": {"2.0.0-rc.1", "1.9.9", "2.0.0-beta.2", "2.0.0-rc.10"},
		"cbc": {"0.1.0"},
		"cbd": {"3.0.0", "3.0.0-alpha", "10.0.0", "9.99.99"},
	}
	for _, id := range slices.Sorted(maps.Keys(versions)) {
		for _, v := range versions[id] {
			mustUpsert(t, e.svc, sample(id, v, 1), "")
		}
	}
	check := func(step string) {
		t.Helper()
		items, err := e.svc.List(ctx, ListFilter{LatestOnly: true})
		require.NoError(t, err)
		latest := map[string]string{}
		for _, it := range items {
			assert.True(t, it.Latest)
			assert.Empty(t, latest[it.CookbookID], "%s: one latest version of %s", step, it.CookbookID)
			latest[it.CookbookID] = it.Version
		}
		all, err := e.svc.List(ctx, ListFilter{})
		require.NoError(t, err)
		for _, it := range all {
			assert.Equal(t, latest[it.CookbookID] == it.Version, it.Latest, "%s: %s@%s", step, it.CookbookID, it.Version)
		}
		for id := range versions {
			st, err := e.svc.Get(ctx, id, "")
			if err != nil {
				assert.Empty(t, latest[id], "%s: %s has no versions left", step, id)
				continue
			}
			assert.Equal(t, st.Bundle.Version, latest[id], "%s: %s", step, id)
		}
	}
	check("after upserts")
	for _, del := range [][2]string{{"cba", "1.10.0"}, {"cbb", "1.9.9"}, {"cbd", "10.0.0"}, {"cbd", "9.99.99"}, {"cbc", "0.1.0"}} {
		_, err := e.svc.Delete(ctx, del[0], del[1])
		require.NoError(t, err, "%v", del)
		check("after deleting " + del[0] + "@" + del[1])
	}
	mustUpsert(t, e.svc, sample("cba", "1.10.1", 1), "")
	check("after a new latest")
}

package index

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	bledoc "github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListKeyOrder(t *testing.T) {
	// Version sort keys as the catalog produces them: higher sorts later.
	docs := []Doc{
		{CookbookID: "b", Version: "2.0.0", VersionSort: "a2a0a0~ 2.0.0", EntryID: "x"},
		{CookbookID: "a", Version: "2.0.0", VersionSort: "a2a0a0~ 2.0.0", EntryID: "y"},
		{CookbookID: "a", Version: "2.0.0", VersionSort: "a2a0a0~ 2.0.0", EntryID: "x"},
		{CookbookID: "a", Version: "2.0.0-rc.1", VersionSort: "a2a0a0!1rc,0a1 2.0.0-rc.1", EntryID: "x"},
		{CookbookID: "z", Version: "10.0.0", VersionSort: "b10a0a0~ 10.0.0", EntryID: "a"},
		{CookbookID: "a", Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", EntryID: "a"},
	}
	keys := make([]string, len(docs))
	for i, d := range docs {
		keys[i] = listKey(d)
	}
	sort.Strings(keys)
	want := []string{listKey(docs[4]), listKey(docs[2]), listKey(docs[1]), listKey(docs[0]), listKey(docs[3]), listKey(docs[5])}
	assert.Equal(t, want, keys)
	// A version key that is a prefix of another sorts after it (lower).
	assert.Less(t, listKey(Doc{VersionSort: "ab", CookbookID: "c", EntryID: "e"}), listKey(Doc{VersionSort: "a", CookbookID: "c", EntryID: "e"}))
}

func TestBuildOpenSearchAndMappingCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.index")
	docs := []Doc{
		{CookbookID: "mail", Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true, EntryID: "send", EntryType: "template.plan.v1",
			Title: "Send an email", Description: "Compose and send", ConnectorID: "google", Verb: "google.gmail.drafts.send", Tags: []string{"gmail", "send"}},
		{CookbookID: "mail", Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true, EntryID: "labels", EntryType: "recipe.verb.v1",
			Title: "List labels", ConnectorID: "google", Verb: "google.gmail.labels.list", Tags: []string{"gmail"}},
	}
	var progress [][2]int
	err := Build(context.Background(), path, Source{Total: 2, Rev: 7, Each: func(yield func(Doc) error) error {
		for _, d := range docs {
			if err := yield(d); err != nil {
				return err
			}
		}
		return nil
	}}, func(d, total int) { progress = append(progress, [2]int{d, total}) })
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 2}, progress[len(progress)-1])
	ix, err := Open(path)
	require.NoError(t, err)
	rev, err := ix.Rev()
	require.NoError(t, err)
	assert.Equal(t, uint64(7), rev)
	res, err := ix.Search(context.Background(), Query{Text: "emails"})
	require.NoError(t, err)
	require.Len(t, res.Items, 1, "English stemming: emails finds email")
	assert.Equal(t, "send", res.Items[0].EntryID)
	res, err = ix.Search(context.Background(), Query{Text: "google.gmail.labels.list"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Items)
	assert.Equal(t, "labels", res.Items[0].EntryID, "an exact verb ranks first")
	res, err = ix.Search(context.Background(), Query{Text: "labels list"})
	require.NoError(t, err)
	assert.Equal(t, "labels", res.Items[0].EntryID)

	require.NoError(t, ix.Apply(context.Background(), Update{Cookbooks: []string{"mail"}, Docs: docs[:1], Rev: 8}))
	n, err := ix.DocCount()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n, "documents of a re-indexed cookbook that are gone are deleted")
	require.NoError(t, ix.Close())

	// Reopened: the revision persisted with the batch.
	ix, err = Open(path)
	require.NoError(t, err)
	rev, _ = ix.Rev()
	assert.Equal(t, uint64(8), rev)
	require.NoError(t, ix.Close())

	_, err = Open(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, ErrNeedsRebuild)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk"), []byte("x"), 0o600))
	_, err = Open(filepath.Join(dir, "junk"))
	assert.ErrorIs(t, err, ErrNeedsRebuild)
}

// TestListKeyDocValuesUncompressed: the document is the mapping's, with
// only the doc values of list_key and sig marked uncompressed and
// unchunked.
func TestListKeyDocValuesUncompressed(t *testing.T) {
	m := NewMapping()
	d := Doc{CookbookID: "cb", Version: "1.0.0", VersionSort: "1.0.0", EntryID: "e", EntryType: "recipe.verb.v1", Title: "Send mail", Latest: true}
	doc, err := bleveDocument(m, d)
	require.NoError(t, err)
	mapped := bledoc.NewDocument(d.ID())
	require.NoError(t, m.MapDocument(mapped, toBleve(d)))
	// The mapping's fields, less the empty text fields (the older
	// versions' words of a latest entry, an absent description).
	plain := mapped.Fields[:0]
	for _, f := range mapped.Fields {
		if textFields[f.Name()] && len(f.Value()) == 0 {
			continue
		}
		plain = append(plain, f)
	}
	require.NotEmpty(t, plain)
	require.Len(t, doc.Fields, len(plain))
	seen := 0
	for i, f := range doc.Fields {
		require.Equal(t, plain[i].Name(), f.Name())
		require.Equal(t, plain[i].Value(), f.Value())
		if f.Name() == "list_key" || f.Name() == "sig" {
			seen++
			require.True(t, f.Options().SkipDVCompression())
			require.True(t, f.Options().SkipDVChunking())
			require.True(t, f.Options().IncludeDocValues())
			continue
		}
		require.Equal(t, plain[i].Options(), f.Options(), f.Name())
	}
	require.Equal(t, 2, seen)
}

// TestOlderVersionsStayOutOfDefaultSearches: an older version's entries are
// found by text only with AllVersions, including by an exact id, and a
// default search counts only latest entries in its total.
func TestOlderVersionsStayOutOfDefaultSearches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	entry := func(version, vs string, latest bool, title string) Doc {
		return Doc{CookbookID: "mail", Version: version, VersionSort: vs, Latest: latest, EntryID: "send", EntryType: "template.plan.v1",
			Title: title, Description: "Compose a message", ConnectorID: "google", Verb: "google.gmail.drafts.send", Tags: []string{"gmail"}}
	}
	docs := []Doc{
		entry("2.0.0", "a2a0a0~ 2.0.0", true, "Send an email"),
		entry("1.0.0", "a1a0a0~ 1.0.0", false, "Send an email or a fax"),
	}
	ix := openBuilt(t, path, 1, docs)
	ctx := context.Background()
	versions := func(r Result) []string {
		var vs []string
		for _, h := range r.Items {
			vs = append(vs, h.Version)
		}
		return vs
	}
	for _, text := range []string{"email", "send", "google.gmail.drafts.send", "gmail", "compose message"} {
		r, err := ix.Search(ctx, Query{Text: text})
		require.NoError(t, err)
		assert.Equal(t, []string{"2.0.0"}, versions(r), text)
		assert.Equal(t, uint64(1), r.Total, text)
		r, err = ix.Search(ctx, Query{Text: text, AllVersions: true})
		require.NoError(t, err)
		assert.Equal(t, []string{"2.0.0", "1.0.0"}, versions(r), text)
		assert.Equal(t, uint64(2), r.Total, text)
	}
	// A word only the older version has.
	r, err := ix.Search(ctx, Query{Text: "fax"})
	require.NoError(t, err)
	assert.Empty(t, r.Items)
	assert.Zero(t, r.Total)
	r, err = ix.Search(ctx, Query{Text: "fax", AllVersions: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"1.0.0"}, versions(r))
	assert.False(t, r.Items[0].Latest)
	// Listings keep excluding older versions.
	r, err = ix.Search(ctx, Query{ConnectorID: "google"})
	require.NoError(t, err)
	assert.Equal(t, []string{"2.0.0"}, versions(r))
	r, err = ix.Search(ctx, Query{ConnectorID: "google", AllVersions: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"2.0.0", "1.0.0"}, versions(r))
}

// TestApplyIndexesOnlyChangedDocuments: an update that re-sends a
// cookbook's unchanged documents indexes only those that changed (the
// displaced latest version, the new one), deletes the ones left out, and
// searches see the result.
func TestApplyIndexesOnlyChangedDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	doc := func(v, vs string, latest bool, entry string) Doc {
		return Doc{CookbookID: "mail", Version: v, VersionSort: vs, Latest: latest, EntryID: entry, EntryType: "recipe.verb.v1",
			Title: "Send " + entry, ConnectorID: "google", Verb: "google.gmail.send"}
	}
	v1 := []Doc{doc("1.0.0", "a1", false, "a"), doc("1.0.0", "a1", false, "b")}
	v2 := []Doc{doc("2.0.0", "a2", true, "a"), doc("2.0.0", "a2", true, "b")}
	ix := openBuilt(t, path, 1, append(append([]Doc{}, v1...), v2...))
	updates := func() uint64 {
		adv, err := ix.bi.Advanced()
		require.NoError(t, err)
		return adv.(*scorch.Scorch).StatsMap()["TotUpdates"].(uint64)
	}
	ctx := context.Background()

	// Version 3 arrives: 2.0.0 is no longer latest; 1.0.0 is unchanged.
	before := updates()
	v2old := []Doc{doc("2.0.0", "a2", false, "a"), doc("2.0.0", "a2", false, "b")}
	v3 := []Doc{doc("3.0.0", "a3", true, "a")}
	require.NoError(t, ix.Apply(ctx, Update{Cookbooks: []string{"mail"}, Rev: 2, Docs: append(append(append([]Doc{}, v1...), v2old...), v3...)}))
	assert.Equal(t, uint64(3), updates()-before, "the two displaced documents and the new one")
	r, err := ix.Search(ctx, Query{Text: "send"})
	require.NoError(t, err)
	require.Len(t, r.Items, 1)
	assert.Equal(t, "3.0.0", r.Items[0].Version)
	r, err = ix.Search(ctx, Query{Text: "send", AllVersions: true})
	require.NoError(t, err)
	assert.Len(t, r.Items, 5)

	// The same update again changes nothing; dropping 1.0.0 deletes it.
	before = updates()
	require.NoError(t, ix.Apply(ctx, Update{Cookbooks: []string{"mail"}, Rev: 3, Docs: append(append([]Doc{}, v2old...), v3...)}))
	assert.Zero(t, updates()-before)
	r, err = ix.Search(ctx, Query{CookbookID: "mail", AllVersions: true})
	require.NoError(t, err)
	assert.Len(t, r.Items, 3)
	rev, _ := ix.Rev()
	assert.Equal(t, uint64(3), rev)
}

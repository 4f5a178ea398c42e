package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bledoc "github.com/blevesearch/bleve/v2/document"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTieBreakOrder: hits that score the same, and listings, come in
// tie-break order: higher version first by the version sort keys the
// catalog makes (semver precedence: 10.0.0 above 2.0.0, a pre-release
// below its release), then cookbook_id, then entry_id; whatever order they
// were indexed in.
func TestTieBreakOrder(t *testing.T) {
	doc := func(cb, version, vs, entry string) Doc {
		return Doc{CookbookID: cb, Version: version, VersionSort: vs, EntryID: entry, EntryType: "recipe.verb.v1", Title: "Quokka sighting"}
	}
	docs := []Doc{
		doc("b", "2.0.0", "a2a0a0~ 2.0.0", "x"),
		doc("a", "2.0.0", "a2a0a0~ 2.0.0", "y"),
		doc("a", "2.0.0", "a2a0a0~ 2.0.0", "x"),
		doc("a", "2.0.0-rc.1", "a2a0a0!1rc,0a1 2.0.0-rc.1", "x"),
		doc("z", "10.0.0", "b10a0a0~ 10.0.0", "a"),
		doc("a", "1.0.0", "a1a0a0~ 1.0.0", "a"),
	}
	want := []string{docs[4].ID(), docs[2].ID(), docs[1].ID(), docs[0].ID(), docs[3].ID(), docs[5].ID()}
	ix := openBuilt(t, filepath.Join(t.TempDir(), "x.index"), 1, docs)
	for _, q := range []Query{{AllVersions: true}, {Text: "quokka", AllVersions: true}, {EntryType: "recipe.verb.v1", AllVersions: true}} {
		r, err := ix.Search(context.Background(), q)
		require.NoError(t, err)
		var got []string
		for _, h := range r.Items {
			got = append(got, DocID(h.CookbookID, h.Version, h.EntryID))
			assert.Equal(t, r.Items[0].Score, h.Score, "identical entries score the same")
		}
		assert.Equal(t, want, got, "%+v", q)
	}
}

// TestIdenticalEntriesScoreAlikeInEveryVersion (D7): the same entry in
// three versions scores the same in a search of all versions, the higher
// version first, and a default search finds the latest version with that
// same score; other entries in the index (as in any catalog) change
// nothing about it.
func TestIdenticalEntriesScoreAlikeInEveryVersion(t *testing.T) {
	entry := func(version, vs string, latest bool) Doc {
		return Doc{CookbookID: "google.workspace", Version: version, VersionSort: vs, Latest: latest, EntryID: "gmail_send_v1",
			EntryType: "template.plan.v1", Title: "Send an email", Description: "Compose and send a Gmail message",
			ConnectorID: "google", Verb: "google.gmail.messages.send", Tags: []string{"gmail", "email"}, CookbookTitle: "Google Workspace"}
	}
	docs := []Doc{
		entry("1.1.0", "a1a1a0~ 1.1.0", false),
		entry("1.3.0", "a1a3a0~ 1.3.0", true),
		entry("1.2.0", "a1a2a0~ 1.2.0", false),
	}
	for i := range 20 {
		docs = append(docs, Doc{CookbookID: fmt.Sprintf("other%02d", i), Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true,
			EntryID: "e", EntryType: "recipe.verb.v1", Title: "Send a message", Description: "Posts to a channel"})
	}
	ix := openBuilt(t, filepath.Join(t.TempDir(), "x.index"), 1, docs)
	for _, text := range []string{"send email", "gmail", "gmail_send_v1", "compose message"} {
		r, err := ix.Search(context.Background(), Query{Text: text, CookbookID: "google.workspace", AllVersions: true})
		require.NoError(t, err)
		require.Len(t, r.Items, 3, text)
		assert.Equal(t, []string{"1.3.0", "1.2.0", "1.1.0"}, []string{r.Items[0].Version, r.Items[1].Version, r.Items[2].Version}, text)
		assert.Positive(t, r.Items[0].Score, text)
		assert.Equal(t, r.Items[0].Score, r.Items[1].Score, text)
		assert.Equal(t, r.Items[0].Score, r.Items[2].Score, text)
		latest, err := ix.Search(context.Background(), Query{Text: text, CookbookID: "google.workspace"})
		require.NoError(t, err)
		require.Len(t, latest.Items, 1, text)
		assert.Equal(t, "1.3.0", latest.Items[0].Version, text)
		assert.Equal(t, r.Items[0].Score, latest.Items[0].Score, "%s: the latest filter changes no score", text)
	}
}

// TestIndexOfAnotherMappingIsRebuilt (D8): an index recorded with another
// mapping version (an older release's) is refused as needing a rebuild.
func TestIndexOfAnotherMappingIsRebuilt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	ix := openBuilt(t, path, 3, []Doc{{CookbookID: "a", Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true, EntryID: "e",
		EntryType: "recipe.verb.v1", Title: "Quokka"}})
	require.NoError(t, ix.bi.SetInternal(keyMapping, []byte("accords.catalog.index.v11")))
	require.NoError(t, ix.Close())
	_, err := Open(path)
	require.ErrorIs(t, err, ErrNeedsRebuild)
	require.ErrorContains(t, err, "accords.catalog.index.v11")
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

// TestSortFieldsDocValuesUncompressed: an indexed document is the
// mapping's, with only the sort fields' doc values marked uncompressed and
// unchunked, both together.
func TestSortFieldsDocValuesUncompressed(t *testing.T) {
	m := NewMapping()
	d := Doc{CookbookID: "cb", Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", EntryID: "e", EntryType: "recipe.verb.v1",
		Title: "Send mail", Latest: true, Tags: []string{"mail"}}
	doc, err := mapDocument(m, d.ID(), toBleve(d))
	require.NoError(t, err)
	plain := bledoc.NewDocument(d.ID())
	require.NoError(t, m.MapDocument(plain, toBleve(d)))
	require.Len(t, doc.Fields, len(plain.Fields))
	var flagged []string
	for i, f := range doc.Fields {
		require.Equal(t, plain.Fields[i].Name(), f.Name())
		require.Equal(t, plain.Fields[i].Value(), f.Value())
		if sortFields[f.Name()] {
			flagged = append(flagged, f.Name())
			require.True(t, f.Options().IncludeDocValues(), f.Name())
			require.True(t, f.Options().SkipDVCompression(), f.Name())
			require.True(t, f.Options().SkipDVChunking(), f.Name())
			continue
		}
		require.Equal(t, plain.Fields[i].Options(), f.Options(), f.Name())
	}
	assert.ElementsMatch(t, []string{"cookbook_id", "entry_id", "version_sort", "sig"}, flagged)
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
	updates := func() uint64 { return scorchStats(ix.bi)["TotUpdates"].(uint64) }
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

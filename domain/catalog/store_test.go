package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSemverOrdering(t *testing.T) {
	ascending := []string{
		"0.0.1", "0.9.0", "1.0.0-0", "1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1",
		"1.0.0-alpha.beta", "1.0.0-alpha-x", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",
		"1.0.0", "1.0.0+build.1", "1.0.0+build.2", "1.2.0", "1.10.0", "2.0.0-rc.1", "2.0.0", "10.0.0",
	}
	for i := range ascending {
		for j := range ascending {
			a, b := ascending[i], ascending[j]
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, CompareVersions(a, b), "%s vs %s", a, b)
			ka, kb := VersionSortKey(a), VersionSortKey(b)
			got := 0
			if ka < kb {
				got = -1
			} else if ka > kb {
				got = 1
			}
			assert.Equal(t, want, got, "sort key %s vs %s", a, b)
		}
	}
	shuffled := append([]string(nil), ascending...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })

	e := newEnv(t)
	for _, v := range shuffled {
		mustUpsert(t, e.svc, sample("semver", v, 1), "")
	}
	items, err := e.svc.List(t.Context(), ListFilter{CookbookID: "semver"})
	require.NoError(t, err)
	var got []string
	for _, it := range items {
		got = append(got, it.Version)
		assert.Equal(t, it.Version == "10.0.0", it.Latest, it.Version)
	}
	assert.Equal(t, ascending, got)
	st, err := e.svc.Get(t.Context(), "semver", "")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0", st.Bundle.Version)

	// A pre-release is never "latest" over its release.
	mustUpsert(t, e.svc, sample("pre", "2.0.0", 1), "")
	mustUpsert(t, e.svc, sample("pre", "2.0.0-rc.9", 1), "")
	st, err = e.svc.Get(t.Context(), "pre", "")
	require.NoError(t, err)
	assert.Equal(t, "2.0.0", st.Bundle.Version)
	res, err := e.svc.Search(t.Context(), index.Query{CookbookID: "pre", AllVersions: true})
	require.NoError(t, err)
	require.Len(t, res.Items, 2)
	assert.Equal(t, "2.0.0", res.Items[0].Version, "higher version first")
	assert.True(t, res.Items[0].Latest)
	assert.False(t, res.Items[1].Latest)
}

func TestConflictPolicies(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	orig := sample("pol", "1.0.0", 2)
	r := mustUpsert(t, e.svc, orig, "")
	assert.Equal(t, OutcomeCreated, r.Outcome)
	assert.True(t, r.CreatedOrUpdated)
	assert.Equal(t, PolicyFail, r.ConflictPolicy)
	rev := e.svc.Rev()

	// Same content: a no-op under every policy, no revision bump.
	for _, p := range []string{"", "fail", " OVERWRITE ", "skip_if_exists"} {
		r := mustUpsert(t, e.svc, sample("pol", "1.0.0", 2), p)
		assert.Equal(t, OutcomeUnchanged, r.Outcome, p)
		assert.False(t, r.CreatedOrUpdated, p)
	}
	assert.Equal(t, rev, e.svc.Rev())

	changed := sample("pol", "1.0.0", 2)
	changed.Title = "Changed"
	_, err := e.svc.Upsert(ctx, changed, UpsertOptions{Policy: "FAIL"})
	require.Error(t, err)
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeCatalogConflict, ae.Code)
	assert.Equal(t, "bundle already exists with different content", ae.Message)
	assert.Equal(t, "pol", ae.Details["cookbook_id"])
	assert.Equal(t, "1.0.0", ae.Details["version"])

	changed = sample("pol", "1.0.0", 2)
	changed.Title = "Changed"
	r, err = e.svc.Upsert(ctx, changed, UpsertOptions{Policy: PolicySkipIfExists})
	require.NoError(t, err)
	assert.Equal(t, OutcomeSkipped, r.Outcome)
	assert.False(t, r.CreatedOrUpdated)
	assert.Equal(t, "Cookbook pol", r.Cookbook.Title, "the existing bundle wins and is reported")
	assert.NotEqual(t, r.Cookbook.ContentHash, r.ContentHash)
	assert.Equal(t, rev, e.svc.Rev())

	changed = sample("pol", "1.0.0", 2)
	changed.Title = "Changed"
	r, err = e.svc.Upsert(ctx, changed, UpsertOptions{Policy: PolicyOverwrite})
	require.NoError(t, err)
	assert.Equal(t, OutcomeUpdated, r.Outcome)
	assert.True(t, r.CreatedOrUpdated)
	assert.Equal(t, "Changed", r.Cookbook.Title)
	assert.Equal(t, r.ContentHash, r.Cookbook.ContentHash)
	st, err := e.svc.Get(ctx, "pol", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "Changed", st.Bundle.Title)
	assert.Equal(t, rev+1, e.svc.Rev())

	_, err = e.svc.Upsert(ctx, sample("pol", "2.0.0", 1), UpsertOptions{Policy: "OVERWRTE"})
	require.Error(t, err)
	ae = apperr.As(err)
	assert.Equal(t, apperr.CodeValidation, ae.Code)
	assert.Equal(t, "conflict_policy", ae.Details["field"])
	_, err = e.svc.Get(ctx, "pol", "2.0.0")
	assert.Equal(t, apperr.CodeCatalogNotFound, apperr.As(err).Code, "a rejected policy writes nothing")
}

func TestUnknownFieldsRoundTrip(t *testing.T) {
	e := newEnv(t)
	raw := `{"type":"accords.cookbook.bundle.v1","cookbook_id":"unk","version":"1.0.0","title":"Unknown",
	  "x_bundle":{"b":[1,2.5,"three"],"a":null},
	  "entries":[{"entry_id":"t","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{}},
	    "x_entry":"kept","query_ast_v1":{"pred":{"op":"eq"}},
	    "bindings":[{"target_path":"/request/a","input_key":"a","x_binding":true}]}]}`
	b, err := DecodeBundle([]byte(raw))
	require.NoError(t, err)
	r := mustUpsert(t, e.svc, b, "")
	e.reopen()
	st, err := e.svc.Get(t.Context(), "unk", "1.0.0")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(st.Raw, &got))
	assert.Equal(t, map[string]any{"b": []any{1.0, 2.5, "three"}, "a": nil}, got["x_bundle"])
	entry := got["entries"].([]any)[0].(map[string]any)
	assert.Equal(t, "kept", entry["x_entry"])
	assert.Equal(t, map[string]any{"pred": map[string]any{"op": "eq"}}, entry["query_ast_v1"])
	assert.Equal(t, true, entry["bindings"].([]any)[0].(map[string]any)["x_binding"])
	assert.Equal(t, r.ContentHash, st.Hash)

	er, err := e.svc.Entry(t.Context(), "unk", "", "t")
	require.NoError(t, err)
	assert.Contains(t, string(er.Entry), `"x_entry":"kept"`)

	// Unknown fields are content: changing one changes the hash, so FAIL
	// reports a conflict instead of silently keeping the old value.
	b2, err := DecodeBundle([]byte(raw))
	require.NoError(t, err)
	b2.Entries[0].Extra["x_entry"] = "changed"
	_, err = e.svc.Upsert(t.Context(), b2, UpsertOptions{})
	assert.Equal(t, apperr.CodeCatalogConflict, apperr.As(err).Code)
}

func TestPredecessorCookbooks(t *testing.T) {
	dir := fixtureDir(t)
	e := newEnv(t)
	ctx := t.Context()
	want := map[string]string{
		"1.1.0": "b02ab3dc07e9ed8b76fb33033c1b5a5f0d54930e1b6fb7be988d3264648af578",
		"1.2.0": "cf765c62b0cc19fc877d2f131816277950352c78dc52c70257b9c0cc2eaf07fa",
		"1.3.0": "6dbb3eb1976f454d3a664293abc38a5b69ccaf7b21f910906b45c9c2a6f9d6b3",
	}
	for _, v := range []string{"1.3.0", "1.1.0", "1.2.0"} {
		raw, err := os.ReadFile(filepath.Join(dir, v+".json"))
		require.NoError(t, err)
		b, err := DecodeBundle(raw)
		require.NoError(t, err)
		r := mustUpsert(t, e.svc, b, "")
		assert.Equal(t, OutcomeCreated, r.Outcome)
		// Without the entry-level unknown key the hash is byte-compatible
		// with the predecessor's reference hashes.
		b2, _ := DecodeBundle(raw)
		_, _, err = Prepare(b2)
		require.NoError(t, err)
		if e := b2.Entry("gmail_recipe_messages_list_inbox_v1"); e != nil {
			assert.Contains(t, e.Extra, "query_ast_v1")
			delete(e.Extra, "query_ast_v1")
		}
		h, err := b2.ContentHash()
		require.NoError(t, err)
		assert.Equal(t, want[v], h, v)
		if v == "1.1.0" {
			assert.Equal(t, want[v], r.ContentHash)
		}
	}

	res, err := e.svc.Search(ctx, index.Query{Text: "untrash message"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Items)
	assert.Equal(t, "gmail_tpl_plan_untrash_message_v1", res.Items[0].EntryID)
	assert.Equal(t, "1.3.0", res.Items[0].Version)
	for _, h := range res.Items {
		assert.Equal(t, "1.3.0", h.Version, "only the latest version is searched by default")
		assert.Positive(t, h.Score)
	}
	res, err = e.svc.Search(ctx, index.Query{Text: "list inbox messages"})
	require.NoError(t, err)
	assert.Equal(t, "gmail_recipe_messages_list_inbox_v1", res.Items[0].EntryID)
	assert.Equal(t, "1.3.0", res.Items[0].Version)

	res, err = e.svc.Search(ctx, index.Query{Text: "untrash", AllVersions: true})
	require.NoError(t, err)
	var versions []string
	for _, h := range res.Items {
		if h.EntryID == "gmail_tpl_plan_untrash_message_v1" {
			versions = append(versions, h.Version)
		}
	}
	assert.Equal(t, []string{"1.3.0", "1.2.0"}, versions, "equal scores break ties by higher version")

	st, err := e.svc.Get(ctx, "google.workspace", "1.3.0")
	require.NoError(t, err)
	var exported map[string]any
	require.NoError(t, json.Unmarshal(st.Raw, &exported))
	found := false
	for _, en := range exported["entries"].([]any) {
		m := en.(map[string]any)
		if m["entry_id"] == "gmail_recipe_messages_list_inbox_v1" {
			found = true
			assert.Equal(t, "inbox", m["query_ast_v1"].(map[string]any)["pred"].(map[string]any)["value"].(map[string]any)["enum"])
		}
	}
	assert.True(t, found)

	// Filters are exact keyword matches.
	res, err = e.svc.Search(ctx, index.Query{Verb: "google.gmail.messages.list"})
	require.NoError(t, err)
	assert.Len(t, res.Items, 2)
	for _, h := range res.Items {
		assert.Equal(t, "google.gmail.messages.list", h.Verb)
		assert.Zero(t, h.Score)
	}
	assert.Equal(t, "gmail_recipe_messages_list_inbox_v1", res.Items[0].EntryID, "filter-only results come in tie-break order")
	res, err = e.svc.Search(ctx, index.Query{ConnectorID: "google", EntryType: TypeRecipePlan})
	require.NoError(t, err)
	require.Len(t, res.Items, 1, "plan connector comes from its steps")
	res, err = e.svc.Search(ctx, index.Query{Tags: []string{"gmail", "trash"}, Text: "message"})
	require.NoError(t, err)
	require.Len(t, res.Items, 1)
	assert.Equal(t, "gmail_tpl_plan_trash_message_v1", res.Items[0].EntryID)
	res, err = e.svc.Search(ctx, index.Query{Verb: "google.gmail"})
	require.NoError(t, err)
	assert.Empty(t, res.Items, "verb filter is exact, not a prefix")
}

func TestSearchRanksTitleWordsAndIsDeterministic(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		b := sample(fmt.Sprintf("cb%d", i), "1.0.0", 3)
		if i == 3 {
			b.Entries[1].Title = "Rotate the webhook signing key"
		}
		mustUpsert(t, e.svc, b, "")
	}
	res, err := e.svc.Search(t.Context(), index.Query{Text: "webhook signing"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Items)
	assert.Equal(t, "cb3", res.Items[0].CookbookID)
	assert.Equal(t, "entry_1", res.Items[0].EntryID)

	// Equal scores: cookbook_id, then entry_id.
	res, err = e.svc.Search(t.Context(), index.Query{Text: "recipe number", Limit: 1000})
	require.NoError(t, err)
	for i := 1; i < len(res.Items); i++ {
		a, b := res.Items[i-1], res.Items[i]
		require.GreaterOrEqual(t, a.Score, b.Score)
		if a.Score == b.Score && a.Version == b.Version {
			require.True(t, a.CookbookID < b.CookbookID || (a.CookbookID == b.CookbookID && a.EntryID < b.EntryID), "%v then %v", a, b)
		}
	}
	again, err := e.svc.Search(t.Context(), index.Query{Text: "recipe number", Limit: 1000})
	require.NoError(t, err)
	assert.Equal(t, res, again)

	res, err = e.svc.Search(t.Context(), index.Query{Limit: 4})
	require.NoError(t, err)
	assert.Len(t, res.Items, 4)
	assert.Equal(t, uint64(15), res.Total)
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	mustUpsert(t, e.svc, sample("del", "1.0.0", 1), "")
	mustUpsert(t, e.svc, sample("del", "1.1.0", 1), "")

	_, err := e.svc.Delete(ctx, "del", "9.9.9")
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeCatalogNotFound, ae.Code)
	assert.Equal(t, "cookbook version not found", ae.Message)
	assert.Equal(t, "9.9.9", ae.Details["version"])
	_, err = e.svc.Delete(ctx, "nope", "")
	ae = apperr.As(err)
	assert.Equal(t, "cookbook not found", ae.Message)
	assert.Equal(t, "nope", ae.Details["cookbook_id"])

	r, err := e.svc.Delete(ctx, "del", "")
	require.NoError(t, err)
	assert.Equal(t, DeleteResult{CookbookID: "del", Version: "1.1.0", Deleted: true}, *r)
	res, err := e.svc.Search(ctx, index.Query{CookbookID: "del"})
	require.NoError(t, err)
	require.Len(t, res.Items, 1)
	assert.Equal(t, "1.0.0", res.Items[0].Version, "the remaining version becomes latest in the index")
	assert.True(t, res.Items[0].Latest)

	_, err = e.svc.Delete(ctx, "del", "1.0.0")
	require.NoError(t, err)
	res, err = e.svc.Search(ctx, index.Query{CookbookID: "del", AllVersions: true})
	require.NoError(t, err)
	assert.Empty(t, res.Items)
	_, err = e.svc.Get(ctx, "del", "")
	assert.Equal(t, "cookbook not found", apperr.As(err).Message)
	items, err := e.svc.List(ctx, ListFilter{})
	require.NoError(t, err)
	assert.Empty(t, items)
}

func TestEntryAndList(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	b := sample("lst", "1.0.0", 2)
	b.Tags = []string{"alpha", "Beta"}
	b.Description = "Talks to the Weather service"
	mustUpsert(t, e.svc, b, "")
	mustUpsert(t, e.svc, sample("other", "0.1.0", 1), "")

	er, err := e.svc.Entry(ctx, "lst", "", " entry_1 ")
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", er.Version)
	assert.Contains(t, string(er.Entry), `"entry_id":"entry_1"`)
	_, err = e.svc.Entry(ctx, "lst", "", "missing")
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeCatalogNotFound, ae.Code)
	assert.Equal(t, "entry not found in cookbook", ae.Message)
	assert.Equal(t, "missing", ae.Details["entry_id"])

	for _, c := range []struct {
		f    ListFilter
		want []string
	}{
		{ListFilter{}, []string{"lst", "other"}},
		{ListFilter{CookbookID: "lst"}, []string{"lst"}},
		{ListFilter{CookbookID: "ls"}, nil},
		{ListFilter{Tag: "Beta"}, []string{"lst"}},
		{ListFilter{Tag: "beta"}, nil},
		{ListFilter{Query: "WEATHER"}, []string{"lst"}},
		{ListFilter{Query: "cookbook o"}, []string{"other"}},
	} {
		items, err := e.svc.List(ctx, c.f)
		require.NoError(t, err)
		var got []string
		for _, it := range items {
			got = append(got, it.CookbookID)
		}
		assert.Equal(t, c.want, got, "%+v", c.f)
	}
}

func TestInTxHookCommitsOrRollsBackTogether(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	lockBucket := []byte("sources")
	rev := e.svc.Rev()
	_, err := e.svc.Upsert(ctx, sample("hook", "1.0.0", 1), UpsertOptions{InTx: func(tx store.Tx, res *UpsertResult) error {
		require.NoError(t, tx.Bucket(lockBucket).Put([]byte("lock:hook"), []byte(res.ContentHash)))
		return errors.New("verification failed")
	}})
	require.Error(t, err)
	assert.Equal(t, rev, e.svc.Rev())
	_, err = e.svc.Get(ctx, "hook", "")
	assert.Equal(t, apperr.CodeCatalogNotFound, apperr.As(err).Code)
	require.NoError(t, e.db.View(func(tx store.Tx) error {
		assert.Nil(t, tx.Bucket(lockBucket).Get([]byte("lock:hook")))
		return nil
	}))

	r, err := e.svc.Upsert(ctx, sample("hook", "1.0.0", 1), UpsertOptions{InTx: func(tx store.Tx, res *UpsertResult) error {
		return tx.Bucket(lockBucket).Put([]byte("lock:hook"), []byte(res.ContentHash))
	}})
	require.NoError(t, err)
	require.NoError(t, e.db.View(func(tx store.Tx) error {
		assert.Equal(t, r.ContentHash, string(tx.Bucket(lockBucket).Get([]byte("lock:hook"))))
		return nil
	}))
	res, err := e.svc.Search(ctx, index.Query{CookbookID: "hook"})
	require.NoError(t, err)
	assert.Len(t, res.Items, 1)
}

func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := e.svc.Upsert(context.Background(), sample("conc", fmt.Sprintf("1.0.%d", i), 2), UpsertOptions{})
			errs <- err
			_, err = e.svc.Search(context.Background(), index.Query{Text: "recipe"})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	res, err := e.svc.Search(t.Context(), index.Query{CookbookID: "conc", AllVersions: true, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, res.Items, 32)
	res, err = e.svc.Search(t.Context(), index.Query{CookbookID: "conc"})
	require.NoError(t, err)
	require.Len(t, res.Items, 2)
	assert.Equal(t, "1.0.15", res.Items[0].Version)
	assert.Equal(t, uint64(16), e.svc.Rev())
}

// ---------------------------------------------------------------------------
// D8: the index follows the store

func searchIDs(t *testing.T, s *Service, q index.Query) []string {
	t.Helper()
	res, err := s.Search(t.Context(), q)
	require.NoError(t, err)
	var out []string
	for _, h := range res.Items {
		out = append(out, h.CookbookID+"@"+h.Version+"/"+h.EntryID)
	}
	return out
}

func TestIndexRebuiltWhenFolderDeleted(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 2), "")
	mustUpsert(t, e.svc, sample("b", "1.0.0", 1), "")
	before := searchIDs(t, e.svc, index.Query{Text: "recipe"})
	e.close()
	require.NoError(t, os.RemoveAll(e.indexPath()))
	e.open()
	assert.True(t, e.svc.Report().Rebuilt)
	assert.Equal(t, "index missing", e.svc.Report().Reason)
	assert.Equal(t, before, searchIDs(t, e.svc, index.Query{Text: "recipe"}))
}

func TestIndexRebuiltWhenCorrupt(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 2), "")
	e.close()
	// Replace the folder's content with garbage.
	entries, err := os.ReadDir(e.indexPath())
	require.NoError(t, err)
	for _, en := range entries {
		require.NoError(t, os.RemoveAll(filepath.Join(e.indexPath(), en.Name())))
	}
	require.NoError(t, os.WriteFile(filepath.Join(e.indexPath(), "index_meta.json"), []byte("{garbage"), 0o600))
	e.open()
	assert.True(t, e.svc.Report().Rebuilt)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "a"}), 2)
}

func TestIndexCaughtUpAfterCrashBetweenStoreAndIndex(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 2), "")
	e.svc.indexers.Wait()
	// Simulate a crash after the bbolt commit and before the index batch:
	// make the index refuse the update. The write still succeeds (the data
	// is committed) and the index is left one revision behind.
	e.svc.idxMu.Lock()
	realIdx := e.svc.idx
	require.NoError(t, realIdx.Close())
	e.svc.idxMu.Unlock()
	mustUpsert(t, e.svc, sample("crash", "1.0.0", 3), "")
	e.svc.indexers.Wait() // the update was attempted, and failed
	assert.Equal(t, uint64(2), e.svc.Rev())
	assert.Equal(t, uint64(1), e.svc.indexRev.Load())
	// The process dies: nothing else is flushed. A restart notices the index
	// is behind (revision 1 < 2) and catches up from the change log.
	e.svc.idx = nil
	require.NoError(t, e.svc.Close())
	e.svc = nil
	require.NoError(t, e.db.Close())
	e.db = nil
	e.open()
	rep := e.svc.Report()
	assert.False(t, rep.Rebuilt)
	assert.Equal(t, 1, rep.CaughtUp)
	assert.Equal(t, uint64(2), rep.Rev)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "crash"}), 3)

	// A failed index update inside a running process is repaired before
	// the next read.
	e.svc.idxMu.Lock()
	saved := e.svc.idx
	e.svc.idx = nil
	e.svc.idxMu.Unlock()
	mustUpsert(t, e.svc, sample("later", "1.0.0", 1), "")
	e.svc.indexers.Wait()
	e.svc.idxMu.Lock()
	e.svc.idx = saved
	e.svc.idxMu.Unlock()
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "later"}), 1)
}

func TestIndexRebuiltWhenChangeLogPrunedOrIndexAhead(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("a", "1.0.0", 1), "")
	// Index behind and the change log no longer reaches back: rebuild.
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		require.NoError(t, root.Put(keyRev, store.U64(50)))
		return nil
	}))
	e.reopen()
	assert.True(t, e.svc.Report().Rebuilt)
	assert.Equal(t, uint64(50), e.svc.Report().Rev)

	// Index ahead of the database (a restored backup): rebuild.
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketCatalog).Put(keyRev, store.U64(10))
	}))
	e.reopen()
	assert.True(t, e.svc.Report().Rebuilt)
	assert.Equal(t, "index ahead of the database", e.svc.Report().Reason)
	assert.Len(t, searchIDs(t, e.svc, index.Query{CookbookID: "a"}), 1)

	// Up to date: nothing to do.
	e.reopen()
	assert.Equal(t, OpenReport{Rev: 10}, e.svc.Report())
}

func TestReindexProgressAndCorruptBundleSkipped(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		mustUpsert(t, e.svc, sample(fmt.Sprintf("r%d", i), "1.0.0", 2), "")
	}
	// A bundle corrupted on disk by hand must not take search down.
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketCatalog).Put(bundleKey("r1", "1.0.0"), []byte("{bad"))
	}))
	var calls [][2]int
	require.NoError(t, e.svc.Reindex(t.Context(), func(d, total int) { calls = append(calls, [2]int{d, total}) }))
	require.NotEmpty(t, calls)
	assert.Equal(t, 6, calls[len(calls)-1][1])
	assert.Equal(t, 4, calls[len(calls)-1][0])
	assert.Len(t, searchIDs(t, e.svc, index.Query{Text: "recipe"}), 4)
	_, err := e.svc.Get(t.Context(), "r1", "")
	assert.Equal(t, "stored bundle is not valid json", apperr.As(err).Message)
	// OVERWRITE repairs it.
	mustUpsert(t, e.svc, sample("r1", "1.0.0", 2), PolicyOverwrite)
	assert.Len(t, searchIDs(t, e.svc, index.Query{Text: "recipe"}), 6)
}

func TestListPagesByCookbook(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// Ids chosen so one is a prefix of another: the cursor must skip every
	// version of "a" and nothing of "a.b".
	for _, id := range []string{"a", "a.b", "c", "d"} {
		mustUpsert(t, e.svc, sample(id, "1.0.0", 1), "")
	}
	mustUpsert(t, e.svc, sample("a", "1.2.0", 1), "")
	mustUpsert(t, e.svc, sample("a", "1.10.0", 1), "")

	type row struct {
		id, version string
		latest      bool
	}
	var pages [][]row
	cursor := ""
	for {
		p, err := e.svc.ListPage(ctx, ListFilter{Limit: 2, After: cursor})
		require.NoError(t, err)
		var got []row
		for _, it := range p.Items {
			got = append(got, row{it.CookbookID, it.Version, it.Latest})
		}
		pages = append(pages, got)
		if p.NextCursor == "" {
			break
		}
		require.Less(t, len(pages), 5, "paging must end")
		cursor = p.NextCursor
	}
	assert.Equal(t, [][]row{
		{{"a", "1.0.0", false}, {"a", "1.2.0", false}, {"a", "1.10.0", true}, {"a.b", "1.0.0", true}},
		{{"c", "1.0.0", true}, {"d", "1.0.0", true}},
	}, pages, "a page holds whole cookbooks, all versions in semver order")

	p, err := e.svc.ListPage(ctx, ListFilter{Limit: 1, LatestOnly: true})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	assert.Equal(t, "1.10.0", p.Items[0].Version)
	assert.Equal(t, "a", p.NextCursor)

	all, err := e.svc.List(ctx, ListFilter{Limit: 1, After: "zzz"})
	require.NoError(t, err)
	assert.Len(t, all, 6, "List ignores paging")
}

// TestUpsertOnAFullDiskIsRetryable: a write the disk had no room for
// (ENOSPC, or EDQUOT over quota) is the retryable MCP_STORE_UNAVAILABLE
// with reason no_space, not MCP_INTERNAL: nothing was committed, and the
// same upsert succeeds once space is back. The error is injected where a
// failed bbolt write surfaces, inside the write transaction.
func TestUpsertOnAFullDiskIsRetryable(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		t.Run(errno.Error(), func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			rev := e.svc.Rev()
			full := &os.PathError{Op: "write", Path: e.dbPath(), Err: errno}
			_, err := e.svc.Upsert(ctx, sample("full", "1.0.0", 1), UpsertOptions{InTx: func(store.Tx, *UpsertResult) error {
				return fmt.Errorf("commit: %w", full)
			}})
			ae := apperr.As(err)
			require.NotNil(t, ae)
			assert.Equal(t, apperr.CodeStoreUnavailable, ae.Code, ae.Message)
			assert.Equal(t, apperr.CatInternal, ae.Category)
			assert.True(t, ae.Retryable, "the same write succeeds once space is freed")
			assert.Equal(t, apperr.ReasonNoSpace, ae.Details["reason"])
			assert.Equal(t, "upsert cookbook", ae.Details["operation"])
			assert.Equal(t, rev, e.svc.Rev(), "nothing was committed")

			// Space is back: the same call goes through.
			r, err := e.svc.Upsert(ctx, sample("full", "1.0.0", 1), UpsertOptions{})
			require.NoError(t, err)
			assert.Equal(t, OutcomeCreated, r.Outcome)
		})
	}
}

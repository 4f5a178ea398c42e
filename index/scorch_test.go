package index

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One-cookbook updates a few milliseconds apart: the persister naps
// between writing them (scorchConfig), so batches of one nap merge in
// memory instead of each becoming a segment file; all of them are
// searchable at once and reach disk by Close.
func TestQuickUpdatesPersistTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	require.NoError(t, Build(context.Background(), path, Source{Rev: 1, Each: func(func(Doc) error) error { return nil }}, nil))
	ix, err := Open(path)
	require.NoError(t, err)
	const n = 40
	for i := range n {
		id := fmt.Sprintf("cb%02d", i)
		require.NoError(t, ix.Apply(context.Background(), Update{Rev: uint64(2 + i), Cookbooks: []string{id}, Created: []string{id},
			Docs: []Doc{{CookbookID: id, Version: "1.0.0", VersionSort: "a1a0a0~ 1.0.0", Latest: true, EntryID: "e", EntryType: "recipe.verb.v1",
				Title: "Quokka sighting " + id}}}))
		time.Sleep(5 * time.Millisecond) // an upsert's pace: each would be its own file without the nap
	}
	res, err := ix.Search(context.Background(), Query{Text: "quokka", Limit: 100})
	require.NoError(t, err)
	require.Len(t, res.Items, n, "every update is searchable before it is persisted")
	ix.mu.Lock()
	ix.waitPersisted(FlushTimeout)
	stats := scorchStats(ix.bi)
	ix.mu.Unlock()
	napped, _ := stats["TotPersisterNapPauseCompleted"].(uint64)
	broken, _ := stats["TotPersisterMergerNapBreak"].(uint64)
	require.NotZero(t, napped+broken, "the persister naps between writes (in-memory batches merge before they are written)")
	require.NoError(t, ix.Close())
	ix, err = Open(path)
	require.NoError(t, err)
	defer ix.Close()
	rev, err := ix.Rev()
	require.NoError(t, err)
	require.Equal(t, uint64(1+n), rev, "Close waited for the last batch to reach disk")
}

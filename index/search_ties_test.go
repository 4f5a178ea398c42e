package index

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTextTiesAtPageBoundary: a page that ends inside a group of equally
// scored hits holds the group's first hits in tie-break order, whatever
// order the index holds them in (here the reverse, as they were indexed).
func TestTextTiesAtPageBoundary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	const n = 12
	var docs []Doc
	for i := n - 1; i >= 0; i-- {
		docs = append(docs, Doc{CookbookID: fmt.Sprintf("cb%02d", i), Version: "1.0.0", VersionSort: versionSort(1), Latest: true,
			EntryID: "e", EntryType: "recipe.verb.v1", Title: "Quokka sighting"})
	}
	ix := openBuilt(t, path, 1, docs)
	for _, limit := range []int{1, 3, 5, n - 1} {
		r, err := ix.Search(context.Background(), Query{Text: "quokka", Limit: limit})
		require.NoError(t, err)
		require.Len(t, r.Items, limit)
		assert.Equal(t, uint64(n), r.Total)
		for i, h := range r.Items {
			assert.Equal(t, fmt.Sprintf("cb%02d", i), h.CookbookID, "limit %d", limit)
			assert.Equal(t, r.Items[0].Score, h.Score)
		}
	}
}

// versionSort mimics catalog.VersionSortKey for n.0.0: the digit count as
// a letter, then the digits of each part.
func versionSort(n int) string {
	d := strconv.Itoa(n)
	return fmt.Sprintf("%c%sa0a0~ %d.0.0", 'a'+len(d)-1, d, n)
}

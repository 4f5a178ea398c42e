package catalog

import (
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/index"
)

// TestIndexOfAnOlderMappingIsRebuiltAtStart (D8): an index an older
// release built (its recorded mapping version is not index.MappingVersion)
// is rebuilt when the catalog opens, and searches answer from the rebuilt
// one, identical entries of two versions scoring the same.
func TestIndexOfAnOlderMappingIsRebuiltAtStart(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("mail", "1.0.0", 2), "")
	mustUpsert(t, e.svc, sample("mail", "1.1.0", 2), "")
	e.close()

	// The index is configured to persist batches in the background; this
	// write waits until it is on disk.
	bi, err := bleve.OpenUsing(e.indexPath(), map[string]any{"unsafe_batch": false})
	require.NoError(t, err)
	require.NoError(t, bi.SetInternal([]byte("mapping_version"), []byte("accords.catalog.index.v11")))
	require.NoError(t, bi.Close())

	e.open()
	rep := e.svc.Report()
	assert.True(t, rep.Rebuilt)
	assert.Equal(t, "index corrupt or built with another mapping", rep.Reason)
	res, err := e.svc.Search(t.Context(), index.Query{Text: "recipe number", AllVersions: true})
	require.NoError(t, err)
	require.Len(t, res.Items, 4)
	assert.Equal(t, []string{"1.1.0", "1.1.0", "1.0.0", "1.0.0"},
		[]string{res.Items[0].Version, res.Items[1].Version, res.Items[2].Version, res.Items[3].Version})
	assert.Equal(t, res.Items[0].Score, res.Items[2].Score)
	e.close()
	ix, err := index.Open(e.indexPath())
	require.NoError(t, err, "the rebuilt index carries the current mapping version")
	require.NoError(t, ix.Close())
}

package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenWiresCatalogAndSeedsBuiltins(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Config{DBPath: filepath.Join(dir, "accords.db"), AuditKeyFile: filepath.Join(t.TempDir(), "audit.key")}
	a, err := Open(cfg, nil)
	require.NoError(t, err)
	for _, name := range []string{"vaultclaw_recipes_search", "vaultclaw_template_render", "vaultclaw_cookbook_upsert"} {
		_, ok := a.Registry.Lookup(name)
		assert.True(t, ok, name)
	}
	res, err := a.Catalog.Search(context.Background(), index.Query{Text: "send an email"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Items)
	assert.Equal(t, "google.workspace", res.Items[0].CookbookID)
	rev := a.Catalog.Rev()
	_, err = a.Catalog.Delete(context.Background(), "http.recipes", "")
	require.NoError(t, err)
	require.NoError(t, a.Close())

	_, err = os.Stat(cfg.IndexDir())
	require.NoError(t, err, "the index lives beside the database")

	// A restart neither rebuilds the index nor restores the deleted
	// built-in.
	a, err = Open(cfg, nil)
	require.NoError(t, err)
	defer a.Close()
	assert.False(t, a.Catalog.Report().Rebuilt)
	assert.Equal(t, rev+1, a.Catalog.Rev())
	_, err = a.Catalog.Get(context.Background(), "http.recipes", "")
	assert.Error(t, err)
}

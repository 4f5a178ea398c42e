package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenWiresCatalogAndSeedsBuiltins(t *testing.T) {
	t.Parallel()
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

// TestStartWithoutIndexRebuildsInBackground: with the index folder gone,
// the app opens without waiting for the rebuild, which is logged (start,
// then done with its document count); searches then find everything and
// doctor reports the index consistent.
func TestStartWithoutIndexRebuildsInBackground(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := config.Config{DBPath: filepath.Join(dir, "accords.db"), AuditKeyFile: filepath.Join(t.TempDir(), "audit.key")}
	a, err := Open(cfg, nil)
	require.NoError(t, err)
	want, err := a.Catalog.Search(context.Background(), index.Query{Text: "send an email", Limit: index.MaxLimit})
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, os.RemoveAll(cfg.IndexDir()))

	var logs syncbuf.Buffer
	a, err = Open(cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	defer a.Close()
	rep := a.Catalog.Report()
	assert.True(t, rep.Rebuilt && rep.Background, "%+v", rep)
	got, err := a.Catalog.Search(context.Background(), index.Query{Text: "send an email", Limit: index.MaxLimit})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.False(t, a.Catalog.Rebuilding())
	assert.Contains(t, logs.String(), "catalog index rebuild started in the background")
	assert.Contains(t, logs.String(), `"msg":"catalog index rebuilt"`)
	assert.Regexp(t, `"documents":[1-9]`, logs.String())
	for _, r := range a.Doctor(context.Background(), "", session.Defaults{}) {
		if r.Check == "index" {
			assert.Equal(t, doctor.OK, r.Status, "%+v", r)
			assert.Contains(t, r.Detail, "consistent with the store")
		}
	}
}

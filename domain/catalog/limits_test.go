package catalog

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeBundleRefusesInvalidText: bundles from files and downloads are
// refused when their text is not valid UTF-8, instead of being stored
// with U+FFFD in place of what the author wrote.
func TestDecodeBundleRefusesInvalidText(t *testing.T) {
	for raw, field := range map[string]string{
		"{\"type\":\"accords.cookbook.bundle.v1\",\"title\":\"caf\xe9\"}":         "bundle.title",
		`{"type":"accords.cookbook.bundle.v1","entries":[{"entry_id":"\udc00"}]}`: "bundle.entries[0].entry_id",
	} {
		_, err := DecodeBundle([]byte(raw))
		require.Error(t, err, raw)
		ae := apperr.As(err)
		assert.Equal(t, apperr.CodeCatalogSchemaInvalid, ae.Code)
		assert.Equal(t, field, ae.Details["field"])
	}
}

// TestUpsertHonoursTheConfiguredSizeLimit: the canonical-size cap is the
// service's (ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES), on every path into
// Upsert.
func TestUpsertHonoursTheConfiguredSizeLimit(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "a.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	svc, err := Open(context.Background(), db, filepath.Join(dir, "a.db.index"), Options{MaxBundleBytes: 2048})
	require.NoError(t, err)
	defer svc.Close()
	mk := func(desc string) *Bundle {
		b, err := DecodeBundle([]byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"c","version":"1.0.0","title":"t","description":"` + desc +
			`","entries":[{"entry_id":"e","entry_type":"recipe.plan.v1","plan":{}}]}`))
		require.NoError(t, err)
		return b
	}
	_, err = svc.Upsert(context.Background(), mk(strings.Repeat("d", 3000)), UpsertOptions{})
	require.Error(t, err)
	assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)
	assert.EqualValues(t, 2048, apperr.As(err).Details["max_bytes"])
	_, err = svc.Upsert(context.Background(), mk("short"), UpsertOptions{})
	require.NoError(t, err)
}

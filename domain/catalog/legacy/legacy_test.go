package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

type fakeImporter struct{ bundles, sources []string }

func (f *fakeImporter) ImportBundle(_ context.Context, raw json.RawMessage, policy string) (Outcome, string, error) {
	var b struct {
		CookbookID string `json:"cookbook_id"`
	}
	_ = json.Unmarshal(raw, &b)
	f.bundles = append(f.bundles, b.CookbookID+"/"+policy)
	if b.CookbookID == "rejected" {
		return Refused, "", errors.New("MCP_CATALOG_SCHEMA_INVALID: entries must not be empty")
	}
	return Imported, "", nil
}

func (f *fakeImporter) ImportSource(_ context.Context, raw json.RawMessage, policy string) (Outcome, string, error) {
	f.sources = append(f.sources, string(raw))
	return Skipped, "already present", nil
}

func TestScanAndImport(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "cookbooks", "ok", "1.0.0.json"), `{"cookbook_id":"ok","version":"1.0.0"}`)
	write(t, filepath.Join(dir, "cookbooks", "rejected", "1.0.0.json"), `{"cookbook_id":"rejected","version":"1.0.0"}`)
	write(t, filepath.Join(dir, "cookbooks", ".hidden", "1.0.0.json"), `{}`)
	write(t, filepath.Join(dir, "cookbooks", "ok", "1.0 beta.json"), `{}`)
	write(t, filepath.Join(dir, "cookbooks", "ok", "notes.txt"), `ignored`)
	write(t, filepath.Join(dir, "cookbooks", "ok", "2.0.0.json"), `{"cookbook_id":"ok"}`)
	write(t, filepath.Join(dir, "sources.json"), `{"sources":[{"source_id":"a","index_url":"https://x"},{"index_url":"https://y"},42]}`)

	f, err := Scan(dir)
	require.NoError(t, err)
	imp := &fakeImporter{}
	rep, err := Import(context.Background(), f, imp, "overwrite")
	require.NoError(t, err)
	assert.Equal(t, PolicyOverwrite, rep.Policy)
	byName := map[string]Item{}
	for _, it := range rep.Items {
		byName[it.Kind+":"+it.ID+"@"+it.Version] = it
	}
	assert.Equal(t, "imported", byName["bundle:ok@1.0.0"].Outcome)
	assert.Equal(t, "refused", byName["bundle:rejected@1.0.0"].Outcome)
	assert.Contains(t, byName["bundle:rejected@1.0.0"].Reason, "entries must not be empty")
	assert.Contains(t, byName["bundle:.hidden@1.0.0"].Reason, "unsafe cookbook id")
	assert.Contains(t, byName["bundle:ok@1.0 beta"].Reason, "unsafe version")
	assert.Contains(t, byName["bundle:ok@2.0.0"].Reason, "version (missing)")
	assert.Equal(t, "skipped", byName["source:a@"].Outcome)
	assert.Contains(t, byName["source:(sources[1])@"].Reason, "source_id is required")
	assert.Contains(t, byName["source:(sources[2])@"].Reason, "not a JSON object")
	assert.Equal(t, []string{"ok/OVERWRITE", "rejected/OVERWRITE"}, imp.bundles, "only valid files reach the importer")
	assert.Len(t, imp.sources, 1)
	assert.Equal(t, 1, rep.Imported)
	assert.Equal(t, 1, rep.Skipped)
	assert.Equal(t, 6, rep.Refused)

	_, err = Import(context.Background(), f, imp, "OVERWRIT")
	assert.ErrorContains(t, err, "not one of")
}

func TestScanErrorsAndDefaults(t *testing.T) {
	_, err := Scan(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "f")
	write(t, file, "x")
	_, err = Scan(file)
	assert.ErrorContains(t, err, "not a directory")

	empty := t.TempDir()
	f, err := Scan(empty)
	require.NoError(t, err)
	assert.Empty(t, f.Bundles)
	assert.False(t, Looks(empty))
	write(t, filepath.Join(empty, "sources.json"), "{not json")
	assert.True(t, Looks(empty))
	f, err = Scan(empty)
	require.NoError(t, err)
	require.Len(t, f.Sources, 1)
	assert.Contains(t, f.Sources[0].Refused, "not valid JSON")

	d, err := DefaultDir(func(k string) string { return map[string]string{EnvDir: " /x/catalog "}[k] })
	require.NoError(t, err)
	assert.Equal(t, "/x/catalog", d)
	d, err = DefaultDir(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, "catalog", filepath.Base(d))
}

func TestDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "cookbooks", "ok", "1.0.0.json"), `{"cookbook_id":"ok","version":"1.0.0"}`)
	f, err := Scan(dir)
	require.NoError(t, err)
	rep, err := Import(context.Background(), f, nil, "")
	require.NoError(t, err)
	assert.True(t, rep.DryRun)
	assert.Equal(t, PolicySkip, rep.Policy)
	assert.Equal(t, "dry run", rep.Items[0].Reason)
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legacyFolder lays out a catalog folder as the predecessor wrote it, from
// the real predecessor bundles, plus one corrupt bundle, one unsafe id, a
// bundle whose content disagrees with its path, and two sources (one bad).
func legacyFolder(t *testing.T) string {
	t.Helper()
	fixtures := testenv.SharedDir(t, "fixtures")
	dir := filepath.Join(t.TempDir(), "catalog")
	cb := filepath.Join(dir, "cookbooks")
	mk := func(p string, b []byte) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		raw, err := os.ReadFile(filepath.Join(fixtures, "predecessor", "cookbooks", "google.workspace", v+".json"))
		require.NoError(t, err)
		mk(filepath.Join(cb, "google.workspace", v+".json"), raw)
	}
	mk(filepath.Join(cb, "broken.cookbook", "1.0.0.json"), []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"broken.cookbook",`))
	mk(filepath.Join(cb, "bad id", "1.0.0.json"), []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"bad id","version":"1.0.0","title":"x","entries":[]}`))
	mk(filepath.Join(cb, "moved", "1.0.0.json"), []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"other","version":"1.0.0","title":"x","entries":[]}`))
	mk(filepath.Join(cb, "README.txt"), []byte("not a cookbook"))
	mk(filepath.Join(dir, "sources.json"), []byte(`{"sources":[
  {"source_id":"team","index_url":"https://catalog.example.com/index.json","enabled":true,"auth_mode":"NONE"},
  {"source_id":"old-ftp","index_url":"ftp://files.example.com/index.json"}
]}
`))
	mk(filepath.Join(dir, "index.json"), []byte(`{"generated_at_unix_ms":1,"cookbooks":[]}`+"\n"))
	mk(filepath.Join(dir, ".catalog.lock"), nil)
	return dir
}

type fileState struct {
	Mode    os.FileMode
	Size    int64
	ModTime time.Time
	Content string
}

func snapshotDir(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		st := fileState{Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			st.Content = string(b)
		}
		out[p] = st
		return nil
	}))
	return out
}

func TestImportLegacyFolder(t *testing.T) {
	dir := legacyFolder(t)
	before := snapshotDir(t, dir)
	vars := opsVars(t, "ACCORDS_MCP_CATALOG_DIR="+dir)

	// Dry run: reads and reports, writes nothing anywhere.
	code, out, errOut := runCmd(t, vars, "import-legacy", "--dry-run")
	assert.Equal(t, 1, code, "refused items make the exit status 1")
	assert.Contains(t, out, "dry run: nothing written")
	assert.Contains(t, out, "would import")
	_, err := os.Stat(vars["ACCORDS_MCP_DB"])
	assert.True(t, os.IsNotExist(err), "a dry run creates no database: %s", errOut)

	code, out, errOut = runCmd(t, vars, "import-legacy", "--json")
	assert.Equal(t, 1, code, errOut)
	var rep struct {
		Items                      []struct{ Kind, ID, Version, Outcome, Reason string }
		Imported, Skipped, Refused int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	got := map[string]string{}
	reasons := map[string]string{}
	for _, it := range rep.Items {
		k := it.Kind + ":" + it.ID
		if it.Version != "" {
			k += "@" + it.Version
		}
		got[k] = it.Outcome
		reasons[k] = it.Reason
	}
	assert.Equal(t, map[string]string{
		"bundle:google.workspace@1.1.0": "imported",
		"bundle:google.workspace@1.2.0": "imported",
		"bundle:google.workspace@1.3.0": "imported",
		"bundle:broken.cookbook@1.0.0":  "refused",
		"bundle:bad id@1.0.0":           "refused",
		"bundle:moved@1.0.0":            "refused",
		"source:team":                   "imported",
		"source:old-ftp":                "refused",
	}, got)
	assert.Contains(t, reasons["bundle:broken.cookbook@1.0.0"], "not valid JSON")
	assert.Contains(t, reasons["bundle:bad id@1.0.0"], "unsafe cookbook id")
	assert.Contains(t, reasons["bundle:moved@1.0.0"], "does not match its folder")
	assert.Contains(t, reasons["source:old-ftp"], "index_url")
	assert.Equal(t, 4, rep.Imported)
	assert.Equal(t, 4, rep.Refused)
	assert.Equal(t, before, snapshotDir(t, dir), "the legacy folder is never modified")

	// The imported bundles are stored, indexed and searchable, unknown
	// fields preserved by the catalog.
	a := openApp(t, vars)
	res, err := a.Catalog.Search(context.Background(), index.Query{Text: "labels", CookbookID: "google.workspace", AllVersions: true})
	require.NoError(t, err)
	versions := map[string]bool{}
	for _, h := range res.Items {
		versions[h.Version] = true
	}
	assert.True(t, versions["1.3.0"] && versions["1.1.0"], "%v", versions)
	srcs, err := a.Remote.Sources()
	require.NoError(t, err)
	require.Len(t, srcs, 1)
	assert.Equal(t, "https://catalog.example.com/index.json", srcs[0].IndexURL)
	require.NoError(t, a.Close())

	// Again: everything already there is skipped, and says so.
	code, out, _ = runCmd(t, vars, "import-legacy", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "skipped      bundle google.workspace@1.3.0: already present with the same content")
	assert.Contains(t, out, "skipped      source team: already present with the same settings")
	assert.Contains(t, out, "0 imported, 4 skipped, 4 refused")

	// A changed bundle under each policy.
	raw, err := os.ReadFile(filepath.Join(dir, "cookbooks", "google.workspace", "1.3.0.json"))
	require.NoError(t, err)
	changed := strings.Replace(string(raw), "Google Workspace Gmail Cookbook", "Edited Cookbook", 1)
	dir2 := filepath.Join(t.TempDir(), "catalog2")
	require.NoError(t, os.MkdirAll(filepath.Join(dir2, "cookbooks", "google.workspace"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir2, "cookbooks", "google.workspace", "1.3.0.json"), []byte(changed), 0o644))
	code, out, _ = runCmd(t, vars, "import-legacy", dir2)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "conflict policy SKIP_IF_EXISTS")
	code, out, _ = runCmd(t, vars, "import-legacy", "--conflict-policy", "fail", dir2)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "(conflict policy FAIL)")
	code, out, _ = runCmd(t, vars, "import-legacy", "--conflict-policy", "overwrite", dir2)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "imported     bundle google.workspace@1.3.0: replaced the existing bundle")
	code, _, errOut = runCmd(t, vars, "import-legacy", "--conflict-policy", "OVERWRIT", dir2)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "not one of")
}

func TestImportLegacyRefusesWhileDaemonRuns(t *testing.T) {
	dir := legacyFolder(t)
	vars := opsVars(t)
	d := startServe(t, vars)
	code, _, errOut := runCmd(t, vars, "import-legacy", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the daemon holds the database")
	require.Equal(t, 0, d.stop())
	code, _, errOut = runCmd(t, vars, "import-legacy", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no such file")
}

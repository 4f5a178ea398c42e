package remote

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixturesDir finds shared/fixtures by walking up from the package folder
// (CI clones the repository with shared/ beside it).
func fixturesDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		cand := filepath.Join(dir, "shared", "fixtures")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/fixtures not found")
		}
		dir = parent
	}
}

// The predecessor's three Gmail cookbook versions, published as a remote
// catalog, install by constraint with verified digests.
func TestInstallPredecessorCookbooks(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "predecessor", "cookbooks", "google.workspace")
	e := newEnv(t)
	r := newRemote(t)
	var items []item
	raws := map[string][]byte{}
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		raw, err := os.ReadFile(filepath.Join(dir, v+".json"))
		require.NoError(t, err)
		raws[v] = raw
		r.serveBytes("/google.workspace/"+v+".json", raw, "")
		items = append(items, item{"cookbook_id": "google.workspace", "version": v, "title": "Google Workspace",
			"download_url": r.URL + "/google.workspace/" + v + ".json", "sha256": sha(raw)})
	}
	r.serveBytes("/index.json", indexJSON(items...), `"w1"`)
	e.addSource(t, SourceInput{SourceID: "accords", IndexURL: r.URL + "/index.json", RequireSHA256: new(true)})

	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "accords", CookbookID: "google.workspace", Version: "~1.2.0"})
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", res.Selected.Version)
	res, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "accords", CookbookID: "google.workspace", Version: "^1.1"})
	require.NoError(t, err)
	assert.Equal(t, "1.3.0", res.Selected.Version)
	assert.Equal(t, sha(raws["1.3.0"]), res.Integrity.SHA256)
	assert.NotEqual(t, res.Integrity.SHA256, res.ContentHash, "transport digest and canonical hash are different notions")

	st, err := e.cat.cat.Get(t.Context(), "google.workspace", "1.3.0")
	require.NoError(t, err)
	assert.Equal(t, res.ContentHash, st.Hash)
	var stored map[string]any
	require.NoError(t, json.Unmarshal(st.Raw, &stored))
	found := false
	for _, en := range stored["entries"].([]any) {
		if _, ok := en.(map[string]any)["query_ast_v1"]; ok {
			found = true
		}
	}
	assert.True(t, found, "unknown entry fields survive a remote install")

	hits, err := e.cat.cat.Search(t.Context(), index.Query{Text: "inbox"})
	require.NoError(t, err)
	require.NotEmpty(t, hits.Items)
	assert.Equal(t, "1.3.0", hits.Items[0].Version, "search prefers the latest installed version")
}

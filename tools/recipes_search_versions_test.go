package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// predecessorBundle reads a predecessor cookbook from the shared fixtures
// (../shared/fixtures from the repository root), skipping the test when
// they are absent.
func predecessorBundle(t *testing.T, version string) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "shared", "fixtures", "predecessor", "cookbooks", "google.workspace", version+".json"))
		if err == nil {
			return string(raw)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("predecessor fixtures not found (shared/fixtures)")
		}
		dir = parent
	}
}

// TestRecipesSearchAllVersionsRanksIdenticalEntriesByVersion (D7): with the
// predecessor's three Gmail bundles imported, an entry that 1.2.0 and
// 1.3.0 hold alike (title, description, tags) scores the same in both, and
// the higher version comes first; every hit follows D7's order (score,
// then higher version, then cookbook_id, entry_id). A default search finds
// only 1.3.0's entry, with that same score.
func TestRecipesSearchAllVersionsRanksIdenticalEntriesByVersion(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		env := callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+predecessorBundle(t, v)+`}`)
		require.Equal(t, true, env["ok"], env["error"])
	}
	type hit struct {
		Version string  `json:"version"`
		EntryID string  `json:"entry_id"`
		Score   float64 `json:"score"`
	}
	search := func(args string) []hit {
		t.Helper()
		env := callCatalog(t, reg, "vaultclaw_recipes_search", args)
		require.Equal(t, true, env["ok"], env["error"])
		raw, err := json.Marshal(env["data"].(map[string]any)["items"])
		require.NoError(t, err)
		var hits []hit
		require.NoError(t, json.Unmarshal(raw, &hits))
		return hits
	}
	const sendEmail = "gmail_tpl_plan_send_email_v1"
	for _, q := range []string{"send email", "template send email draft", "gmail"} {
		hits := search(`{"query":"` + q + `","all_versions":true,"limit":100}`)
		at := map[string]int{}
		for i, h := range hits {
			at[h.EntryID+"@"+h.Version] = i
			if i > 0 {
				prev := hits[i-1]
				require.GreaterOrEqual(t, prev.Score, h.Score, "%s: by score", q)
				if prev.Score == h.Score && prev.Version != h.Version {
					assert.Greater(t, prev.Version, h.Version, "%s: equal scores, the higher version first (%s, %s)", q, prev.EntryID, h.EntryID)
				}
			}
		}
		for key, i := range at {
			if hits[i].Version != "1.3.0" {
				continue
			}
			j, ok := at[hits[i].EntryID+"@1.2.0"]
			if !ok {
				continue
			}
			assert.Equal(t, hits[i].Score, hits[j].Score, "%s: %s scores as its 1.2.0 twin", q, key)
			assert.Less(t, i, j, "%s: %s before its 1.2.0 twin", q, key)
		}
		if q == "send email" {
			i, ok13 := at[sendEmail+"@1.3.0"]
			j, ok12 := at[sendEmail+"@1.2.0"]
			require.True(t, ok13 && ok12, "%+v", hits)
			assert.Equal(t, hits[i].Score, hits[j].Score)
			assert.Less(t, i, j)
			latest := search(`{"query":"send email","limit":100}`)
			found := false
			for _, h := range latest {
				assert.Equal(t, "1.3.0", h.Version, "a default search holds only the latest version")
				if h.EntryID == sendEmail {
					found = true
					assert.Equal(t, hits[i].Score, h.Score, "the latest-version filter changes no score")
				}
			}
			assert.True(t, found)
		}
	}
}

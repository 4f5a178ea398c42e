package routing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot walks up from the package directory to go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found")
		dir = parent
	}
}

// TestCheckedInSkillIsCurrent fails when skills/vaultclaw/ no longer matches
// the registry. Fix: go run ./cmd/accords-mcp skill export skills/vaultclaw
func TestCheckedInSkillIsCurrent(t *testing.T) {
	files, err := testReg(t).SkillFiles()
	require.NoError(t, err)
	root := filepath.Join(repoRoot(t), "skills", "vaultclaw")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err, "%s missing: run `go run ./cmd/accords-mcp skill export skills/vaultclaw`", name)
		assert.Equal(t, string(want), string(got), "%s is stale: run `go run ./cmd/accords-mcp skill export skills/vaultclaw`", name)
	}
}

func TestSkillFilesAgreeWithResolver(t *testing.T) {
	reg := testReg(t)
	files, err := reg.SkillFiles()
	require.NoError(t, err)
	again, err := reg.SkillFiles()
	require.NoError(t, err)
	assert.Equal(t, files, again, "deterministic")

	var routes struct {
		Routes []struct {
			RouteID       string   `json:"route_id"`
			RequiredSlots []string `json:"required_slots"`
		} `json:"routes"`
	}
	require.NoError(t, json.Unmarshal(files[SkillRoutesFile], &routes))
	require.Len(t, routes.Routes, len(reg.Routes)+1)
	for i, rt := range reg.Routes {
		assert.Equal(t, rt.RouteID, routes.Routes[i].RouteID)
		assert.Equal(t, orEmpty(rt.RequiredInputs), routes.Routes[i].RequiredSlots)
	}
	var aliases struct {
		Aliases map[string]string `json:"aliases"`
	}
	require.NoError(t, json.Unmarshal(files[SkillAliasesFile], &aliases))
	// Every alias in the skill resolves to the same type in the resolver.
	for phrase, typeID := range aliases.Aliases {
		assert.Equal(t, []string{typeID}, reg.documentTypes(newText("attach my "+phrase)), phrase)
	}
	// The predecessor's 15 skill aliases are all covered (one source of truth).
	raw := readFixture(t, "predecessor/skill-references/document_type_aliases.google_gmail.v1.json")
	var old struct {
		Aliases map[string]string `json:"aliases"`
	}
	if err := json.Unmarshal(raw, &old); err == nil && len(old.Aliases) > 0 {
		for phrase, typeID := range old.Aliases {
			assert.Equal(t, typeID, aliases.Aliases[phrase], phrase)
		}
	}
}

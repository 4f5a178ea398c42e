package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/require"
)

const snapDir = "../testdata/toolsnaps"

// TestToolSnapshots pins every tool's name, description, annotations and
// schemas as clients see them, plus its toolset and capability (security
// controls: a tool moved to another toolset or capability fails here).
// After an intended change run: UPDATE_TOOLSNAPS=1 go test ./app
// A missing snapshot is written locally but fails in CI.
func TestToolSnapshots(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	var registered, defined []string
	for _, tool := range a.Registry.Tools() {
		registered = append(registered, tool.Name)
	}
	for _, tool := range tools.Definitions() {
		defined = append(defined, tool.Name)
	}
	require.Equal(t, defined, registered, "the app binds every defined tool")

	update := os.Getenv("UPDATE_TOOLSNAPS") != ""
	inCI := os.Getenv("CI") != ""
	seen := map[string]bool{}
	for _, tool := range tools.Definitions() {
		name := tool.Name + ".json"
		seen[name] = true
		got := snapshot(t, tool)
		path := filepath.Join(snapDir, name)
		want, err := os.ReadFile(path)
		if update || (os.IsNotExist(err) && !inCI) {
			require.NoError(t, os.MkdirAll(snapDir, 0o755))
			require.NoError(t, os.WriteFile(path, got, 0o644))
			if !update {
				t.Errorf("snapshot %s was missing and has been written; review and commit it", path)
			}
			continue
		}
		require.NoError(t, err, "snapshot %s missing (run UPDATE_TOOLSNAPS=1 go test ./app)", path)
		require.JSONEq(t, string(want), string(got), "tool %s changed; if intended run UPDATE_TOOLSNAPS=1 go test ./app", tool.Name)
	}
	entries, err := os.ReadDir(snapDir)
	require.NoError(t, err)
	for _, e := range entries {
		if !seen[e.Name()] {
			if update {
				require.NoError(t, os.Remove(filepath.Join(snapDir, e.Name())))
				continue
			}
			t.Errorf("snapshot %s has no tool; delete it", e.Name())
		}
	}
}

// snapshot is the tool's wire description with its toolset and capability
// added, in canonical form.
func snapshot(t *testing.T, tool tools.Tool) []byte {
	raw, err := json.Marshal(tool.MCPTool())
	require.NoError(t, err)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(raw, &generic))
	require.NotContains(t, generic, "toolset")
	require.NotContains(t, generic, "capability")
	generic["toolset"] = tool.Toolset
	generic["capability"] = tool.Capability
	out, err := json.MarshalIndent(generic, "", "  ") // maps marshal with sorted keys
	require.NoError(t, err)
	return append(out, '\n')
}

// TestEveryToolSetsEveryHint checks the wire form: all four hints present,
// so no client falls back to the MCP defaults (destructive, open world).
func TestEveryToolSetsEveryHint(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t))
	require.NotEmpty(t, a.Registry.Tools())
	for _, tool := range a.Registry.Tools() {
		var wire struct {
			Annotations map[string]any `json:"annotations"`
			Output      map[string]any `json:"outputSchema"`
		}
		raw, err := json.Marshal(tool.MCPTool())
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &wire))
		for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			_, ok := wire.Annotations[hint].(bool)
			require.True(t, ok, "%s must set %s explicitly", tool.Name, hint)
		}
		require.Equal(t, "object", wire.Output["type"], "%s declares the envelope output schema", tool.Name)
		if tool.Hints.ReadOnly {
			require.False(t, tool.Hints.Destructive, "%s: a read-only tool cannot be destructive", tool.Name)
		}
	}
}

package app_test

import (
	"os"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/require"
)

const (
	toolsetTableStart = "<!-- toolset-table:start -->\n"
	toolsetTableEnd   = "<!-- toolset-table:end -->\n"
)

// toolsetNotes are remarks the README adds to a toolset's row.
var toolsetNotes = map[string]string{tools.ToolsetCatalog: " (never call Vaultclaw)"}

// toolsetTable is the README's toolset table, generated from the tool
// definitions: toolsets in inventory order, each tool after the first
// written without its vaultclaw prefix.
func toolsetTable() string {
	var order []string
	byToolset := map[string][]string{}
	for _, tool := range tools.Inventory() {
		if _, ok := byToolset[tool.Toolset]; !ok {
			order = append(order, tool.Toolset)
		}
		name := "`" + tool.Name + "`"
		if len(byToolset[tool.Toolset]) > 0 {
			name = "`" + strings.TrimPrefix(tool.Name, "vaultclaw") + "`"
		}
		byToolset[tool.Toolset] = append(byToolset[tool.Toolset], name)
	}
	var b strings.Builder
	b.WriteString("| toolset | tools |\n|---|---|\n")
	for _, ts := range order {
		b.WriteString("| `" + ts + "` | " + strings.Join(byToolset[ts], ", ") + toolsetNotes[ts] + " |\n")
	}
	return b.String()
}

// TestReadmeToolsetTable keeps the README's toolset table equal to the
// code (toolsets are a security control). After an intended change run:
// UPDATE_README=1 go test ./app -run TestReadmeToolsetTable
func TestReadmeToolsetTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(raw)
	start := strings.Index(readme, toolsetTableStart)
	end := strings.Index(readme, toolsetTableEnd)
	require.True(t, start >= 0 && end > start, "README must hold the toolset table between %q and %q", toolsetTableStart, toolsetTableEnd)
	got := readme[start+len(toolsetTableStart) : end]
	want := toolsetTable()
	if got != want && os.Getenv("UPDATE_README") != "" {
		readme = readme[:start+len(toolsetTableStart)] + want + readme[end:]
		require.NoError(t, os.WriteFile("../README.md", []byte(readme), 0o644))
		return
	}
	require.Equal(t, want, got, "README toolset table is stale; run UPDATE_README=1 go test ./app -run TestReadmeToolsetTable")
}

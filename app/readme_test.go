package app_test

import (
	"os"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/stretchr/testify/require"
)

// TestReadmeDocumentsEveryVariable keeps the README's table true.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(raw)
	for _, v := range config.Vars {
		require.True(t, strings.Contains(readme, "| `"+v.Name+"` |"), "README must document %s", v.Name)
	}
}

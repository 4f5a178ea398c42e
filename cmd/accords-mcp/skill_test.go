package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkillExportWritesGeneratedFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	env := &environment{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	require.Equal(t, 0, run(context.Background(), env, []string{"skill", "export", dir}), errOut.String())
	reg, err := routing.Default()
	require.NoError(t, err)
	want, err := reg.SkillFiles()
	require.NoError(t, err)
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, string(data), string(got), name)
		assert.Contains(t, out.String(), filepath.Join(dir, name))
	}
	assert.Equal(t, 2, run(context.Background(), env, []string{"skill"}))
	assert.Equal(t, 2, run(context.Background(), env, []string{"skill", "import", dir}))
	assert.True(t, strings.Contains(errOut.String(), `accords-mcp skill: unknown subcommand "import"`), errOut.String())
}

// TestSkillExportHelpWritesNothing: --help used to be taken for DIR, and
// the skill was written into a folder named "--help".
func TestSkillExportHelpWritesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	env := &environment{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	for _, args := range [][]string{{"skill", "export", "--help"}, {"skill", "export", "-h"}, {"help", "skill", "export"}} {
		out.Reset()
		require.Equal(t, 0, run(context.Background(), env, args), args)
		assert.Contains(t, out.String(), "accords-mcp skill export DIR", args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "help writes nothing")
	assert.Equal(t, 2, run(context.Background(), env, []string{"skill", "export", "a", "b"}))
	assert.Equal(t, 2, run(context.Background(), env, []string{"skill", "export"}))
}

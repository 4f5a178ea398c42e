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
	assert.True(t, strings.Contains(errOut.String(), "usage: accords-mcp skill export DIR"))
}

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of the CLI tests")

type cliEnv struct {
	t   *testing.T
	dir string
}

// run executes one command line against the test database and renders
// everything a person would see (exit code, stdout, stderr) with the
// temporary folder replaced by $DIR.
func (c *cliEnv) run(args ...string) string {
	c.t.Helper()
	var out, errb bytes.Buffer
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(c.dir, "accords.db")}
	env := &environment{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := run(context.Background(), env, args)
	clean := func(s string) string {
		s = strings.ReplaceAll(s, c.dir, "$DIR")
		return regexp.MustCompile(`took [0-9.]+[µmn]?s`).ReplaceAllString(s, "took <duration>")
	}
	return fmt.Sprintf("$ accords-mcp %s\nexit: %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, clean(out.String()), clean(errb.String()))
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./cmd/accords-mcp -run TestCLIGolden -update")
	assert.Equal(t, string(want), got, "golden %s differs; rerun with -update if the change is intended", name)
}

func TestCLIGolden(t *testing.T) {
	c := &cliEnv{t: t, dir: t.TempDir()}
	steps := []struct {
		name string
		args []string
	}{
		{"01_catalog_list", []string{"catalog", "list"}},
		{"02_search_text", []string{"search", "send", "an", "email", "with", "a", "document"}},
		{"03_search_filter_json", []string{"search", "--connector", "generic.http", "--json"}},
		{"04_search_no_match", []string{"search", "zebra", "--type", "recipe.plan.v1"}},
		{"05_search_bad_type", []string{"search", "x", "--type", "recipe"}},
		{"06_render", []string{"render", "google.workspace", "gmail_tpl_plan_send_email_v1", "--input", `to:=["ana@example.com"]`, "--input", "subject=Hello", "--input", "text_plain=Hi Ana"}},
		{"07_render_missing", []string{"render", "google.workspace@1.4.0", "gmail_tpl_plan_send_email_v1", "--input", "subject=Hello"}},
		{"08_render_json", []string{"render", "http.recipes", "http_tpl_verb_get_json_v1", "--input", "url=https://api.example.com/v1/items", "--input", "auth_target=https://api.example.com", "--json"}},
		{"09_import", []string{"catalog", "import", "testdata/import/weather.json", "testdata/import/bad.json"}},
		{"10_import_again_json", []string{"catalog", "import", "--json", "testdata/import/weather.json"}},
		{"11_search_after_import", []string{"search", "weather", "forecast"}},
		{"12_export", []string{"catalog", "export", "weather.tools@1.0.0"}},
		{"13_list_latest", []string{"catalog", "list", "--latest", "--tag", "weather"}},
		{"14_delete", []string{"catalog", "delete", "weather.tools"}},
		{"15_delete_missing_json", []string{"catalog", "delete", "weather.tools", "--json"}},
		{"16_export_hostile", []string{"catalog", "export", "../etc@1.0.0"}},
		{"17_reindex", []string{"reindex", "--quiet"}},
		{"18_catalog_usage", []string{"catalog", "frobnicate"}},
	}
	for _, s := range steps {
		golden(t, s.name, c.run(s.args...))
	}
}

func TestParseInputs(t *testing.T) {
	got, err := parseInputs([]string{"a=b=c", `n:=5`, `l:=["x"]`, "empty=", `url=https://x/?a:=b`})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "b=c", "n": 5.0, "l": []any{"x"}, "empty": "", "url": "https://x/?a:=b"}, got)
	_, err = parseInputs([]string{"noequals"})
	assert.Error(t, err)
	_, err = parseInputs([]string{"j:={bad"})
	assert.Error(t, err)
}

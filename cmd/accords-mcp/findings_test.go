package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests below each pin one rough edge a new user met (a finding of the
// CLI review) so that it stays fixed.

func newDBVars(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "accords.db")}
	code, _, errb := cliRun(t, vars, "", "catalog", "list")
	require.Equal(t, 0, code, errb)
	return vars
}

func decodeEnvelope(t *testing.T, out string) map[string]any {
	t.Helper()
	var e map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &e), out)
	for _, k := range []string{"ok", "data", "error", "meta"} {
		require.Contains(t, e, k, "an envelope has all four keys")
	}
	return e
}

// TestDoctorAfterStickyClear: with VC_AGENT_TOKEN set, a cleared scope is
// reported as cleared, not as "VC_AGENT_TOKEN is not set".
func TestDoctorAfterStickyClear(t *testing.T) {
	vars := newDBVars(t)
	vars["VC_AGENT_TOKEN"] = "vc_tok_doctor_sticky"
	vars["VC_BASE_URL"] = "http://127.0.0.1:1"
	code, _, errb := cliRun(t, vars, "", "session", "clear")
	require.Equal(t, 0, code, errb)
	_, out, _ := cliRun(t, vars, "", "doctor")
	assert.Contains(t, out, `the session of scope "default" was cleared`)
	assert.NotContains(t, out, "VC_AGENT_TOKEN is not set")
}

func TestBackupIntoFolderAndJSON(t *testing.T) {
	vars := newDBVars(t)
	dir := t.TempDir()
	code, out, errb := cliRun(t, vars, "", "backup", "--out", dir, "--json")
	require.Equal(t, 0, code, errb)
	var res struct {
		Path     string `json:"path"`
		Bytes    int64  `json:"bytes"`
		Verified bool   `json:"verified"`
		Schema   int    `json:"schema_version"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, dir, filepath.Dir(res.Path))
	assert.Regexp(t, `^accords-\d{8}T\d{6}Z\.db$`, filepath.Base(res.Path))
	assert.True(t, res.Verified)
	assert.Positive(t, res.Bytes)
	fi, err := os.Stat(res.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The file restores; --check --json says so, and says why not for junk.
	code, out, errb = cliRun(t, vars, "", "restore", "--check", res.Path, "--json")
	require.Equal(t, 0, code, errb)
	var chk map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &chk))
	assert.Equal(t, true, chk["valid"])
	junk := filepath.Join(dir, "junk.db")
	require.NoError(t, os.WriteFile(junk, bytes.Repeat([]byte("x"), 10000), 0o600))
	code, out, _ = cliRun(t, vars, "", "restore", "--check", junk, "--json")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &chk))
	assert.Equal(t, false, chk["valid"])
	assert.NotEmpty(t, chk["error"])

	// --json has nowhere to go when stdout carries the backup.
	code, _, errb = cliRun(t, vars, "", "backup", "--json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errb, "--json needs --out FILE")
}

// TestBackupToStdoutFileIsPrivate: a shell redirect creates the file 0644;
// the backup makes it 0600 and says so.
func TestBackupToStdoutFileIsPrivate(t *testing.T) {
	vars := newDBVars(t)
	path := filepath.Join(t.TempDir(), "redirect.db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Chmod(0o644))
	var errb bytes.Buffer
	env := &environment{stdin: strings.NewReader(""), stdout: f, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := run(context.Background(), env, []string{"backup"})
	require.NoError(t, f.Close())
	require.Equal(t, 0, code, errb.String())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Contains(t, errb.String(), "its mode was 0644 and is now 0600")
	code, _, cerr := cliRun(t, vars, "", "restore", "--check", path)
	assert.Equal(t, 0, code, cerr)
}

func TestRestoreMissingFile(t *testing.T) {
	vars := newDBVars(t)
	code, out, errb := cliRun(t, vars, "", "restore", "nope.db")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "accords-mcp restore: nope.db: no such file; nothing was changed\n", errb)
	assert.NotContains(t, errb, "not a valid")
}

func TestCatalogImportStdinAndEnvelope(t *testing.T) {
	vars := newDBVars(t)
	raw, err := os.ReadFile("testdata/import/weather.json")
	require.NoError(t, err)
	code, out, errb := cliRun(t, vars, string(raw), "catalog", "import", "-", "--json")
	require.Equal(t, 0, code, errb)
	e := decodeEnvelope(t, out)
	assert.Equal(t, true, e["ok"])
	items := e["data"].(map[string]any)["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "-", items[0].(map[string]any)["file"])
	assert.Equal(t, "created", items[0].(map[string]any)["result"].(map[string]any)["outcome"])

	// A failure is the error envelope, every file's outcome in its details.
	code, out, _ = cliRun(t, vars, "", "catalog", "import", "--json", "testdata/import/weather.json", "testdata/import/bad.json")
	assert.Equal(t, 1, code)
	e = decodeEnvelope(t, out)
	assert.Equal(t, false, e["ok"])
	assert.Nil(t, e["data"])
	ee := e["error"].(map[string]any)
	assert.Equal(t, "MCP_CATALOG_SCHEMA_INVALID", ee["code"])
	assert.Contains(t, ee["message"], "1 of 2 files failed to import; the first (testdata/import/bad.json)")
	det := ee["details"].(map[string]any)
	assert.Len(t, det["items"], 2)
	assert.Equal(t, float64(1), det["failed"])

	// The table says why a file failed.
	code, out, _ = cliRun(t, vars, "", "catalog", "import", "testdata/import/bad.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "error: MCP_CATALOG_SCHEMA_INVALID: bundle.title is required")
}

func TestCatalogGet(t *testing.T) {
	vars := newDBVars(t)
	code, out, errb := cliRun(t, vars, "", "catalog", "get", "google.workspace")
	require.Equal(t, 0, code, errb)
	assert.Regexp(t, `^google\.workspace@\d+\.\d+\.\d+  `, out)
	assert.Regexp(t, `(?m)^ENTRY\s+TYPE\s+CONNECTOR\s+VERB\s+TITLE$`, out)
	assert.Contains(t, out, "gmail_tpl_plan_send_email_v1")

	code, out, _ = cliRun(t, vars, "", "catalog", "get", "google.workspace", "--json")
	require.Equal(t, 0, code)
	e := decodeEnvelope(t, out)
	assert.Equal(t, "google.workspace", e["data"].(map[string]any)["bundle"].(map[string]any)["cookbook_id"])

	code, out, _ = cliRun(t, vars, "", "catalog", "get", "no.such@1.0.0", "--json")
	assert.Equal(t, 1, code)
	e = decodeEnvelope(t, out)
	assert.Equal(t, false, e["ok"])
}

// TestSearchFilterOnlyHasNoScore: with no words nothing is ranked, so no
// column of 0.000 scores.
func TestSearchFilterOnlyHasNoScore(t *testing.T) {
	vars := newDBVars(t)
	code, out, errb := cliRun(t, vars, "", "search", "--tag", "email")
	require.Equal(t, 0, code, errb)
	assert.True(t, strings.HasPrefix(out, "COOKBOOK"), out)
	assert.NotContains(t, out, "0.000")
	code, out, _ = cliRun(t, vars, "", "search", "send", "email")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "SCORE"), out)
}

func TestReindexJSON(t *testing.T) {
	vars := newDBVars(t)
	code, out, errb := cliRun(t, vars, "", "reindex", "--json")
	require.Equal(t, 0, code, errb)
	e := decodeEnvelope(t, out)
	assert.Equal(t, true, e["ok"])
	assert.Positive(t, e["data"].(map[string]any)["entries"])
	assert.NotContains(t, errb, "\r", "no progress bar with --json")
}

// TestRenderUnknownInput: a misspelt --input key is refused, naming it and
// what the template takes, instead of being dropped.
func TestRenderUnknownInput(t *testing.T) {
	vars := newDBVars(t)
	code, out, errb := cliRun(t, vars, "", "render", "google.workspace", "gmail_tpl_plan_send_email_v1",
		"--input", `to:=["ana@example.com"]`, "--input", "subjct=Hello", "--input", "text_plain=Hi")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errb, "MCP_VALIDATION_ERROR")
	assert.Contains(t, errb, "takes no input subjct; it takes ")
	assert.Regexp(t, regexp.MustCompile(`it takes [a-z_, ]*subject`), errb)
	code, _, errb = cliRun(t, vars, "", "render", "google.workspace", "gmail_tpl_plan_send_email_v1",
		"--input", `to:=["ana@example.com"]`, "--input", "subject=Hello", "--input", "text_plain=Hi")
	assert.Equal(t, 0, code, errb)
}

package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	configurationDoc = "../../docs/configuration.md"
	envTableStart    = "<!-- env-table:start -->\n"
	envTableEnd      = "<!-- env-table:end -->\n"
)

// docRefRe finds a reference to another document in a variable's text;
// the table turns it into a link relative to docs/.
var docRefRe = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[a-z0-9-]+)?`)

// envTable is the Markdown table of Vars: a default in parentheses is a
// description, any other is a literal value.
func envTable() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| Variable | Default | Meaning |\n|---|---|---|\n")
	for _, v := range Vars {
		def := cell(v.Default)
		if !strings.HasPrefix(v.Default, "(") {
			def = "`" + def + "`"
		}
		meaning := docRefRe.ReplaceAllString(cell(v.Meaning), "[docs/$1]($1$2)")
		b.WriteString("| `" + v.Name + "` | " + def + " | " + meaning + " |\n")
	}
	return b.String()
}

// TestConfigurationTable keeps the table of docs/configuration.md equal to
// Vars. After an intended change run:
// UPDATE_DOCS=1 go test ./platform/config -run TestConfigurationTable
func TestConfigurationTable(t *testing.T) {
	raw, err := os.ReadFile(configurationDoc)
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, envTableStart)
	end := strings.Index(doc, envTableEnd)
	require.True(t, start >= 0 && end > start, "%s must hold the table between %q and %q", configurationDoc, envTableStart, envTableEnd)
	got := doc[start+len(envTableStart) : end]
	want := envTable()
	if got != want && os.Getenv("UPDATE_DOCS") != "" {
		doc = doc[:start+len(envTableStart)] + want + doc[end:]
		require.NoError(t, os.WriteFile(configurationDoc, []byte(doc), 0o644))
		return
	}
	require.Equal(t, want, got, "the table of %s is stale; run UPDATE_DOCS=1 go test ./platform/config -run TestConfigurationTable", configurationDoc)
}

// suiteVars are variables the documents name that only a test suite
// reads (test/smoke, documented in docs/approvals.md), never the server.
var suiteVars = map[string]bool{
	"VC_SMOKE_MANUAL_APPROVAL":  true,
	"VC_SMOKE_WAIT_TIMEOUT_MS":  true,
	"VC_SMOKE_POLL_INTERVAL_MS": true,
	"VC_SMOKE_EXPECT_OUTCOME":   true,
	"VC_SMOKE_RECIPIENT":        true,
}

var docVarRe = regexp.MustCompile(`\b(?:ACCORDS_MCP|VC)_[A-Z0-9_]*[A-Z0-9]\b`)

// TestDocumentedVariablesExist fails when README.md or docs/*.md names an
// ACCORDS_MCP_* or VC_* variable the server does not read: a renamed or
// removed variable must leave the documents too.
func TestDocumentedVariablesExist(t *testing.T) {
	known := map[string]bool{}
	for _, v := range Vars {
		known[v.Name] = true
	}
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../../README.md")
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, name := range docVarRe.FindAllString(string(raw), -1) {
			seen++
			assert.True(t, known[name] || suiteVars[name], "%s names %s, which is not in config.Vars", filepath.Base(f), name)
		}
	}
	require.Positive(t, seen, "the documents name no variable: the glob is wrong")
}

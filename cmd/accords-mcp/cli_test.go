package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/test/syncbuf"
)

// cliRun runs one command line with vars as the whole environment and
// returns the exit code, stdout and stderr.
func cliRun(t *testing.T, vars map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	// Synchronised: a launch's proxy may still be writing a late reply as
	// run returns.
	var out, errb syncbuf.Buffer
	env := &environment{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// allCommands lists the path of every command of the tree (root first).
func allCommands() [][]string {
	root := newRoot(&environment{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, s := range c.Commands() {
			if s.Name() == "help" {
				continue
			}
			walk(s, append(append([]string(nil), path...), s.Name()))
		}
	}
	walk(root, nil)
	return out
}

// TestEveryCommandHelp: --help, -h and help CMD exit 0 and print that
// command's own usage on stdout, for every command of the tree.
func TestEveryCommandHelp(t *testing.T) {
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "accords.db")}
	cmds := allCommands()
	require.Greater(t, len(cmds), 30, "the whole tree is walked")
	for _, path := range cmds {
		name := strings.TrimSpace("accords-mcp " + strings.Join(path, " "))
		for _, args := range [][]string{append(append([]string(nil), path...), "--help"), append(append([]string(nil), path...), "-h"), append([]string{"help"}, path...)} {
			code, out, errb := cliRun(t, vars, "", args...)
			assert.Equal(t, 0, code, "%v: %s", args, errb)
			assert.Contains(t, out, "Usage:\n  "+name, "%v prints its own usage", args)
			assert.Empty(t, errb, args)
		}
	}
	_, err := os.Stat(vars["ACCORDS_MCP_DB"])
	assert.ErrorIs(t, err, os.ErrNotExist, "help opens no database")
}

// TestUsageErrors: unknown commands, flags and subcommands, and extra or
// missing arguments, exit 2 with one line naming the command.
func TestUsageErrors(t *testing.T) {
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "accords.db")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `accords-mcp: unknown command "bogus" (see 'accords-mcp --help')`},
		{[]string{"serch", "x"}, `accords-mcp: unknown command "serch"; did you mean "search"?`},
		{[]string{"help", "bogus"}, `accords-mcp help: no command "bogus"; 'accords-mcp help' lists them`},
		{[]string{"help", "search", "extra"}, `accords-mcp help: no command "search extra"`},
		{[]string{"serve", "foo"}, `accords-mcp serve: takes no arguments, got "foo" (see 'accords-mcp serve --help')`},
		{[]string{"doctor", "foo"}, `accords-mcp doctor: takes no arguments, got "foo"`},
		{[]string{"status", "--bogus"}, `accords-mcp status: unknown flag: --bogus (see 'accords-mcp status --help')`},
		{[]string{"--bogus"}, `accords-mcp: unknown flag: --bogus`},
		{[]string{"audit", "frobnicate"}, `accords-mcp audit: unknown subcommand "frobnicate"`},
		{[]string{"audit", "prove"}, `accords-mcp audit prove: name the receipt: its number (SEQ) or --call-id ID`},
		{[]string{"audit", "prove", "x"}, `accords-mcp audit prove: SEQ must be a receipt sequence number`},
		{[]string{"audit", "tail", "-n", "0"}, `accords-mcp audit tail: --limit must be positive, got 0`},
		{[]string{"audit", "acknowledge"}, `accords-mcp audit acknowledge: --note is required`},
		{[]string{"catalog", "import"}, `accords-mcp catalog import: requires at least 1 arg(s), only received 0`},
		{[]string{"catalog", "import", "-", "-"}, `accords-mcp catalog import: stdin (-) can be read only once`},
		{[]string{"catalog", "import", "--conflict-policy", "MAYBE", "x.json"}, `accords-mcp catalog import: --conflict-policy:`},
		{[]string{"catalog", "export", "a", "b"}, `accords-mcp catalog export: accepts 1 arg(s), received 2`},
		{[]string{"render", "only-one"}, `accords-mcp render: accepts 2 arg(s), received 1`},
		{[]string{"render", "a", "b", "--input", "novalue"}, `accords-mcp render: --input "novalue" must be key=value or key:=JSON`},
		{[]string{"session", "status", "extra"}, `accords-mcp session status: takes no arguments (the token is read from stdin`},
		{[]string{"session", "configure", "vc_tok_on_argv"}, `accords-mcp session configure: takes no arguments`},
		{[]string{"restore"}, `accords-mcp restore: accepts 1 arg(s), received 0`},
		{[]string{"restore", "--check", "-"}, `accords-mcp restore: --check needs a file, not stdin`},
		{[]string{"dev-vault", "approve"}, `accords-mcp dev-vault approve: accepts 1 arg(s), received 0`},
		{[]string{"dev-vault", "extra"}, `accords-mcp dev-vault: takes no arguments, got "extra"`},
		{[]string{"policy", "test", "p.toml"}, `accords-mcp policy test: --tool is required`},
		{[]string{"serve", "--http", "notanaddr"}, `accords-mcp serve: --http: "notanaddr" is not a listen address: write host:port, e.g. 127.0.0.1:8790`},
		{[]string{"--db", "", "status"}, `accords-mcp status: --db needs a file path`},
		{[]string{"import-legacy", "a", "b"}, `accords-mcp import-legacy: accepts at most 1 arg(s), received 2`},
		{[]string{"completion", "tcsh"}, `accords-mcp completion: unknown subcommand "tcsh"`},
		{[]string{"search", "x", "--type", "recipe"}, `accords-mcp search: --type must be one of`},
	} {
		code, out, errb := cliRun(t, vars, "", c.args...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errb)
		assert.Empty(t, out, c.args)
		assert.Contains(t, errb, c.want, c.args)
		lines := strings.Split(strings.TrimRight(errb, "\n"), "\n")
		assert.Len(t, lines, 1, "%v: one line: %q", c.args, errb)
	}
	_, err := os.Stat(vars["ACCORDS_MCP_DB"])
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused command line opens no database")
}

// TestGroupWithoutSubcommand prints the group's usage on stderr and exits 2.
func TestGroupWithoutSubcommand(t *testing.T) {
	for _, g := range []string{"audit", "catalog", "session", "policy", "skill", "completion"} {
		code, out, errb := cliRun(t, nil, "", g)
		assert.Equal(t, 2, code, g)
		assert.Empty(t, out, g)
		assert.Contains(t, errb, "\n  accords-mcp "+g+" [command]\n", g)
		assert.Contains(t, errb, "accords-mcp "+g+": a subcommand is needed", g)
	}
}

func TestVersion(t *testing.T) {
	code, out, errb := cliRun(t, nil, "", "version")
	require.Equal(t, 0, code, errb)
	for _, want := range []string{"accords-mcp " + version.Version, "commit:", "built:", "go:                go1.", "db schema version: "} {
		assert.Contains(t, out, want)
	}
	code, out2, _ := cliRun(t, nil, "", "--version")
	require.Equal(t, 0, code)
	assert.Equal(t, out, out2, "--version prints what version does")

	code, out, _ = cliRun(t, nil, "", "version", "--json")
	require.Equal(t, 0, code)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, version.Version, v["version"])
	assert.Equal(t, float64(len(migrations.All())), v["db_schema_version"])
	for _, k := range []string{"commit", "build_date", "go_version"} {
		assert.NotEmpty(t, v[k], k)
	}
}

// TestCompletion: the scripts load in their shells' syntax (checked by
// their names and entry points), and the completion of a command line
// offers the subcommands and the flags.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "complete -o default -F __start_accords-mcp accords-mcp", "zsh": "#compdef accords-mcp", "fish": "complete -c accords-mcp"} {
		code, out, errb := cliRun(t, nil, "", "completion", shell)
		require.Equal(t, 0, code, errb)
		assert.Contains(t, out, marker, shell)
	}
	code, out, _ := cliRun(t, nil, "", "__complete", "cat")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "catalog")
	code, out, _ = cliRun(t, nil, "", "__complete", "catalog", "")
	require.Equal(t, 0, code)
	for _, sub := range []string{"list", "get", "import", "export", "delete"} {
		assert.Contains(t, out, sub+"\t")
	}
	code, out, _ = cliRun(t, nil, "", "__complete", "search", "--type", "")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "template.plan.v1")
}

// TestSameFlagNames: a flag means one thing under one name everywhere:
// --json is a bool and "print JSON", --db is the global database flag,
// and no command spells them otherwise.
func TestSameFlagNames(t *testing.T) {
	root := newRoot(&environment{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	var walk func(c *cobra.Command)
	jsonCount := 0
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Name {
			case "json":
				jsonCount++
				assert.Equal(t, "bool", f.Value.Type(), c.CommandPath())
			case "db":
				assert.False(t, c.HasParent(), "only the root defines --db, not %s", c.CommandPath())
			case "output-json", "as-json", "database", "db-path":
				assert.Fail(t, "spelled otherwise", "%s --%s", c.CommandPath(), f.Name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	assert.GreaterOrEqual(t, jsonCount, 19, "structured output has --json throughout")
	for _, path := range [][]string{{"backup"}, {"restore"}, {"reindex"}, {"dev-vault", "pending"}, {"catalog", "get"}, {"catalog", "import"}, {"version"}, {"status"}, {"doctor"}, {"search"}} {
		c, _, err := root.Find(path)
		require.NoError(t, err)
		assert.NotNil(t, c.Flags().Lookup("json"), "%v has --json", path)
	}
	c, _, err := root.Find([]string{"search"})
	require.NoError(t, err)
	assert.NotNil(t, c.Flag("db"), "--db reaches every command")
}

// TestDBFlag: --db wins over ACCORDS_MCP_DB.
func TestDBFlag(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "env.db")}
	code, out, _ := cliRun(t, vars, "", "status", "--db", filepath.Join(dir, "flag.db"))
	assert.Equal(t, exitNotRunning, code)
	assert.Contains(t, out, filepath.Join(dir, "flag.db"))
	code, out, _ = cliRun(t, vars, "", "--db", filepath.Join(dir, "flag.db"), "status", "--json")
	assert.Equal(t, exitNotRunning, code, "status exits 3 with no daemon, --json or not")
	assert.Contains(t, out, `"db":"`+filepath.Join(dir, "flag.db"))
}

// TestEnvironmentValidatedAtStart: a bad environment value stops every
// command that reads the configuration, naming the variable.
func TestEnvironmentValidatedAtStart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "accords.db")
	for _, c := range []struct{ key, val, want string }{
		{"ACCORDS_MCP_LOG_LEVEL", "loud", `ACCORDS_MCP_LOG_LEVEL must be one of debug, info, warn, error, got "loud"`},
		{"VC_TIMEOUT_MS", "-5", `VC_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, got "-5"`},
		{"VC_BASE_URL", "notaurl", `VC_BASE_URL must be an http, https, unix or http+unix URL`},
		{"ACCORDS_MCP_HTTP_ADDR", "notanaddr", `ACCORDS_MCP_HTTP_ADDR: "notanaddr" is not a listen address`},
	} {
		for _, cmd := range [][]string{{"serve"}, {"doctor"}, {"status"}, {"search", "x"}} {
			code, _, errb := cliRun(t, map[string]string{"ACCORDS_MCP_DB": db, c.key: c.val}, "", cmd...)
			assert.Equal(t, 1, code, "%s=%s %v", c.key, c.val, cmd)
			assert.Contains(t, errb, c.want, "%s=%s %v", c.key, c.val, cmd)
		}
	}
	_, err := os.Stat(db)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is opened with a bad environment")
}

// TestServeHTTPBadAddress: a malformed address is said to be one, not
// taken for a question of authentication.
func TestServeHTTPBadAddress(t *testing.T) {
	for _, addr := range []string{"notanaddr", "127.0.0.1:http", "127.0.0.1:99999", "a b:80"} {
		code, _, errb := cliRun(t, map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "a.db")}, "", "serve", "--http", addr)
		assert.Equal(t, 2, code, addr)
		assert.Contains(t, errb, "is not a listen address", addr)
		assert.NotContains(t, errb, "auth", addr)
	}
}

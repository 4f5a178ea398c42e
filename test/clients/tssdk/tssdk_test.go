//go:build clients

package tssdk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sdkVersion is what package-lock.json pins; the test reads the installed
// package's version back, so the two cannot drift apart unnoticed.
const sdkVersion = "1.32.2"

const installMarker = ".accords-install-complete"

type report struct {
	Errors    []string `json:"errors"`
	ToolCount int      `json:"toolCount"`
	Calls     []struct {
		Name     string   `json:"name"`
		Result   string   `json:"result"`
		Warnings []string `json:"warnings"`
		Message  string   `json:"message"`
	} `json:"calls"`
	Dynamic struct {
		Start      []string `json:"start"`
		StartBytes int      `json:"startBytes"`
		After      []string `json:"after"`
		Notified   int      `json:"notified"`
	} `json:"dynamic"`
	// Attached: two launches on one daemon; [first, second] each.
	Attached struct {
		Start    [][]string `json:"start"`
		Notified []int      `json:"notified"`
		After    [][]string `json:"after"`
	} `json:"attached"`
}

// TestMain removes the built command after the tests.
func TestMain(m *testing.M) { testbin.Main(m) }

func TestTypeScriptSDKClientValidatesEveryResult(t *testing.T) {
	dir := install(t)
	bin := testbin.AccordsMCP(t)

	const token = "vc_tok_tssdk"
	sim := httptest.NewServer(vaultsim.New(vaultsim.Options{AgentToken: token}))
	defer sim.Close()
	env, err := json.Marshal(map[string]string{
		"VC_AGENT_TOKEN": token, "VC_BASE_URL": sim.URL, "ACCORDS_MCP_SECRET_KEY": strings.Repeat("ab", 32),
		"ACCORDS_MCP_STANDALONE": "true", "ACCORDS_MCP_LOG_LEVEL": "error",
	})
	require.NoError(t, err)

	script, err := os.ReadFile("client.mjs")
	require.NoError(t, err)
	// Node resolves packages from the script's folder upwards, so the
	// script runs from inside the install.
	run := filepath.Join(dir, "client-run.mjs")
	require.NoError(t, os.WriteFile(run, script, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dbDir := t.TempDir()
	// The attached launches started a daemon; it would idle out, but the
	// test stops it.
	t.Cleanup(func() {
		stop := exec.Command(bin, "stop")
		stop.Env = append(os.Environ(), "ACCORDS_MCP_DB="+filepath.Join(dbDir, "attached.db"))
		if out, err := stop.CombinedOutput(); err != nil {
			t.Logf("stopping the daemon: %v: %s", err, out)
		}
	})
	cmd := exec.CommandContext(ctx, "node", run, bin, dbDir)
	cmd.Env = append(os.Environ(), "ACCORDS_SERVER_ENV="+string(env))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, runErr := cmd.Output()
	var r report
	require.NoError(t, json.Unmarshal(stdout, &r), "node: %v\nstdout: %s\nstderr: %s", runErr, stdout, stderr.String())
	assert.Empty(t, r.Errors, "the TypeScript SDK client or Ajv strict refused something")
	require.NoError(t, runErr, stderr.String())

	// ACCORDS_MCP_TOOLSETS=all lists every tool but the dynamic-mode pair.
	all := 0
	for _, tl := range tools.Inventory() {
		if tl.Toolset != tools.ToolsetDynamic {
			all++
		}
	}
	assert.Equal(t, all, r.ToolCount)
	assert.Len(t, r.Calls, 18, "every call ran")
	for _, c := range r.Calls {
		if c.Name == "vaultclaw_recipes_search" {
			assert.Equal(t, []string{`unknown argument "limt"; did you mean "limit"?`}, c.Warnings)
		}
		if c.Result == "MCP_NOT_FOUND" {
			assert.Contains(t, c.Message, "; check ", c.Name)
		}
	}
	assert.ElementsMatch(t, []string{"vaultclaw_recipes_search", "vaultclaw_route_resolve", "vaultclaw_session_status",
		"vaultclaw_toolset_enable", "vaultclaw_toolsets_list"}, r.Dynamic.Start)
	assert.Less(t, r.Dynamic.StartBytes, 5*1024)
	assert.GreaterOrEqual(t, r.Dynamic.Notified, 1, "notifications/tools/list_changed after enabling a toolset")
	assert.Contains(t, r.Dynamic.After, "vaultclaw_approval_wait")

	// Through the daemon: each attached client's session is its own.
	core := []string{"vaultclaw_recipes_search", "vaultclaw_route_resolve", "vaultclaw_session_status",
		"vaultclaw_toolset_enable", "vaultclaw_toolsets_list"}
	require.Len(t, r.Attached.Start, 2, "the attached part ran")
	assert.Equal(t, [][]string{core, core}, r.Attached.Start)
	assert.Equal(t, []int{1, 0}, r.Attached.Notified, "list_changed reaches the client that enabled, only")
	require.Len(t, r.Attached.After, 2)
	assert.Contains(t, r.Attached.After[0], "vaultclaw_connector_execute")
	assert.Equal(t, core, r.Attached.After[1], "the other client's list is unchanged")
}

// install returns the folder holding the pinned packages, installing them
// with `npm ci` on first use into a cache keyed by the package files' hash.
// It skips only when an install is needed and the registry cannot be
// reached.
func install(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found on PATH (CI machines have Node 20): %v", err)
	}
	pkg, err := os.ReadFile("package.json")
	require.NoError(t, err)
	lock, err := os.ReadFile("package-lock.json")
	require.NoError(t, err)
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	root := cacheRoot()
	dir := filepath.Join(root, "tssdk-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, installMarker)); err != nil {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "npm not found on PATH")
		pingCtx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(pingCtx, npm, "ping", "--fetch-retries=1", "--fetch-timeout=20000").CombinedOutput(); err != nil {
			t.Skipf("the npm registry cannot be reached, so the TypeScript SDK cannot be installed: %v; %s", err, out)
		}
		require.NoError(t, os.MkdirAll(root, 0o755))
		tmp, err := os.MkdirTemp(root, "installing-")
		require.NoError(t, err)
		defer os.RemoveAll(tmp)
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "package.json"), pkg, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "package-lock.json"), lock, 0o644))
		ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel2()
		cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci: %s", out)
		require.NoError(t, os.WriteFile(filepath.Join(tmp, installMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644))
		if err := os.Rename(tmp, dir); err != nil {
			// Another run finished the same install first; use it.
			_, statErr := os.Stat(filepath.Join(dir, installMarker))
			require.NoError(t, statErr, "move the install into place: %v", err)
		}
	}
	var meta struct {
		Version string `json:"version"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &meta))
	require.Equal(t, sdkVersion, meta.Version, "the installed SDK is not the pinned one")
	return dir
}

// cacheRoot is ACCORDS_CLIENTS_CACHE, else the user cache folder, else the
// temporary folder.
func cacheRoot() string {
	if v := strings.TrimSpace(os.Getenv("ACCORDS_CLIENTS_CACHE")); v != "" {
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "accords-mcp", "clients")
	}
	return filepath.Join(os.TempDir(), "accords-clients-cache")
}

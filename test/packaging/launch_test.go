//go:build packaging

package packaging

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// built returns a file under dist/, failing in CI and skipping elsewhere
// when `make mcpb npm` has not been run.
func built(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "dist", name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: run make mcpb npm first", p)
		}
		t.Skipf("%s is missing: run make mcpb npm first", p)
	}
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// hostEnv is an environment built from nothing, as a desktop host gives a
// server: a temporary HOME (so the server's default database and daemon
// are the test's own), PATH, and the launch's own entries.
func hostEnv(home string, extra map[string]string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	if runtime.GOOS == "windows" {
		env = append(env, "USERPROFILE="+home, "APPDATA="+filepath.Join(home, "AppData", "Roaming"))
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// connect launches cmd as a stdio server; the session closes when the
// test ends.
func connect(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "packaging-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	require.NoError(t, err, "stderr:\n%s", &stderr)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callOK calls a tool and requires the envelope's ok.
func callOK(t *testing.T, cs *mcp.ClientSession, name string) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	require.NoError(t, err)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var env map[string]any
	require.NoError(t, json.Unmarshal(raw, &env))
	require.Equal(t, true, env["ok"], "%s: %s", name, raw)
	return env
}

func unzip(t *testing.T, archive, dir string) {
	t.Helper()
	zr, err := zip.OpenReader(archive)
	require.NoError(t, err)
	defer zr.Close()
	for _, f := range zr.File {
		dest := filepath.Join(dir, filepath.FromSlash(f.Name))
		require.True(t, strings.HasPrefix(dest, dir+string(filepath.Separator)), "entry %q leaves the folder", f.Name)
		if f.FileInfo().IsDir() {
			require.NoError(t, os.MkdirAll(dest, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
		rc, err := f.Open()
		require.NoError(t, err)
		out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode().Perm()|0o600)
		require.NoError(t, err)
		_, err = io.Copy(out, rc)
		require.NoError(t, err)
		require.NoError(t, out.Close())
		require.NoError(t, rc.Close())
	}
}

// TestBundleLaunchesAsAHostWould unpacks dist/accords-mcp.mcpb and starts
// the server from its manifest alone: this platform's command (the
// platform override where there is one), the args and env, with
// ${__dirname} the unpacked folder and ${user_config.*} the user's
// settings; then lists the tools, which must be the ones the manifest
// names, and reaches Vaultclaw with the URL and token given as settings.
func TestBundleLaunchesAsAHostWould(t *testing.T) {
	bundle := built(t, "accords-mcp.mcpb")
	dir := t.TempDir()
	unzip(t, bundle, dir)

	var m manifest
	readJSON(t, filepath.Join(dir, "manifest.json"), &m)
	assert.Equal(t, version.Version, m.Version)
	l := m.Server.MCPConfig.launch
	hostOS := map[string]string{"windows": "win32"}[runtime.GOOS]
	if hostOS == "" {
		hostOS = runtime.GOOS
	}
	if o, ok := m.Server.MCPConfig.PlatformOverrides[hostOS]; ok {
		if o.Command != "" {
			l.Command = o.Command
		}
		if o.Args != nil {
			l.Args = o.Args
		}
		if o.Env != nil {
			l.Env = o.Env
		}
	}

	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: "vc_tok_bundle"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	settings := map[string]string{"vaultclaw_url": sim.URL, "agent_token": "vc_tok_bundle"}
	for k := range m.UserConfig {
		require.Contains(t, settings, k, "a setting the test does not fill in")
	}
	subst := func(s string) string {
		s = strings.ReplaceAll(s, "${__dirname}", dir)
		return userConfigRef.ReplaceAllStringFunc(s, func(ref string) string {
			return settings[userConfigRef.FindStringSubmatch(ref)[1]]
		})
	}
	env := map[string]string{}
	for k, v := range l.Env {
		env[k] = subst(v)
	}
	args := make([]string, len(l.Args))
	for i, a := range l.Args {
		args[i] = subst(a)
	}
	bin := subst(l.Command)
	info, err := os.Stat(bin)
	require.NoError(t, err, "the command the manifest names is in the bundle")
	if runtime.GOOS != "windows" {
		assert.NotZero(t, info.Mode().Perm()&0o111, "the bundle keeps the binary executable")
	}

	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = hostEnv(home, env)
	// Cleanups run last first: the session closes, then the daemon stops.
	stop := exec.Command(bin, "stop")
	stop.Env = cmd.Env
	t.Cleanup(func() { _ = stop.Run() })
	cs := connect(t, cmd)

	var want []string
	for _, tl := range m.Tools {
		want = append(want, tl.Name)
	}
	slices.Sort(want)
	assert.Equal(t, want, toolNames(t, cs), "the manifest lists the tools the server lists")
	callOK(t, cs, "vaultclaw_connectors_list")
}

// TestNpmLauncherRunsOffline installs the launcher and this platform's
// package from dist/*.tgz into a temporary prefix with npm --offline (the
// other platforms' optional packages cannot be fetched and are skipped, as
// npm skips them when their os or cpu does not match), then runs
// `npx accords-mcp` there as a client would and lists the tools.
func TestNpmLauncherRunsOffline(t *testing.T) {
	prefix, npmEnv := installLauncher(t)
	npx, err := exec.LookPath("npx")
	require.NoError(t, err)

	ver := exec.Command(npx, "--offline", "accords-mcp", "version", "--json")
	ver.Dir = prefix
	ver.Env = npmEnv
	out, err := ver.Output()
	require.NoError(t, err)
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	assert.Equal(t, version.Version, v.Version)

	cmd := exec.Command(npx, "--offline", "accords-mcp")
	cmd.Dir = prefix
	cmd.Env = npmEnv
	stop := exec.Command(npx, "--offline", "accords-mcp", "stop")
	stop.Dir = prefix
	stop.Env = npmEnv
	t.Cleanup(func() { _ = stop.Run() })
	cs := connect(t, cmd)
	names := toolNames(t, cs)
	assert.Contains(t, names, "vaultclaw_session_status")
	callOK(t, cs, "vaultclaw_session_status")
}

// installLauncher installs the launcher and this platform's package from
// dist/*.tgz into a temporary prefix with npm --offline (the other
// platforms' optional packages cannot be fetched and are skipped, as npm
// skips them when their os or cpu does not match); it returns the prefix
// and the environment to run npm and npx in (a temporary HOME and cache).
func installLauncher(t *testing.T) (string, []string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	plat := map[string]string{"windows": "win32"}[runtime.GOOS]
	if plat == "" {
		plat = runtime.GOOS
	}
	cpu := map[string]string{"amd64": "x64"}[runtime.GOARCH]
	if cpu == "" {
		cpu = runtime.GOARCH
	}
	launcher := built(t, "accords-mcp-"+version.Version+".tgz")
	platPkg := built(t, "accords-mcp-"+plat+"-"+cpu+"-"+version.Version+".tgz")

	prefix := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prefix, "package.json"), []byte(`{"name":"try-accords","private":true}`), 0o644))
	home := t.TempDir()
	npmEnv := append(hostEnv(home, nil), "npm_config_cache="+filepath.Join(home, ".npm"), "npm_config_update_notifier=false")
	install := exec.Command(npm, "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", platPkg, launcher)
	install.Dir = prefix
	install.Env = npmEnv
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm install --offline:\n%s", out)
	return prefix, npmEnv
}

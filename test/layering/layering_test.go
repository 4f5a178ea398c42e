// Package layering holds the test that enforces the import rules between the
// layers described in docs/architecture.md. It reads the import graph with
// `go list`, so it needs the go command (which `go test` puts on PATH) and
// no extra dependency.
package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	module = "github.com/accordsai/accords-mcp"
	goSDK  = "github.com/modelcontextprotocol/go-sdk"
)

// tagSets are the build-tag combinations whose files are checked: the
// default build and the tagged end-to-end suites.
var tagSets = []string{"", "integration,reliability"}

// listed is the part of `go list -json` output the rules need.
type listed struct {
	ImportPath   string
	Standard     bool
	Deps         []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// graph is the union over tagSets of every package in the build, module
// packages and their dependencies alike.
type graph struct {
	pkgs  map[string]*listed
	local []string // module packages, sorted
}

var (
	loadOnce sync.Once
	loaded   *graph
	loadErr  error
)

func load(t *testing.T) *graph {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = loadGraph() })
	if loadErr != nil {
		t.Fatalf("load the import graph: %v", loadErr)
	}
	return loaded
}

func loadGraph() (*graph, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	g := &graph{pkgs: map[string]*listed{}}
	for _, tags := range tagSets {
		cmd := exec.Command("go", "list", "-e", "-deps", "-json", "-tags="+tags, "./...")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list -tags=%q: %w: %s", tags, err, stderr.String())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listed
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("decode go list output: %w", err)
			}
			if p.Error != nil && isLocal(p.ImportPath) {
				return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
			}
			if have, ok := g.pkgs[p.ImportPath]; ok {
				have.Deps = union(have.Deps, p.Deps)
				have.Imports = union(have.Imports, p.Imports)
				have.TestImports = union(have.TestImports, p.TestImports)
				have.XTestImports = union(have.XTestImports, p.XTestImports)
				continue
			}
			g.pkgs[p.ImportPath] = &p
		}
	}
	for path := range g.pkgs {
		if isLocal(path) {
			g.local = append(g.local, path)
		}
	}
	slices.Sort(g.local)
	return g, nil
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func isLocal(path string) bool { return strings.HasPrefix(path, module+"/") }

// rel is a module package's path inside the module, e.g. "domain/catalog".
func rel(path string) string { return strings.TrimPrefix(path, module+"/") }

// in reports whether the module package path is dir or below it.
func in(path string, dirs ...string) bool {
	if !isLocal(path) {
		return false
	}
	r := rel(path)
	for _, d := range dirs {
		if r == d || strings.HasPrefix(r, d+"/") {
			return true
		}
	}
	return false
}

// The layers, by folder.

// layers are the module's top-level folders from the bottom up: a package
// may import packages of its own layer or below, never above. The MCP
// request path runs transport → gateway → tools → domain →
// store/index/vault → platform; ops (backup, doctor, admin) sits over the
// services it operates; app composes everything; cmd and test/... are
// entry points and harnesses.
var layers = [][]string{
	{"platform"},
	{"store", "index", "migrations", "vault"},
	{"domain"},
	{"tools"},
	{"gateway"},
	{"transport"},
	{"ops"},
	{"app"},
	{"cmd", "test"},
}

// rank is the position in layers of a module package, -1 for any other.
func rank(path string) int {
	for i, dirs := range layers {
		if in(path, dirs...) {
			return i
		}
	}
	return -1
}

// maxTopLevelFolders bounds the folders at the module root (hidden ones
// aside): a new concern goes into an existing layer.
const maxTopLevelFolders = 16

// mcpFacing packages speak MCP: the binaries, the composition root, the
// transports, the gateway glue, the tools, and the end-to-end test clients.
func mcpFacing(path string) bool {
	return in(path, "cmd", "app", "transport", "tools", "test") || rel(path) == "gateway"
}

// mcpLayer packages are what inner layers must never import.
func mcpLayer(path string) bool {
	return in(path, "tools", "transport", "app") || rel(path) == "gateway"
}

// inner packages hold the domain, storage, Vault access, platform services,
// gateway services and operations: nothing in them may depend on the MCP
// layers.
func inner(path string) bool {
	return in(path, "domain", "store", "index", "migrations", "vault", "platform", "ops",
		"gateway/audit", "gateway/oauth", "gateway/policy", "gateway/rules", "gateway/ratelimit")
}

func storage(path string) bool { return in(path, "store", "index", "migrations") }

func domain(path string) bool { return in(path, "domain") }

func isGoSDK(path string) bool { return path == goSDK || strings.HasPrefix(path, goSDK+"/") }

// rule forbids packages that match from to depend on packages that match
// forbidden.
type rule struct {
	from, forbidden func(path string) bool
	why             string
}

// testExceptions are direct test imports a rule would refuse, by importing
// package and imported package (both relative to the module). Each is a
// test that drives the real layer above instead of a stand-in.
var testExceptions = map[string][]string{
	// The backup round-trip tests open a real app, fill it through its
	// tools and back it up.
	"ops/backup": {"app"},
	// The metrics integration test scrapes a running app, with approvals
	// pending on a simulated Vault.
	"platform/metrics": {"app", "domain/approval", "vault/vaultsim"},
	// The gateway's tests serve its middleware through the real server
	// builder and HTTP bridge (bearer tokens, client addresses, batches).
	"gateway": {"transport"},
	// Every tool's results are validated against its output schema on a
	// real app; the stdio limits are checked on the app's stdio server.
	"tools":     {"app"},
	"transport": {"app"},
}

// check applies r to every from-package: its build (all files but tests)
// must not depend on a forbidden package directly or through other
// packages; its tests must not import one directly (test harnesses such
// as test/testenv may pull the full server in).
func (g *graph) check(t *testing.T, r rule) {
	t.Helper()
	for _, p := range g.local {
		if !r.from(p) {
			continue
		}
		lp := g.pkgs[p]
		for _, imp := range lp.Imports {
			if r.forbidden(imp) {
				t.Errorf("%s imports %s: %s", rel(p), imp, r.why)
				continue
			}
			if dep, ok := g.pkgs[imp]; ok {
				if i := slices.IndexFunc(dep.Deps, r.forbidden); i >= 0 {
					t.Errorf("%s imports %s, which depends on %s: %s", rel(p), imp, dep.Deps[i], r.why)
				}
			}
		}
		for _, imp := range union(lp.TestImports, lp.XTestImports) {
			if r.forbidden(imp) && !slices.Contains(testExceptions[rel(p)], rel(imp)) {
				t.Errorf("%s (tests) imports %s: %s", rel(p), imp, r.why)
			}
		}
	}
}

func TestOnlyMCPFacingPackagesImportGoSDK(t *testing.T) {
	load(t).check(t, rule{
		from:      func(p string) bool { return !mcpFacing(p) },
		forbidden: isGoSDK,
		why:       "only cmd/..., app, transport, the gateway glue, tools and test/... may use the MCP SDK",
	})
}

func TestInnerLayersDoNotImportTheMCPLayers(t *testing.T) {
	load(t).check(t, rule{
		from:      inner,
		forbidden: mcpLayer,
		why:       "domain, storage, vault, platform, gateway services and ops must not depend on tools, the gateway glue, transport or app",
	})
}

func TestStorageImportsNoDomain(t *testing.T) {
	load(t).check(t, rule{
		from:      storage,
		forbidden: domain,
		why:       "store, index and migrations sit below the domain and must not import it",
	})
}

// TestEveryPackageHasALayer makes a new folder take a position in the rules
// above instead of escaping them.
func TestEveryPackageHasALayer(t *testing.T) {
	g := load(t)
	if len(g.local) < 20 {
		t.Fatalf("go list found only %d module packages; is the module root right?", len(g.local))
	}
	for _, p := range g.local {
		if !mcpFacing(p) && !inner(p) {
			t.Errorf("package %s belongs to no layer: place it in test/layering/layering_test.go", rel(p))
		}
	}
}

// TestImportsPointDown: no package imports a layer above its own (layers),
// in its build or, directly, in its tests (test/... harnesses aside).
func TestImportsPointDown(t *testing.T) {
	g := load(t)
	for _, p := range g.local {
		from := rank(p)
		if from < 0 {
			continue
		}
		up := func(imp string) bool { return rank(imp) > from }
		lp := g.pkgs[p]
		for _, imp := range lp.Imports {
			if up(imp) {
				t.Errorf("%s imports %s, a layer above its own: imports point down %s", rel(p), rel(imp), layerOrder())
			}
		}
		for _, imp := range union(lp.TestImports, lp.XTestImports) {
			if up(imp) && !in(imp, "test") && !slices.Contains(testExceptions[rel(p)], rel(imp)) {
				t.Errorf("%s (tests) imports %s, a layer above its own: imports point down %s", rel(p), rel(imp), layerOrder())
			}
		}
	}
}

func layerOrder() string {
	names := make([]string, len(layers))
	for i, dirs := range slices.Backward(layers) {
		names[len(layers)-1-i] = strings.Join(dirs, "/")
	}
	return strings.Join(names, " → ")
}

// TestGatewayImportsNoTransport: the gateway hands the composition root
// its middleware; it never builds or serves servers itself.
func TestGatewayImportsNoTransport(t *testing.T) {
	load(t).check(t, rule{
		from:      func(p string) bool { return in(p, "gateway") },
		forbidden: func(p string) bool { return in(p, "transport", "app", "cmd") },
		why:       "the gateway exports middleware that app places in the transport's list",
	})
}

// TestToolsImportNoGateway: the tools see the gateway only through
// interfaces they declare (tools.AuditLister, tools.ToolsetControl),
// adapted by app.
func TestToolsImportNoGateway(t *testing.T) {
	load(t).check(t, rule{
		from:      func(p string) bool { return in(p, "tools") },
		forbidden: func(p string) bool { return in(p, "gateway", "transport", "ops", "app", "cmd") },
		why:       "tools sit below the gateway and the transport",
	})
}

// TestStorageAndVaultImportNothingAbove: store, index, migrations and
// vault (simulator included) know no domain and no MCP layer.
func TestStorageAndVaultImportNothingAbove(t *testing.T) {
	load(t).check(t, rule{
		from:      func(p string) bool { return in(p, "store", "index", "migrations", "vault") },
		forbidden: func(p string) bool { return in(p, "domain", "tools", "gateway", "transport", "ops", "app", "cmd") },
		why:       "store, index, migrations and vault take plain values (vault.Endpoint), not domain types",
	})
}

// TestPlatformImportsOnlyPlatform: platform packages are the bottom layer.
func TestPlatformImportsOnlyPlatform(t *testing.T) {
	load(t).check(t, rule{
		from:      func(p string) bool { return in(p, "platform") },
		forbidden: func(p string) bool { return isLocal(p) && !in(p, "platform", "test") },
		why:       "platform imports nothing of the module above it",
	})
}

func TestAtMostSixteenTopLevelFolders(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(strings.TrimSpace(string(gomod))))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) > maxTopLevelFolders {
		t.Errorf("%d top-level folders (%s); at most %d: place new code in an existing layer",
			len(dirs), strings.Join(dirs, ", "), maxTopLevelFolders)
	}
}

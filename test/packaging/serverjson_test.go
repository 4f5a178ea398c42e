// Package packaging checks what the repository publishes besides its
// source: the MCP Registry entry (server.json), the Claude Desktop bundle
// (cmd/accords-mcp/packaging/mcpb) and the npm launcher (cmd/accords-mcp/packaging/npm). The files are
// checked here against each other, the binary's version and the variables
// the server reads; the tests tagged `packaging` launch the server through
// the built bundle and packages (make mcpb npm, then .ci/extra).
package packaging

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// registrySchema is the server.json schema the entry is written against.
const registrySchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

const registryName = "io.github.accordsai/accords-mcp"

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v), path)
}

// unknownKeys returns m's keys that are not in allowed.
func unknownKeys(m map[string]any, allowed ...string) []string {
	var out []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func knownVariable(name string) bool {
	return slices.ContainsFunc(config.Vars, func(v config.Var) bool { return v.Name == name })
}

// TestServerJSON checks server.json against what the registry's schema
// (2025-12-11) requires of a server and of each package, and against the
// binary's version and the npm and bundle files it points at.
func TestServerJSON(t *testing.T) {
	var s map[string]any
	readJSON(t, "../../server.json", &s)

	assert.Equal(t, registrySchema, s["$schema"])
	assert.Empty(t, unknownKeys(s, "$schema", "name", "title", "description", "repository", "version",
		"websiteUrl", "icons", "packages", "remotes", "_meta"), "keys the schema does not define")
	for _, k := range []string{"name", "description", "version"} {
		require.IsType(t, "", s[k], "required string %s", k)
	}
	name := s["name"].(string)
	assert.Equal(t, registryName, name)
	assert.Regexp(t, `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, name)
	assert.True(t, len(name) >= 3 && len(name) <= 200)
	desc := s["description"].(string)
	assert.True(t, len(desc) >= 1 && len(desc) <= 100, "description is 1 to 100 characters, not %d", len(desc))
	if title, ok := s["title"].(string); ok {
		assert.True(t, len(title) >= 1 && len(title) <= 100)
	}
	assert.Equal(t, version.Version, s["version"], "the version the binary reports")
	repo, ok := s["repository"].(map[string]any)
	require.True(t, ok)
	assert.NotEmpty(t, repo["url"])
	assert.NotEmpty(t, repo["source"])

	pkgs, ok := s["packages"].([]any)
	require.True(t, ok)
	byType := map[string]map[string]any{}
	for _, p := range pkgs {
		pkg := p.(map[string]any)
		// The schema's Package has additionalProperties: false.
		assert.Empty(t, unknownKeys(pkg, "registryType", "registryBaseUrl", "identifier", "version", "fileSha256",
			"runtimeHint", "transport", "runtimeArguments", "packageArguments", "environmentVariables"))
		for _, k := range []string{"registryType", "identifier"} {
			require.IsType(t, "", pkg[k], "required string %s", k)
		}
		tr, ok := pkg["transport"].(map[string]any)
		require.True(t, ok, "required transport")
		assert.Equal(t, "stdio", tr["type"])
		assert.Equal(t, version.Version, pkg["version"], "a specific version, the binary's")
		if sum, ok := pkg["fileSha256"]; ok {
			assert.Regexp(t, `^[a-f0-9]{64}$`, sum)
		}
		envs, _ := pkg["environmentVariables"].([]any)
		assert.NotEmpty(t, envs)
		for _, e := range envs {
			ev := e.(map[string]any)
			require.IsType(t, "", ev["name"], "an environment variable needs a name")
			assert.True(t, knownVariable(ev["name"].(string)), "%s is a variable the server reads", ev["name"])
			if f, ok := ev["format"]; ok {
				assert.Contains(t, []any{"string", "number", "boolean", "filepath"}, f)
			}
		}
		byType[pkg["registryType"].(string)] = pkg
	}
	require.Contains(t, byType, "npm")
	require.Contains(t, byType, "mcpb")

	// The npm package is the launcher in cmd/accords-mcp/packaging/npm, and names this
	// entry (the registry checks mcpName).
	var pj map[string]any
	readJSON(t, "../../cmd/accords-mcp/packaging/npm/accords-mcp/package.json", &pj)
	assert.Equal(t, byType["npm"]["identifier"], pj["name"])
	assert.Equal(t, version.Version, pj["version"])
	assert.Equal(t, registryName, pj["mcpName"])
	assert.Equal(t, "https://registry.npmjs.org", byType["npm"]["registryBaseUrl"])
	deps, _ := pj["optionalDependencies"].(map[string]any)
	assert.Len(t, deps, 6, "linux, darwin and win32 for x64 and arm64")
	for dep, v := range deps {
		assert.Regexp(t, `^accords-mcp-(linux|darwin|win32)-(x64|arm64)$`, dep)
		assert.Equal(t, version.Version, v, dep)
	}

	// The bundle is the release asset of this version; its manifest asks
	// for the variables the entry lists.
	id := byType["mcpb"]["identifier"].(string)
	assert.Equal(t, "https://github.com/accordsai/accords-mcp/releases/download/v"+version.Version+"/accords-mcp.mcpb", id)
	m := readManifest(t)
	assert.Equal(t, version.Version, m.Version)
	var mcpbEnv []string
	for _, e := range byType["mcpb"]["environmentVariables"].([]any) {
		mcpbEnv = append(mcpbEnv, e.(map[string]any)["name"].(string))
	}
	slices.Sort(mcpbEnv)
	assert.Equal(t, mcpbEnv, slices.Sorted(maps.Keys(m.Server.MCPConfig.Env)))
}

// manifest is the part of an MCPB manifest (0.3) the tests read.
type manifest struct {
	ManifestVersion string `json:"manifest_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	Server          struct {
		Type       string `json:"type"`
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			launch
			PlatformOverrides map[string]launch `json:"platform_overrides"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	UserConfig map[string]struct {
		Type      string `json:"type"`
		Title     string `json:"title"`
		Default   any    `json:"default"`
		Sensitive bool   `json:"sensitive"`
		Required  bool   `json:"required"`
	} `json:"user_config"`
}

// launch is a host's command line for the server.
type launch struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	var m manifest
	readJSON(t, "../../cmd/accords-mcp/packaging/mcpb/manifest.json", &m)
	return m
}

var userConfigRef = regexp.MustCompile(`\$\{user_config\.([A-Za-z0-9_]+)\}`)

// TestBundleManifest checks the manifest's promises that need no build:
// a binary server with an entry point per operating system, the Vaultclaw
// URL and a sensitive agent token as user settings, every reference to a
// setting defined, and only variables the server reads.
func TestBundleManifest(t *testing.T) {
	m := readManifest(t)
	assert.Equal(t, "0.3", m.ManifestVersion)
	assert.Equal(t, "binary", m.Server.Type)
	assert.Equal(t, "${__dirname}/"+m.Server.EntryPoint, m.Server.MCPConfig.Command)
	assert.ElementsMatch(t, []string{"darwin", "win32"}, slices.Collect(maps.Keys(m.Server.MCPConfig.PlatformOverrides)))
	assert.True(t, strings.HasSuffix(m.Server.MCPConfig.PlatformOverrides["win32"].Command, ".exe"))

	tok, ok := m.UserConfig["agent_token"]
	require.True(t, ok)
	assert.True(t, tok.Sensitive, "the token is kept by the host, not shown")
	url, ok := m.UserConfig["vaultclaw_url"]
	require.True(t, ok)
	assert.Equal(t, "http://127.0.0.1:8080", url.Default)
	for k, v := range m.Server.MCPConfig.Env {
		assert.True(t, knownVariable(k), "%s is a variable the server reads", k)
		for _, ref := range userConfigRef.FindAllStringSubmatch(v, -1) {
			assert.Contains(t, m.UserConfig, ref[1], "%s refers to an undefined setting", k)
		}
	}
	assert.Equal(t, "${user_config.agent_token}", m.Server.MCPConfig.Env["VC_AGENT_TOKEN"])
	assert.Equal(t, "${user_config.vaultclaw_url}", m.Server.MCPConfig.Env["VC_BASE_URL"])
	assert.NotEmpty(t, m.Tools)
	for _, tl := range m.Tools {
		assert.True(t, strings.HasPrefix(tl.Name, "vaultclaw_"), tl.Name)
		assert.NotEmpty(t, tl.Description, tl.Name)
	}
}

package packaging

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fenced returns the ```lang blocks of a Markdown file, by opening line.
func fenced(t *testing.T, path, lang string) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	blocks := map[int]string{}
	sc := bufio.NewScanner(f)
	var cur *strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && line == "```"+lang:
			cur, start = &strings.Builder{}, n
		case cur != nil && line == "```":
			blocks[start] = cur.String()
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	return blocks
}

// assertLaunches checks that a stdio entry of a client's config starts the
// npm launcher with variables the server reads.
func assertLaunches(t *testing.T, where string, entry map[string]any) {
	t.Helper()
	if _, ok := entry["command"]; !ok {
		return // an HTTP entry
	}
	assert.Equal(t, "npx", entry["command"], where)
	assert.Equal(t, []any{"-y", "accords-mcp"}, entry["args"], where)
	if env, ok := entry["env"].(map[string]any); ok {
		for k := range env {
			assert.True(t, knownVariable(k), "%s: %s is a variable the server reads", where, k)
		}
	}
}

// TestClientBlocksParse parses every JSON and TOML block of docs/clients.md
// as the client it is written for would: each must parse, hold its servers
// under the key that client reads (VS Code: `servers`; Codex:
// `mcp_servers`; the others `mcpServers`), start the npm launcher, and point
// HTTP entries at the bridge's endpoint.
func TestClientBlocksParse(t *testing.T) {
	const doc = "../../docs/clients.md"
	js := fenced(t, doc, "json")
	require.NotEmpty(t, js)
	for line, text := range js {
		var cfg map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &cfg), "clients.md:%d", line)
		servers, ok := cfg["mcpServers"].(map[string]any)
		if !ok {
			servers, ok = cfg["servers"].(map[string]any)
		}
		require.True(t, ok, "clients.md:%d has neither mcpServers nor servers", line)
		require.Contains(t, servers, "accords", "clients.md:%d", line)
		for name, e := range servers {
			entry := e.(map[string]any)
			assertLaunches(t, doc+":"+name, entry)
			for _, k := range []string{"url", "httpUrl"} {
				if u, ok := entry[k]; ok {
					assert.Equal(t, "http://127.0.0.1:8765/v1/mcp", u, "clients.md:%d", line)
				}
			}
		}
	}
	tm := fenced(t, doc, "toml")
	require.NotEmpty(t, tm)
	for line, text := range tm {
		var cfg struct {
			MCPServers map[string]map[string]any `toml:"mcp_servers"`
		}
		_, err := toml.Decode(text, &cfg)
		require.NoError(t, err, "clients.md:%d", line)
		require.Contains(t, cfg.MCPServers, "accords", "clients.md:%d", line)
		for name, entry := range cfg.MCPServers {
			assertLaunches(t, doc+":"+name, entry)
		}
	}
}

var deepLink = regexp.MustCompile(`\((https://(?:cursor\.com/en/install-mcp|insiders\.vscode\.dev/redirect/mcp/install)\?[^)]+)\)`)

// TestDeepLinksInstallTheLauncher decodes the "Add to Cursor" (base64
// config) and "Install in VS Code" (URL-encoded config) links.
func TestDeepLinksInstallTheLauncher(t *testing.T) {
	raw, err := os.ReadFile("../../docs/clients.md")
	require.NoError(t, err)
	links := deepLink.FindAllStringSubmatch(string(raw), -1)
	require.Len(t, links, 2)
	for _, l := range links {
		u, err := url.Parse(l[1])
		require.NoError(t, err)
		q := u.Query()
		assert.Equal(t, "accords", q.Get("name"), l[1])
		cfgText := q.Get("config")
		if strings.HasPrefix(u.Host, "cursor") {
			b, err := base64.StdEncoding.DecodeString(cfgText)
			require.NoError(t, err)
			cfgText = string(b)
		}
		var cfg map[string]any
		require.NoError(t, json.Unmarshal([]byte(cfgText), &cfg), l[1])
		assertLaunches(t, u.Host, cfg)
		assert.Contains(t, cfg, "command")
	}
}

package main

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exchange reads until the response to id, returning it and how many
// notifications/tools/list_changed came before it.
func (p *proc) exchange(t *testing.T, id float64) (map[string]any, int) {
	t.Helper()
	changed := 0
	for {
		m := p.recv(t)
		if m["method"] == "notifications/tools/list_changed" {
			changed++
			continue
		}
		if m["id"] == id {
			return m, changed
		}
	}
}

// awaitListChanged reads until a list_changed notification arrives.
func (p *proc) awaitListChanged(t *testing.T) {
	t.Helper()
	for {
		if m := p.recv(t); m["method"] == "notifications/tools/list_changed" {
			return
		}
	}
}

func toolNames(t *testing.T, res map[string]any) []string {
	t.Helper()
	var out []string
	for _, tl := range res["result"].(map[string]any)["tools"].([]any) {
		out = append(out, tl.(map[string]any)["name"].(string))
	}
	return out
}

// The real binary over stdio, as a 2025-11-25 client sees it: a dynamic
// session starts with the core, grows when a toolset is enabled, and is
// told when a SIGHUP policy reload changes what it may call.
func TestStdioListChangedOnEnableAndOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"*\"]\n"), 0o600))
	p := start(t, filepath.Join(dir, "accords.db"), "ACCORDS_MCP_POLICY_FILE="+pol, "ACCORDS_MCP_DYNAMIC_TOOLSETS=true")

	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	init, _ := p.exchange(t, 1)
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	assert.Equal(t, true, caps["tools"].(map[string]any)["listChanged"])
	assert.Contains(t, init["result"].(map[string]any)["instructions"], "Safe order of work")
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list, _ := p.exchange(t, 2)
	assert.ElementsMatch(t, []string{"vaultclaw_session_status", "vaultclaw_route_resolve", "vaultclaw_recipes_search",
		"vaultclaw_toolsets_list", "vaultclaw_toolset_enable"}, toolNames(t, list))

	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_toolset_enable","arguments":{"toolset":"catalog"}}}`)
	res, changed := p.exchange(t, 3)
	require.Equal(t, true, structured(t, res)["ok"], "%v", res)
	if changed == 0 {
		p.awaitListChanged(t)
	}
	p.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	list, _ = p.exchange(t, 4)
	names := toolNames(t, list)
	assert.Contains(t, names, "vaultclaw_template_render")
	assert.NotContains(t, names, "vaultclaw_connector_execute")

	// Narrow the stdio caller and send the signal an operator sends.
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"session_admin\"]\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.awaitListChanged(t)
	p.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	list, _ = p.exchange(t, 5)
	names = toolNames(t, list)
	assert.False(t, slices.Contains(names, "vaultclaw_template_render"), "catalog tools need catalog_view, which the reload took away: %v", names)
	assert.Contains(t, names, "vaultclaw_session_status")
}

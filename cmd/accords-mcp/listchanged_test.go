package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

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

// pendingChanged reads what p has sent within d, counting list_changed
// notifications (nothing else is outstanding when it is called).
func (p *proc) pendingChanged(t *testing.T, d time.Duration) int {
	t.Helper()
	n := 0
	deadline := time.Now().Add(d)
	for {
		// A ping answered proves everything sent before it was read.
		p.send(t, `{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
		for {
			m := p.recv(t)
			if m["method"] == "notifications/tools/list_changed" {
				n++
				continue
			}
			if m["id"] == "ping" {
				break
			}
		}
		if time.Now().After(deadline) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func daemonPID(t *testing.T, dbPath string) int {
	t.Helper()
	code, out, errOut := binCmd(t, dbPath, "status", "--json")
	require.Equal(t, 0, code, "status: %s%s", out, errOut)
	var st struct {
		PID     int `json:"pid"`
		Clients []struct {
			View struct {
				Dynamic bool `json:"dynamic"`
			} `json:"view"`
		} `json:"clients"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Clients, 2, out)
	for _, c := range st.Clients {
		assert.True(t, c.View.Dynamic, "each launch's --dynamic-toolsets is its own view: %s", out)
	}
	return st.PID
}

// Two launches of the real binary attached to one daemon, as clients run
// it by default: each dynamic session is its own (enabling a toolset in
// one leaves the other's list alone and tells only the one), and a SIGHUP
// of the daemon that changes what the stdio caller may call tells both
// through their front ends.
func TestAttachedListChangedPerClientAndOnDaemonSIGHUP(t *testing.T) {
	dir := shortTemp(t)
	pol := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"*\"]\n"), 0o600))
	dbPath := filepath.Join(dir, "accords.db")
	env := []string{"ACCORDS_MCP_POLICY_FILE=" + pol, "ACCORDS_MCP_DYNAMIC_TOOLSETS=true"}
	var ps []*proc
	for i := range 2 {
		p := startAttached(t, dbPath, env...)
		p.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		init, _ := p.exchange(t, 1)
		require.Contains(t, init["result"].(map[string]any)["instructions"], "vaultclaw_toolset_enable", "launch %d: stderr %s", i, p.stderr.String())
		p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		list, _ := p.exchange(t, 2)
		assert.Len(t, toolNames(t, list), 5, "launch %d starts with the core", i)
		ps = append(ps, p)
	}
	a, b := ps[0], ps[1]
	pid := daemonPID(t, dbPath)

	a.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_toolset_enable","arguments":{"toolset":"catalog"}}}`)
	res, changed := a.exchange(t, 3)
	require.Equal(t, true, structured(t, res)["ok"], "%v", res)
	changed += a.pendingChanged(t, 500*time.Millisecond)
	assert.Equal(t, 1, changed, "the client that enabled is told once")
	assert.Equal(t, 0, b.pendingChanged(t, 100*time.Millisecond), "the other client is not told")
	a.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	list, _ := a.exchange(t, 4)
	assert.Contains(t, toolNames(t, list), "vaultclaw_template_render")
	b.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	list, _ = b.exchange(t, 4)
	assert.Len(t, toolNames(t, list), 5, "the other client's list is unchanged")

	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"session_admin\"]\n"), 0o600))
	require.NoError(t, syscall.Kill(pid, syscall.SIGHUP))
	a.awaitListChanged(t)
	b.awaitListChanged(t)
	for _, p := range ps {
		p.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
		list, _ := p.exchange(t, 5)
		names := toolNames(t, list)
		assert.NotContains(t, names, "vaultclaw_recipes_search", "catalog_view is gone")
		assert.Contains(t, names, "vaultclaw_session_status")
	}
}

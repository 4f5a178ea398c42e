package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// waitChanged waits for one list_changed notification; none means fail.
func waitChanged(t *testing.T, changed chan struct{}, why string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", why)
	}
}

// noChange checks no notification arrives within a short while (go-sdk
// debounces by 10 ms).
func noChange(t *testing.T, changed chan struct{}, why string) {
	t.Helper()
	select {
	case <-changed:
		t.Fatalf("unexpected notifications/tools/list_changed after %s", why)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestDynamicSessionStartsWithTheCoreAndGrowsOnDemand(t *testing.T) {
	h := newHarness(t, setup{dynamic: true})
	cs, changed := h.watched(h.gw.StdioServer())
	init := cs.InitializeResult()
	require.NotNil(t, init.Capabilities.Tools)
	assert.True(t, init.Capabilities.Tools.ListChanged, "stdio advertises list_changed")

	// The harness has no catalog or routing toolsets, so the core here is
	// session status and the two discovery tools.
	assert.Equal(t, []string{"vaultclaw_session_status", "vaultclaw_toolset_enable", "vaultclaw_toolsets_list"}, listNames(t, cs))

	// A tool outside the core is refused with the step that fixes it.
	env := call(t, cs, "vaultclaw_job_get", map[string]any{"job_id": "job_1"})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, "toolset_not_enabled", env.Details()["reason"])
	assert.Contains(t, env.Error.Message, `call vaultclaw_toolset_enable with toolset "approvals" first`)
	assert.Equal(t, map[string]any{"tool": "vaultclaw_toolset_enable", "arguments": map[string]any{"toolset": "approvals"}}, env.Details()["next_action"])

	list := call(t, cs, "vaultclaw_toolsets_list", nil)
	require.True(t, list.OK, "%+v", list.Error)
	var sets []tools.ToolsetState
	raw, _ := json.Marshal(list.Object()["toolsets"])
	require.NoError(t, json.Unmarshal(raw, &sets))
	var names []string
	for _, s := range sets {
		names = append(names, s.Name)
		assert.False(t, s.Enabled, s.Name)
		assert.NotEmpty(t, s.Description, s.Name)
	}
	assert.Equal(t, []string{"session", "vault", "approvals", "audit"}, names, "only the toolsets this server offers")
	assert.Equal(t, []any{"vaultclaw_session_status", "vaultclaw_toolsets_list", "vaultclaw_toolset_enable"}, list.Object()["always"],
		"the core tools this server has (no catalog or routing here)")

	en := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "approvals"})
	require.True(t, en.OK, "%+v", en.Error)
	waitChanged(t, changed, "enabling approvals")
	assert.Contains(t, en.Object()["added"], "vaultclaw_job_get")
	got := listNames(t, cs)
	assert.Contains(t, got, "vaultclaw_approval_wait")
	assert.NotContains(t, got, "vaultclaw_connector_execute", "other toolsets stay hidden")
	env = call(t, cs, "vaultclaw_job_get", map[string]any{"job_id": "job_1"})
	assert.Equal(t, apperr.CodeSessionNotConfigured, env.Code(), "the tool runs now")

	// Enabling it again adds nothing and tells no one.
	again := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "approvals"})
	require.True(t, again.OK)
	assert.Empty(t, again.Object()["added"])
	noChange(t, changed, "enabling an enabled toolset")

	bad := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "catalog"})
	assert.Equal(t, apperr.CodeValidation, bad.Code())
	assert.Contains(t, bad.Error.Message, "toolset catalog is not offered by this server; offered: session, vault, approvals, audit")
}

func TestDynamicEnablementIsPerSession(t *testing.T) {
	h := newHarness(t, setup{dynamic: true})
	srv := h.gw.StdioServer()
	a, _ := h.watched(srv)
	b, _ := h.watched(srv)
	require.True(t, call(t, a, "vaultclaw_toolset_enable", map[string]any{"toolset": "vault"}).OK)
	assert.Contains(t, listNames(t, a), "vaultclaw_connector_execute")
	assert.NotContains(t, listNames(t, b), "vaultclaw_connector_execute", "another session of the same server keeps its own view")
	env := call(t, b, "vaultclaw_connector_execute", map[string]any{"request": map[string]any{}})
	assert.Equal(t, "toolset_not_enabled", env.Details()["reason"])
}

func TestDynamicModeKeepsTheServerWideBoundsAndHTTPUnchanged(t *testing.T) {
	h := newHarness(t, setup{dynamic: true, readOnly: true})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "session"}).OK, "discovery works in read-only mode")
	assert.Equal(t, []string{"vaultclaw_session_status", "vaultclaw_toolset_enable", "vaultclaw_toolsets_list", "vaultclaw_whoami"}, listNames(t, cs),
		"read-only still hides configure and clear")

	// The stateless HTTP bridge has no session to grow: every tool its
	// caller may call, no discovery tools needed.
	h2 := newHarness(t, setup{dynamic: true})
	hc := h2.httpClient(h2.httpServer(), nil)
	names := listNames(t, hc)
	assert.Contains(t, names, "vaultclaw_connector_execute")
	assert.False(t, slices.Contains(names, "vaultclaw_toolsets_list"))
	off := call(t, hc, "vaultclaw_toolset_enable", map[string]any{"toolset": "vault"})
	assert.Equal(t, "dynamic_toolsets_off", off.Details()["reason"])

	// Without dynamic mode the discovery tools do not exist.
	h3 := newHarness(t, setup{})
	names = listNames(t, h3.stdio())
	assert.NotContains(t, names, "vaultclaw_toolsets_list")
	assert.NotContains(t, names, "vaultclaw_toolset_enable")
	_, err := New(Options{Registry: h3.gw.reg, Audit: h3.log, Hasher: h3.gw.opts.Hasher, Toolsets: []string{"dynamic"}})
	assert.ErrorContains(t, err, `unknown toolset "dynamic"`)
}

// A SIGHUP reload (Reload is what the signal calls) that changes what the
// stdio caller may call tells its sessions; one that changes nothing for
// them does not.
func TestReloadTellsStdioSessionsWhoseToolsChanged(t *testing.T) {
	h := newHarness(t, setup{policy: "[stdio]\ncapabilities = [\"*\"]\n"})
	cs, changed := h.watched(h.gw.StdioServer())
	before := listNames(t, cs)
	require.Contains(t, before, "vaultclaw_connector_execute")

	h.writePolicy("[stdio]\ncapabilities = [\"*\"]\ncalls_per_minute = 100\n")
	require.NoError(t, h.gw.Reload())
	noChange(t, changed, "a reload that changes only limits")

	h.writePolicy("[stdio]\ncapabilities = [\"session_admin\", \"audit_view\"]\n")
	require.NoError(t, h.gw.Reload())
	waitChanged(t, changed, "narrowing the stdio caller")
	after := listNames(t, cs)
	assert.NotContains(t, after, "vaultclaw_connector_execute")
	assert.Contains(t, after, "vaultclaw_session_status")

	h.writePolicy("[stdio]\nread_only = true\ncapabilities = [\"session_admin\", \"audit_view\"]\n")
	require.NoError(t, h.gw.Reload())
	waitChanged(t, changed, "making the stdio caller read-only")
	assert.NotContains(t, listNames(t, cs), "vaultclaw_session_configure")
}

// A session enables single tools, so an execute conversation lists what it
// uses and not the rest of the toolset.
func TestDynamicSessionEnablesSingleTools(t *testing.T) {
	h := newHarness(t, setup{dynamic: true})
	cs, changed := h.watched(h.gw.StdioServer())
	core := listNames(t, cs)

	en := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"tools": []string{"vaultclaw_connector_execute"}})
	require.True(t, en.OK, "%+v", en.Error)
	waitChanged(t, changed, "enabling one tool")
	assert.Equal(t, []any{"vaultclaw_connector_execute"}, en.Object()["added"])
	assert.Equal(t, []any{"vaultclaw_connector_execute"}, en.Object()["tools"])
	assert.NotContains(t, en.Object(), "hidden")
	got := listNames(t, cs)
	assert.ElementsMatch(t, append(slices.Clone(core), "vaultclaw_connector_execute"), got, "exactly one more tool")
	env := call(t, cs, "vaultclaw_connector_get", map[string]any{"connector_id": "google"})
	assert.Equal(t, "toolset_not_enabled", env.Details()["reason"], "the rest of its toolset stays hidden")
	assert.Contains(t, env.Error.Message, `or with tools ["vaultclaw_connector_get"] for this tool alone`)

	// Again: nothing added, no one told.
	again := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"tools": []string{"vaultclaw_connector_execute"}})
	require.True(t, again.OK)
	assert.Empty(t, again.Object()["added"])
	noChange(t, changed, "enabling an enabled tool")

	// A toolset and tools in one call.
	both := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "session", "tools": []string{"vaultclaw_approval_wait"}})
	require.True(t, both.OK, "%+v", both.Error)
	assert.Equal(t, "session", both.Object()["toolset"])
	assert.Contains(t, both.Object()["added"], "vaultclaw_approval_wait")
	assert.Contains(t, both.Object()["added"], "vaultclaw_session_configure")
	waitChanged(t, changed, "enabling a toolset and a tool")

	// An unknown name enables nothing and names the field.
	before := listNames(t, cs)
	bad := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"tools": []string{"vaultclaw_job_get", "vaultclaw_nope"}})
	require.Equal(t, apperr.CodeValidation, bad.Code())
	assert.Equal(t, "tools[1]", bad.Details()["field"])
	assert.Contains(t, bad.Error.Message, "tool vaultclaw_nope does not exist")
	assert.Equal(t, before, listNames(t, cs), "a rejected call enables nothing")

	none := call(t, cs, "vaultclaw_toolset_enable", map[string]any{})
	require.Equal(t, apperr.CodeValidation, none.Code())
	assert.Equal(t, "toolset", none.Details()["field"])
}

// A named tool the caller may not call stays hidden, and the answer says
// why.
func TestDynamicSingleToolKeepsTheCallersBounds(t *testing.T) {
	h := newHarness(t, setup{dynamic: true, readOnly: true, policy: "[stdio]\ncapabilities = [\"session_admin\", \"approvals_view\"]\n"})
	cs := h.stdio()
	core := listNames(t, cs)
	en := call(t, cs, "vaultclaw_toolset_enable", map[string]any{"tools": []string{
		"vaultclaw_connectors_list", "vaultclaw_session_clear", "vaultclaw_approval_wait"}})
	require.True(t, en.OK, "%+v", en.Error)
	assert.Equal(t, []any{"vaultclaw_approval_wait"}, en.Object()["added"])
	assert.Equal(t, []any{
		map[string]any{"tool": "vaultclaw_connectors_list", "reason": "missing_capability"},
		map[string]any{"tool": "vaultclaw_session_clear", "reason": "read_only"},
	}, en.Object()["hidden"])
	assert.ElementsMatch(t, append(slices.Clone(core), "vaultclaw_approval_wait"), listNames(t, cs))
	env := call(t, cs, "vaultclaw_connectors_list", nil)
	assert.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, "missing_capability", env.Details()["reason"])
}

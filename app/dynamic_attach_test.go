package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watchedClient is an attached client that counts the
// notifications/tools/list_changed it receives.
type watchedClient struct {
	cs      *mcp.ClientSession
	changed atomic.Int32
}

func attachWatched(t *testing.T, w *app.Owner, name string, h control.Hello) *watchedClient {
	t.Helper()
	return attachWatchedAt(t, w, name, h, "2025-11-25")
}

// attachWatchedAt is attachWatched speaking protocol version (go-sdk's
// latest when empty: 2026-07-28, whose list_changed travels on a
// subscriptions/listen stream).
func attachWatchedAt(t *testing.T, w *app.Owner, name string, h control.Hello, version string) *watchedClient {
	t.Helper()
	h.Protocol = control.Protocol
	c := control.NewClient(w.Socket())
	t.Cleanup(c.Close)
	conn, _, err := c.Attach(context.Background(), h)
	require.NoError(t, err)
	wc := &watchedClient{}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { wc.changed.Add(1) },
	})
	wc.cs, err = cl.Connect(context.Background(), &mcp.IOTransport{Reader: conn, Writer: conn}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = wc.cs.Close() })
	return wc
}

// settle waits long enough for a notification go-sdk debounces (10 ms) to
// arrive over the socket, then returns each client's count.
func settle(cs ...*watchedClient) []int32 {
	time.Sleep(400 * time.Millisecond)
	out := make([]int32, len(cs))
	for i, c := range cs {
		out[i] = c.changed.Load()
	}
	return out
}

// awaitCounts waits until every client has received want notifications
// (and no more arrive in the settle time).
func awaitCounts(t *testing.T, want []int32, cs ...*watchedClient) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for i, c := range cs {
			if c.changed.Load() < want[i] {
				ok = false
			}
		}
		if ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, want, settle(cs...), "notifications/tools/list_changed per client")
}

// Clients attached to one daemon each have their own dynamic view: a
// launch with --dynamic-toolsets starts with the core tools and its own
// instructions, enabling a toolset changes its list alone and tells it
// alone, and a SIGHUP reload of the daemon tells every attached client
// whose list it changed.
func TestAttachedDynamicSessionsAreTheirOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"*\"]\n"), 0o600))
	a, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"}, "ACCORDS_MCP_POLICY_FILE="+pol)

	one := attachWatched(t, w, "one", control.Hello{View: control.View{Dynamic: true}})
	two := attachWatched(t, w, "two", control.Hello{View: control.View{Dynamic: true, Toolsets: []string{"catalog", "session", "routing"}}})
	plain := attachWatched(t, w, "plain", control.Hello{})

	for _, c := range []*watchedClient{one, two} {
		init := c.cs.InitializeResult()
		assert.True(t, init.Capabilities.Tools.ListChanged)
		assert.Contains(t, init.Instructions, "vaultclaw_toolset_enable", "a dynamic client is told how to find the rest")
		assert.ElementsMatch(t, tools.Core, toolNames(t, c.cs))
	}
	assert.NotContains(t, plain.cs.InitializeResult().Instructions, "vaultclaw_toolset_enable")
	plainTools := toolNames(t, plain.cs)
	assert.ElementsMatch(t, tools.Agent, plainTools, "a client without dynamic toolsets or a toolset selection lists the agent's tools (D23)")
	assert.NotContains(t, plainTools, "vaultclaw_toolsets_list")
	env := mcptest.Call(t, plain.cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "vault"})
	assert.Equal(t, "dynamic_toolsets_off", env.Details()["reason"])
	views := map[string]control.View{}
	for _, c := range a.Clients() {
		views[c.Name] = c.View
	}
	assert.True(t, views["one"].Dynamic)
	assert.False(t, views["plain"].Dynamic)

	// One enables catalog: its list grows, it alone is told.
	en := mcptest.Call(t, one.cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "catalog"})
	require.True(t, en.OK, "%+v", en.Error)
	assert.Contains(t, en.Object()["added"], "vaultclaw_template_render")
	awaitCounts(t, []int32{1, 0, 0}, one, two, plain)
	assert.Contains(t, toolNames(t, one.cs), "vaultclaw_template_render")
	assert.ElementsMatch(t, tools.Core, toolNames(t, two.cs), "the other client's list is unchanged")
	env = mcptest.Call(t, two.cs, "vaultclaw_template_render", map[string]any{"cookbook_id": "x", "template_id": "y"})
	assert.Equal(t, "toolset_not_enabled", env.Details()["reason"])

	// Two's own --toolsets bound what it may enable.
	env = mcptest.Call(t, two.cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "vault"})
	assert.Equal(t, "MCP_VALIDATION_ERROR", env.Code())
	assert.Contains(t, env.Error.Message, "offered: session, catalog, routing")
	require.True(t, mcptest.Call(t, two.cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "session"}).OK)
	awaitCounts(t, []int32{1, 1, 0}, one, two, plain)
	assert.Contains(t, toolNames(t, two.cs), "vaultclaw_session_configure")
	assert.NotContains(t, toolNames(t, one.cs), "vaultclaw_session_configure")

	// A reload that changes nothing anyone lists tells no one.
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"*\"]\ncalls_per_minute = 1000\n"), 0o600))
	require.NoError(t, a.Reload())
	awaitCounts(t, []int32{1, 1, 0}, one, two, plain)

	// The daemon's SIGHUP (Reload is what it calls) takes catalog_view
	// away: every attached client's list changes, and each is told once.
	require.NoError(t, os.WriteFile(pol, []byte("[stdio]\ncapabilities = [\"session_admin\", \"vault_read\"]\n"), 0o600))
	require.NoError(t, a.Reload())
	awaitCounts(t, []int32{2, 2, 1}, one, two, plain)
	for _, c := range []*watchedClient{one, two, plain} {
		names := toolNames(t, c.cs)
		assert.NotContains(t, names, "vaultclaw_recipes_search", "catalog_view is gone")
		assert.Contains(t, names, "vaultclaw_session_status")
	}
	assert.False(t, strings.Contains(strings.Join(toolNames(t, two.cs), ","), "vaultclaw_connector"), "two never enabled vault")
}

// A client of 2026-07-28 is told through its subscriptions/listen stream,
// and only it.
func TestAttachedDynamicSessionOfTheNewProtocolIsTold(t *testing.T) {
	t.Parallel()
	_, w := owned(t, app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	modern := attachWatchedAt(t, w, "modern", control.Hello{View: control.View{Dynamic: true}}, "")
	other := attachWatchedAt(t, w, "other", control.Hello{View: control.View{Dynamic: true}}, "")
	require.Equal(t, "2026-07-28", modern.cs.InitializeResult().ProtocolVersion)
	assert.ElementsMatch(t, tools.Core, toolNames(t, modern.cs))
	require.True(t, mcptest.Call(t, modern.cs, "vaultclaw_toolset_enable", map[string]any{"toolset": "vault"}).OK)
	awaitCounts(t, []int32{1, 0}, modern, other)
	assert.Contains(t, toolNames(t, modern.cs), "vaultclaw_connector_execute")
	assert.ElementsMatch(t, tools.Core, toolNames(t, other.cs))
}

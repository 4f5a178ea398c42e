package tools_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryToolsResultsMatchTheirOutputSchemas calls every tool through a
// go-sdk client, against the simulator, until each has succeeded at least
// once, with failures in between; mcptest validates every result against
// the output schema the tool lists (jsonschema-go, as go-sdk does). A tool
// that never succeeds here, or whose schema does not fit what it returns,
// fails the test.
func TestEveryToolsResultsMatchTheirOutputSchemas(t *testing.T) {
	t.Parallel()
	sim, e := newSimEnv(t)
	succeeded := map[string]bool{}
	call := func(name string, args map[string]any) mcptest.Envelope {
		t.Helper()
		env := e.call(name, args)
		if env.OK {
			succeeded[name] = true
		}
		return env
	}
	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		env := call(name, args)
		require.True(t, env.OK, "%s: %v", name, env.Raw)
		d, _ := env.Data.(map[string]any)
		return d
	}

	// Session.
	ok("vaultclaw_session_status", nil)
	call("vaultclaw_connector_get", m("connector_id", "nope")) // MCP_NOT_FOUND

	// Vault.
	ok("vaultclaw_connectors_list", nil)
	ok("vaultclaw_connector_get", m("connector_id", "google"))
	ok("vaultclaw_connector_validate", m("request", gmailSend("dave@example.com")))
	ok("vaultclaw_document_types_suggest", m("query", "passport"))
	ok("vaultclaw_document_types_latest", m("type_id", "identity.passport"))
	ok("vaultclaw_slot_bind", m("connector_id", "generic.http", "verb", "generic.http.request.v1", "slot", "api_key", "secret_id", "sec_demo_api_key"))
	ok("vaultclaw_slot_bindings_list", m("connector_id", "generic.http", "verb", "generic.http.request.v1"))
	req := []any{m("slot", "api_key", "mode", "read", "target", "https://api.example.com", "intent", "http.auth")}
	resolved := ok("vaultclaw_unbounded_profile_resolve", m("requirements", req))
	ok("vaultclaw_unbounded_profiles_list", nil)
	ok("vaultclaw_unbounded_profile_get", m("profile_id", resolved["profile_id"]))
	prof := ok("vaultclaw_unbounded_profile_get", m("profile_id", resolved["profile_id"]))["profile"]
	ok("vaultclaw_unbounded_profile_upsert", m("profile", prof))
	ok("vaultclaw_plan_validate", m("plan", statusPlan()))
	ok("vaultclaw_plan_unbounded_profile_preview", m("plan", statusPlan()))
	ok("vaultclaw_passport_email_workflow", m("request_text", "email my passport to erin@example.com", "execute", false))

	// Execution through an approval, and the approval tools.
	r := call("vaultclaw_connector_execute_job", m("request", gmailSend("frank@example.com")))
	handle := handoffHandle(t, r, "JOB")
	ok("vaultclaw_approvals_pending_list", nil)
	ok("vaultclaw_approvals_pending_get", m("challenge_id", handle["challenge_id"], "pending_id", handle["pending_id"]))
	ok("vaultclaw_approval_handles_list", nil)
	require.NoError(t, sim.Approve(pendingIDOf(t, sim, handle)))
	ok("vaultclaw_approval_wait", m("handle", handle, "timeout_ms", 20000, "poll_interval_ms", 250))
	ok("vaultclaw_job_get", m("job_id", handle["job_id"]))
	pr := call("vaultclaw_plan_execute", m("plan", statusPlan(), "plan_input", m("email", m("to", []any{"ops@example.com"}))))
	ph := handoffHandle(t, pr, "PLAN_RUN")
	ok("vaultclaw_plan_run_get", m("run_id", ph["run_id"]))
	require.NoError(t, sim.Approve(pendingIDOf(t, sim, ph)))
	ok("vaultclaw_approval_wait", m("handle", ph, "timeout_ms", 20000, "poll_interval_ms", 250))
	list := m("connector_id", "google", "verb", "google.gmail.messages.list", "policy_version", "1", "request", m("user_id", "me"))
	ok("vaultclaw_connector_execute", m("request", list))
	ok("vaultclaw_connector_execute_job", m("request", list))
	ok("vaultclaw_plan_execute", m("plan", obj(`{"type":"connector.execution.plan.v1","start_step_id":"list","steps":[
	 {"step_id":"list","connector_id":"google","verb":"google.gmail.messages.list","policy_version":"1","request_base":{"user_id":"me"}}]}`)))

	// Catalog.
	ok("vaultclaw_cookbook_upsert", m("bundle", obj(catalogBundle)))
	ok("vaultclaw_cookbook_import", m("bundle", obj(catalogBundle), "conflict_policy", "SKIP_IF_EXISTS"))
	ok("vaultclaw_cookbooks_list", m("limit", 5))
	ok("vaultclaw_cookbook_get", m("cookbook_id", "net.http"))
	ok("vaultclaw_cookbook_export", m("cookbook_id", "net.http"))
	ok("vaultclaw_recipes_search", m("query", "fetch url"))
	ok("vaultclaw_recipe_get", m("cookbook_id", "net.http", "recipe_id", "tpl_get"))
	ok("vaultclaw_template_render", m("cookbook_id", "net.http", "template_id", "tpl_get", "inputs", m("url", "https://example.com")))
	call("vaultclaw_template_render", m("cookbook_id", "net.http", "template_id", "tpl_get", "inputs", m())) // unresolved
	ok("vaultclaw_cookbook_delete", m("cookbook_id", "net.http", "version", "1.0.0"))

	// Remote.
	bundle := []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"hello","version":"1.0.0","title":"Hello",
		"entries":[{"entry_id":"greet","entry_type":"template.verb.v1","title":"Greet someone","base_request":{"text":""},
		"bindings":[{"target_path":"/text","input_key":"text"}]}]}`)
	sum := sha256.Sum256(bundle)
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.json":
			_, _ = w.Write([]byte(`{"type":"accords.cookbook.index.v1","items":[{"cookbook_id":"hello","version":"1.0.0","download_url":"` +
				srvURL + `/hello.json","sha256":"` + hex.EncodeToString(sum[:]) + `"}]}`))
		case "/hello.json":
			_, _ = w.Write(bundle)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	ok("vaultclaw_catalog_source_upsert", m("source", m("source_id", "ex", "index_url", srv.URL+"/index.json")))
	ok("vaultclaw_catalog_sources_list", nil)
	ok("vaultclaw_cookbooks_remote_list", m("source_id", "ex"))
	ok("vaultclaw_cookbook_remote_install", m("source_id", "ex", "cookbook_id", "hello"))
	ok("vaultclaw_catalog_source_delete", m("source_id", "ex"))

	// Routing and audit.
	ok("vaultclaw_route_resolve", m("request_text", "email bob@example.com the quarterly numbers"))
	ok("vaultclaw_audit_receipts_list", m("limit", 5))
	ok("vaultclaw_whoami", nil)
	ok("vaultclaw_receipt_emit", m("type", "workflow.step", "scroll", "automation", "tags", []any{"n8n"}, "body", m("step", "send")))
	ok("vaultclaw_receipt_prove", m("seq", 1)) // the first receipt, signed by the first checkpoint
	ok("vaultclaw_session_clear", nil)
	ok("vaultclaw_session_configure", m("base_url", e.vault.URL, "token", simToken))

	var missing []string
	for _, tl := range e.app.Gateway.Visible().Tools() {
		if !succeeded[tl.Name] {
			missing = append(missing, tl.Name)
		}
	}
	assert.Empty(t, missing, "tools that never succeeded here, so their success shape went unchecked")

	// The discovery tools, in a dynamic session.
	cfg := testConfig(t, filepath.Join(t.TempDir(), "accords.db"), e.vault.URL, simToken)
	cfg.DynamicToolsets = true
	a, err := app.Open(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	dyn := mcptest.Connect(t, a.MCPServer(), nil)
	names := mcptest.ToolNames(t, dyn.ClientSession)
	assert.ElementsMatch(t, tools.Core, names)
	for _, c := range []struct {
		name string
		args map[string]any
	}{{"vaultclaw_toolsets_list", nil}, {"vaultclaw_toolset_enable", m("toolset", "catalog")}} {
		env := mcptest.Call(t, dyn, c.name, c.args)
		require.True(t, env.OK, "%s: %v", c.name, env.Raw)
	}
	env := mcptest.Call(t, dyn, "vaultclaw_recipes_search", m("query", "mail"))
	require.True(t, env.OK)
	_ = context.Background
}

const catalogBundle = `{"type":"accords.cookbook.bundle.v1","cookbook_id":"net.http","version":"1.0.0","title":"HTTP requests",
 "entries":[{"entry_id":"tpl_get","entry_type":"template.verb.v1","title":"Fetch a URL","tags":["http","get"],
   "connector_id":"generic.http","verb":"generic.http.request.v1",
   "base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"GET"}},
   "bindings":[{"target_path":"/request/url","input_key":"url"}]}]}`

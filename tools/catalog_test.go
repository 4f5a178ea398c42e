package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func catalogRegistry(t *testing.T) *Registry {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "a.db"), store.Options{})
	require.NoError(t, err)
	svc, err := catalog.Open(context.Background(), db, filepath.Join(dir, "a.db.index"), catalog.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { svc.Close(); db.Close() })
	reg, err := Select(Deps{Catalog: svc}, InToolsets(ToolsetCatalog))
	require.NoError(t, err)
	return reg
}

// callCatalog invokes a tool and returns its envelope decoded from JSON, as a
// client sees it.
func callCatalog(t *testing.T, reg *Registry, name string, args string) map[string]any {
	t.Helper()
	tool, ok := reg.Lookup(name)
	require.True(t, ok, name)
	env, err := mcptest.Decode(Render(tool.Invoke(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}}, nil)))
	require.NoError(t, err)
	return env.Raw
}

func errCode(env map[string]any) string {
	e, _ := env["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

const toolBundle = `{"type":"accords.cookbook.bundle.v1","cookbook_id":"net.http","version":"1.0.0","title":"HTTP requests",
 "x_extra":{"kept":true},
 "entries":[{"entry_id":"tpl_get","entry_type":"template.verb.v1","title":"Fetch a URL","tags":["http","get"],
   "connector_id":"generic.http","verb":"generic.http.request.v1",
   "base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"GET"}},
   "bindings":[{"target_path":"/request/url","input_key":"url"}]}]}`

func TestCatalogToolsEndToEnd(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	for _, n := range []string{"vaultclaw_cookbooks_list", "vaultclaw_cookbook_get", "vaultclaw_cookbook_upsert", "vaultclaw_cookbook_delete",
		"vaultclaw_cookbook_export", "vaultclaw_cookbook_import", "vaultclaw_recipe_get", "vaultclaw_recipes_search", "vaultclaw_template_render"} {
		tool, ok := reg.Lookup(n)
		require.True(t, ok, n)
		assert.Equal(t, ToolsetCatalog, tool.Toolset)
	}

	env := callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+toolBundle+`}`)
	require.Equal(t, true, env["ok"], env)
	data := env["data"].(map[string]any)
	assert.Equal(t, true, data["created_or_updated"])
	assert.Equal(t, "FAIL", data["conflict_policy"])
	assert.Equal(t, "net.http", data["cookbook"].(map[string]any)["cookbook_id"])

	env = callCatalog(t, reg, "vaultclaw_cookbook_import", `{"bundle":`+toolBundle+`,"conflict_policy":"skip_if_exists"}`)
	assert.Equal(t, "SKIP_IF_EXISTS", env["data"].(map[string]any)["conflict_policy"])
	assert.Equal(t, "unchanged", env["data"].(map[string]any)["outcome"])

	env = callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+toolBundle+`,"conflict_policy":"REPLACE"}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	assert.Equal(t, "conflict_policy", env["error"].(map[string]any)["details"].(map[string]any)["field"])

	env = callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":{"type":"x"}}`)
	assert.Equal(t, "MCP_CATALOG_SCHEMA_INVALID", errCode(env))

	env = callCatalog(t, reg, "vaultclaw_cookbook_export", `{"cookbook_id":"net.http"}`)
	bundle := env["data"].(map[string]any)["bundle"].(map[string]any)
	assert.Equal(t, map[string]any{"kept": true}, bundle["x_extra"])

	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{"filter":{"tag":"nope"}}`)
	assert.Empty(t, env["data"].(map[string]any)["items"])
	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{}`)
	assert.Len(t, env["data"].(map[string]any)["items"], 1)
	assert.Equal(t, "", env["data"].(map[string]any)["next_cursor"], "one cookbook fits the default page")
	assert.NotContains(t, env["data"].(map[string]any), "root_dir", "a listing names no server path unless asked")
	assert.NotContains(t, env["data"].(map[string]any)["items"].([]any)[0], "entries", "a listing holds no entries unless asked")
	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{"full":true}`)
	assert.Contains(t, env["data"].(map[string]any)["root_dir"], "a.db")
	assert.NotEmpty(t, env["data"].(map[string]any)["items"].([]any)[0].(map[string]any)["entries"])
	second := strings.Replace(toolBundle, `"cookbook_id":"net.http"`, `"cookbook_id":"net.http2"`, 1)
	env = callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+second+`}`)
	require.Equal(t, true, env["ok"], env["error"])
	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{"limit":1}`)
	assert.Len(t, env["data"].(map[string]any)["items"], 1)
	assert.Equal(t, "net.http", env["data"].(map[string]any)["next_cursor"])
	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{"limit":1,"cursor":"net.http"}`)
	assert.Equal(t, "net.http2", env["data"].(map[string]any)["items"].([]any)[0].(map[string]any)["cookbook_id"])
	assert.Equal(t, "", env["data"].(map[string]any)["next_cursor"])
	env = callCatalog(t, reg, "vaultclaw_cookbooks_list", `{"limit":0}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	callCatalog(t, reg, "vaultclaw_cookbook_delete", `{"cookbook_id":"net.http2"}`)

	env = callCatalog(t, reg, "vaultclaw_recipes_search", `{"query":"fetch url","tags":"http, get"}`)
	items := env["data"].(map[string]any)["items"].([]any)
	require.Len(t, items, 1)
	hit := items[0].(map[string]any)
	assert.Equal(t, "1.0.0", hit["version"])
	assert.Positive(t, hit["score"])
	env = callCatalog(t, reg, "vaultclaw_recipes_search", `{"tags":["http",3]}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_recipes_search", `{"entry_type":"recipe"}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_recipes_search", `{"tags":{"a":1}}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))

	env = callCatalog(t, reg, "vaultclaw_recipe_get", `{"cookbook_id":"net.http","recipe_id":"tpl_get"}`)
	assert.Equal(t, "tpl_get", env["data"].(map[string]any)["entry"].(map[string]any)["entry_id"])
	env = callCatalog(t, reg, "vaultclaw_recipe_get", `{"cookbook_id":"net.http"}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))

	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{"url":"https://x"}}`)
	require.Equal(t, true, env["ok"], env)
	d := env["data"].(map[string]any)
	assert.Equal(t, "https://x", d["rendered"].(map[string]any)["request"].(map[string]any)["url"])
	assert.Equal(t, []any{}, d["missing_inputs"])
	assert.Equal(t, "VERB_REQUEST", d["source_ref"].(map[string]any)["output_kind"])
	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":"url=x"}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{},"output_kind":"garbage"}`)
	assert.Equal(t, "MCP_VALIDATION_ERROR", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{}}`)
	assert.Equal(t, "MCP_TEMPLATE_RENDER_UNRESOLVED", errCode(env))

	env = callCatalog(t, reg, "vaultclaw_cookbook_delete", `{"cookbook_id":"net.http","version":"2.0.0"}`)
	assert.Equal(t, "MCP_CATALOG_NOT_FOUND", errCode(env))
	env = callCatalog(t, reg, "vaultclaw_cookbook_delete", `{"cookbook_id":"net.http"}`)
	assert.Equal(t, map[string]any{"cookbook_id": "net.http", "version": "1.0.0", "deleted": true}, env["data"])
	env = callCatalog(t, reg, "vaultclaw_cookbook_get", `{"cookbook_id":"../etc"}`)
	assert.Equal(t, "MCP_CATALOG_SCHEMA_INVALID", errCode(env))
}

func TestCatalogToolHints(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	for _, tool := range reg.Tools() {
		if tool.Toolset != ToolsetCatalog {
			continue
		}
		switch tool.Name {
		case "vaultclaw_cookbook_upsert", "vaultclaw_cookbook_import", "vaultclaw_cookbook_delete":
			assert.False(t, tool.Hints.ReadOnly, tool.Name)
			assert.Equal(t, CapCatalogWrite, tool.Capability, tool.Name)
		default:
			assert.Equal(t, ReadLocal, tool.Hints, tool.Name)
			assert.Equal(t, CapCatalogView, tool.Capability, tool.Name)
		}
		assert.False(t, tool.Hints.OpenWorld, "catalog tools never call Vaultclaw")
	}
}

// TestTemplateRenderWarnsOfUnknownInputs: inputs the template does not know
// (`__proto__`, a misspelt key) are ignored, never set in the rendered
// request, and named in meta.warnings as D21 names unknown arguments; on a
// render that fails too, where a typo is often why a required input is
// missing.
func TestTemplateRenderWarnsOfUnknownInputs(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	require.Equal(t, true, callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+toolBundle+`}`)["ok"])
	warnings := func(env map[string]any) []any {
		w, _ := env["meta"].(map[string]any)["warnings"].([]any)
		return w
	}

	env := callCatalog(t, reg, "vaultclaw_template_render",
		`{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{"url":"https://x","__proto__":{"polluted":true},"constructor":1}}`)
	require.Equal(t, true, env["ok"], env)
	assert.Equal(t, []any{
		`unknown template input "__proto__" is ignored; its inputs: url`,
		`unknown template input "constructor" is ignored; its inputs: url`,
	}, warnings(env))
	rendered, err := json.Marshal(env["data"].(map[string]any)["rendered"])
	require.NoError(t, err)
	assert.NotContains(t, string(rendered), "polluted")
	assert.NotContains(t, string(rendered), "constructor")

	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{"urll":"https://x"},"verbose":true}`)
	assert.Equal(t, "MCP_TEMPLATE_RENDER_UNRESOLVED", errCode(env))
	assert.Equal(t, []any{
		`unknown argument "verbose" is ignored; known here: cookbook_id, inputs, output_kind, template_id, version`,
		`unknown template input "urll" is ignored; did you mean "url"?`,
	}, warnings(env), "the arguments' warnings first, then the template's")

	env = callCatalog(t, reg, "vaultclaw_template_render", `{"cookbook_id":"net.http","template_id":"tpl_get","inputs":{"url":"https://x"}}`)
	require.Equal(t, true, env["ok"], env)
	assert.NotContains(t, env["meta"], "warnings", "no warnings key when every input is known")
}

// vaultclaw_cookbook_get pages a large cookbook's entries; a cookbook that
// fits one page comes back whole, as stored, without next_cursor.
func TestCookbookGetPagesEntries(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	var entries []string
	for i := range 5 {
		entries = append(entries, fmt.Sprintf(`{"entry_id":"tpl_%d","entry_type":"template.verb.v1","title":"Fetch %d",
		 "connector_id":"generic.http","verb":"generic.http.request.v1",
		 "base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"GET"}},
		 "bindings":[{"target_path":"/request/url","input_key":"url"}]}`, i, i))
	}
	big := `{"type":"accords.cookbook.bundle.v1","cookbook_id":"net.many","version":"2.0.0","title":"Many","x_extra":{"kept":true},"entries":[` +
		strings.Join(entries, ",") + `]}`
	env := callCatalog(t, reg, "vaultclaw_cookbook_upsert", `{"bundle":`+big+`}`)
	require.Equal(t, true, env["ok"], env["error"])

	ids := func(env map[string]any) []any {
		var out []any
		for _, e := range env["data"].(map[string]any)["bundle"].(map[string]any)["entries"].([]any) {
			out = append(out, e.(map[string]any)["entry_id"])
		}
		return out
	}
	whole := callCatalog(t, reg, "vaultclaw_cookbook_get", `{"cookbook_id":"net.many"}`)
	assert.Len(t, ids(whole), 5, "the default page holds a small cookbook whole")
	assert.NotContains(t, whole["data"], "next_cursor")

	var got []any
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5, "paging ends")
		args := `{"cookbook_id":"net.many","limit":2}`
		if cursor != "" {
			args = fmt.Sprintf(`{"cookbook_id":"net.many","limit":2,"cursor":%q}`, cursor)
		}
		env := callCatalog(t, reg, "vaultclaw_cookbook_get", args)
		require.Equal(t, true, env["ok"], env["error"])
		b := env["data"].(map[string]any)["bundle"].(map[string]any)
		assert.Equal(t, "2.0.0", b["version"])
		assert.Equal(t, map[string]any{"kept": true}, b["x_extra"], "every page keeps the bundle's other fields")
		assert.LessOrEqual(t, len(ids(env)), 2)
		got = append(got, ids(env)...)
		next, _ := env["data"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	assert.Equal(t, ids(whole), got, "the pages together are the entries, in order")

	for _, bad := range []string{`"cursor":"x"`, `"version":"2.0.0","cursor":"2@1.0.0"`, `"cursor":"99@2.0.0"`} {
		env := callCatalog(t, reg, "vaultclaw_cookbook_get", `{"cookbook_id":"net.many",`+bad+`}`)
		require.Equal(t, "MCP_VALIDATION_ERROR", errCode(env), bad)
		assert.Equal(t, "cursor", env["error"].(map[string]any)["details"].(map[string]any)["field"], bad)
	}

	// Export stays whole: it is what import takes.
	exp := callCatalog(t, reg, "vaultclaw_cookbook_export", `{"cookbook_id":"net.many"}`)
	assert.Len(t, exp["data"].(map[string]any)["bundle"].(map[string]any)["entries"], 5)
}

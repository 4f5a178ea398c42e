package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func details(env map[string]any) map[string]any {
	e, _ := env["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// TestSearchQueryIsBounded: a 996 KiB query cost 752 MiB; the text is now
// capped in bytes and in words, refused naming query.
func TestSearchQueryIsBounded(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	for _, q := range []string{strings.Repeat("x", index.MaxQueryBytes+1), strings.Repeat("ab ", index.MaxQueryTerms+1)} {
		args, _ := json.Marshal(map[string]any{"query": q})
		env := callCatalog(t, reg, "vaultclaw_recipes_search", string(args))
		require.Equal(t, "MCP_VALIDATION_ERROR", errCode(env), "%v", env["error"])
		assert.Equal(t, "query", details(env)["field"])
	}
	args, _ := json.Marshal(map[string]any{"query": strings.TrimSpace(strings.Repeat("ab ", index.MaxQueryTerms))})
	env := callCatalog(t, reg, "vaultclaw_recipes_search", string(args))
	require.Equal(t, true, env["ok"], "%v", env["error"])
}

func bundleWith(title string, entries int) map[string]any {
	es := make([]any, entries)
	for i := range es {
		es[i] = map[string]any{"entry_id": fmt.Sprintf("e%d", i), "entry_type": "recipe.plan.v1", "plan": map[string]any{}}
	}
	return map[string]any{"type": catalog.BundleType, "cookbook_id": "big", "version": "1.0.0", "title": title, "entries": es}
}

// TestBundleLimits: a 4 MB title and a 100,000-entry bundle were stored;
// each limit is now refused with MCP_CATALOG_SCHEMA_INVALID naming the
// field, and nothing is stored.
func TestBundleLimits(t *testing.T) {
	t.Parallel()
	reg := catalogRegistry(t)
	upsert := func(b map[string]any) map[string]any {
		raw, _ := json.Marshal(map[string]any{"bundle": b})
		return callCatalog(t, reg, "vaultclaw_cookbook_upsert", string(raw))
	}
	deep := bundleWith("t", 1)
	entry := deep["entries"].([]any)[0].(map[string]any)
	for _, c := range []struct {
		name  string
		b     map[string]any
		field string
	}{
		{"title", bundleWith(strings.Repeat("T", catalog.MaxTitleBytes+1), 1), "bundle.title"},
		{"huge title", bundleWith(strings.Repeat("T", 4<<20), 1), "bundle.title"},
		{"entries", bundleWith("t", catalog.MaxEntries+1), "bundle.entries"},
		{"description", func() map[string]any {
			b := bundleWith("t", 1)
			b["description"] = strings.Repeat("d", catalog.MaxDescriptionBytes+1)
			return b
		}(), "bundle.description"},
		{"tags", func() map[string]any {
			b := bundleWith("t", 1)
			tags := make([]any, catalog.MaxTags+1)
			for i := range tags {
				tags[i] = fmt.Sprintf("t%d", i)
			}
			b["tags"] = tags
			return b
		}(), "bundle.tags"},
		{"entry title", func() map[string]any {
			entry["title"] = strings.Repeat("e", catalog.MaxTitleBytes+1)
			return deep
		}(), "bundle.entries[0].title"},
		{"size", func() map[string]any {
			b := bundleWith("t", 1)
			b["x_blob"] = strings.Repeat("z", catalog.DefaultMaxBundleBytes)
			return b
		}(), "bundle"},
	} {
		env := upsert(c.b)
		require.Equal(t, "MCP_CATALOG_SCHEMA_INVALID", errCode(env), "%s: %v", c.name, env["error"])
		assert.Equal(t, c.field, details(env)["field"], c.name)
	}
	env := callCatalog(t, reg, "vaultclaw_cookbooks_list", `{}`)
	assert.Empty(t, env["data"].(map[string]any)["items"], "nothing was stored")
	// At the limits a bundle is accepted.
	require.Equal(t, true, upsert(bundleWith(strings.Repeat("T", catalog.MaxTitleBytes), catalog.MaxEntries))["ok"])
}

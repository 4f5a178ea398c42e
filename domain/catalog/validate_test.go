package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validBundle is the JSON base each validation case mutates.
func validBundle() map[string]any {
	return map[string]any{
		"type": BundleType, "cookbook_id": "net.http", "version": "1.0.0", "title": "HTTP",
		"entries": []any{
			map[string]any{"entry_id": "get", "entry_type": TypeRecipeVerb, "connector_id": "generic.http", "verb": "generic.http.request.v1", "request": map[string]any{}},
			map[string]any{"entry_id": "tpl", "entry_type": TypeTemplateVerb, "base_request": map[string]any{},
				"bindings": []any{map[string]any{"target_path": "/request/url", "input_key": "url"}}},
		},
	}
}

func entryAt(b map[string]any, i int) map[string]any { return b["entries"].([]any)[i].(map[string]any) }

func bindingAt(b map[string]any, i, j int) map[string]any {
	return entryAt(b, i)["bindings"].([]any)[j].(map[string]any)
}

func decodeAndValidate(v any) error {
	b, err := BundleFromValue(v)
	if err != nil {
		return err
	}
	_, _, err = Prepare(b)
	return err
}

func TestValidationRules(t *testing.T) {
	long := strings.Repeat("a", 129)
	cases := []struct {
		name    string
		mutate  func(b map[string]any) any
		msg     string
		details map[string]any
	}{
		{"D1 null bundle", func(map[string]any) any { return nil }, "bundle is required", nil},
		{"D2 not an object", func(map[string]any) any { return []any{1, 2} }, "bundle must be valid json object", nil},
		{"D3 request is a string", func(b map[string]any) any { entryAt(b, 0)["request"] = "str"; return b }, "bundle schema decode failed", nil},
		{"D3 entries is an object", func(b map[string]any) any { b["entries"] = map[string]any{}; return b }, "bundle schema decode failed", nil},
		{"D3 required is a string", func(b map[string]any) any { bindingAt(b, 1, 0)["required"] = "yes"; return b }, "bundle schema decode failed", nil},
		{"D3 tags not strings", func(b map[string]any) any { b["tags"] = []any{1}; return b }, "bundle schema decode failed", nil},
		{"V1 wrong type", func(b map[string]any) any { b["type"] = "accords.cookbook.bundle.v2"; return b }, "bundle.type must be accords.cookbook.bundle.v1", nil},
		{"V1 missing type", func(b map[string]any) any { delete(b, "type"); return b }, "bundle.type must be accords.cookbook.bundle.v1", nil},
		{"V2 empty cookbook_id", func(b map[string]any) any { b["cookbook_id"] = "  "; return b }, "bundle.cookbook_id is required", nil},
		{"V3 empty version", func(b map[string]any) any { delete(b, "version"); return b }, "bundle.version is required", nil},
		{"V4 empty title", func(b map[string]any) any { b["title"] = "\t"; return b }, "bundle.title is required", nil},
		{"V5 no entries", func(b map[string]any) any { b["entries"] = []any{}; return b }, "bundle.entries must be non-empty", nil},
		{"V6 entry without id", func(b map[string]any) any { entryAt(b, 1)["entry_id"] = " "; return b }, "entry.entry_id is required", map[string]any{"entry_index": 0}},
		{"V6b entry id charset", func(b map[string]any) any { entryAt(b, 1)["entry_id"] = "a b"; return b }, "entry.entry_id must match " + IDPattern, map[string]any{"entry_index": 0}},
		{"V7 duplicate entry id", func(b map[string]any) any { entryAt(b, 1)["entry_id"] = " get "; return b }, "duplicate entry_id in bundle", map[string]any{"entry_id": "get"}},
		{"V8 connector_id", func(b map[string]any) any { delete(entryAt(b, 0), "connector_id"); return b }, "recipe.verb.v1 requires connector_id", map[string]any{"entry_id": "get"}},
		{"V8 verb", func(b map[string]any) any { entryAt(b, 0)["verb"] = ""; return b }, "recipe.verb.v1 requires verb", map[string]any{"entry_id": "get"}},
		{"V8 request", func(b map[string]any) any { entryAt(b, 0)["request"] = nil; return b }, "recipe.verb.v1 requires request object", map[string]any{"entry_id": "get"}},
		{"V9 plan", func(b map[string]any) any { entryAt(b, 0)["entry_type"] = TypeRecipePlan; return b }, "recipe.plan.v1 requires plan object", map[string]any{"entry_id": "get"}},
		{"V10 base_request", func(b map[string]any) any { delete(entryAt(b, 1), "base_request"); return b }, "template.verb.v1 requires base_request object", map[string]any{"entry_id": "tpl"}},
		{"V11 base_plan", func(b map[string]any) any { entryAt(b, 1)["entry_type"] = TypeTemplatePlan; return b }, "template.plan.v1 requires base_plan object", map[string]any{"entry_id": "tpl"}},
		{"V12 empty target", func(b map[string]any) any { bindingAt(b, 1, 0)["target_path"] = " "; return b }, "binding.target_path is required", map[string]any{"binding_index": 0, "entry_id": "tpl"}},
		{"V13 not a pointer", func(b map[string]any) any { bindingAt(b, 1, 0)["target_path"] = "request/url"; return b }, "binding.target_path must be valid json pointer", map[string]any{"binding_index": 0, "entry_id": "tpl", "target_path": "request/url"}},
		{"V13 bad escape", func(b map[string]any) any { bindingAt(b, 1, 0)["target_path"] = "/a~2"; return b }, "binding.target_path must be valid json pointer", map[string]any{"target_path": "/a~2"}},
		{"V14 empty input key", func(b map[string]any) any { bindingAt(b, 1, 0)["input_key"] = ""; return b }, "binding.input_key is required", map[string]any{"binding_index": 0, "entry_id": "tpl"}},
		{"V15 duplicate pair", func(b map[string]any) any {
			entryAt(b, 1)["bindings"] = append(entryAt(b, 1)["bindings"].([]any), map[string]any{"target_path": "/request/url", "input_key": " url "})
			return b
		}, "duplicate binding target_path+input_key", map[string]any{"binding_index": 1, "input_key": "url", "entry_id": "tpl"}},
		{"V16 unknown type", func(b map[string]any) any { entryAt(b, 0)["entry_type"] = " Recipe.Verb.V1 "; return b }, "unsupported entry_type", map[string]any{"entry_type": "Recipe.Verb.V1", "entry_id": "get"}},
		{"S1 cookbook id charset", func(b map[string]any) any { b["cookbook_id"] = "a:b"; return b }, "bundle.cookbook_id must match " + IDPattern, nil},
		{"S1 cookbook id too long", func(b map[string]any) any { b["cookbook_id"] = long; return b }, "bundle.cookbook_id must match " + IDPattern, nil},
		{"S2 version not semver", func(b map[string]any) any { b["version"] = "v1"; return b }, "bundle.version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", nil},
		{"S2 version two parts", func(b map[string]any) any { b["version"] = "1.2"; return b }, "bundle.version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", nil},
		{"S2 version leading zero", func(b map[string]any) any { b["version"] = "01.2.0"; return b }, "bundle.version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", nil},
		{"input_schema invalid", func(b map[string]any) any { entryAt(b, 1)["input_schema"] = map[string]any{"type": 5}; return b }, "input_schema is not a valid JSON schema", map[string]any{"entry_id": "tpl"}},
		{"input_schema unresolvable", func(b map[string]any) any {
			entryAt(b, 1)["input_schema"] = map[string]any{"$ref": "#/$defs/missing"}
			return b
		}, "input_schema is not a valid JSON schema", map[string]any{"entry_id": "tpl"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := decodeAndValidate(c.mutate(validBundle()))
			require.Error(t, err)
			ae := apperr.As(err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, ae.Code)
			assert.Equal(t, apperr.CatValidation, ae.Category)
			assert.False(t, ae.Retryable)
			assert.Equal(t, c.msg, ae.Message)
			for k, v := range c.details {
				assert.Equal(t, v, ae.Details[k], "detail %s", k)
			}
		})
	}
	require.NoError(t, decodeAndValidate(validBundle()))
}

func TestValidationOrderFollowsCanonicalEntryOrder(t *testing.T) {
	b := validBundle()
	// "tpl" is listed first after sorting? No: "get" < "tpl", so the recipe
	// error must win even though the template one is authored first.
	entries := b["entries"].([]any)
	b["entries"] = []any{entries[1], entries[0]}
	delete(entryAt(b, 0), "base_request")
	entryAt(b, 1)["verb"] = ""
	err := decodeAndValidate(b)
	require.Error(t, err)
	assert.Equal(t, "recipe.verb.v1 requires verb", apperr.As(err).Message)
}

func TestAcceptedShapes(t *testing.T) {
	b := validBundle()
	b["version"] = " 1.0.0-rc.1+build.5 "
	b["tags"] = []any{" b", "a", "b", ""}
	bindingAt(b, 1, 0)["default"] = nil // null default is no default
	bindingAt(b, 1, 0)["required"] = false
	entryAt(b, 0)["plan_input_defaults"] = map[string]any{"x": 1.0}
	bd, err := BundleFromValue(b)
	require.NoError(t, err)
	raw, _, err := Prepare(bd)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0-rc.1+build.5", bd.Version)
	assert.Equal(t, []string{"a", "b"}, bd.Tags)
	assert.False(t, bd.Entries[1].Bindings[0].HasDefault())
	assert.Contains(t, string(raw), `"request":{}`, "an empty request object survives canonical form")
}

func TestHostileIDs(t *testing.T) {
	e := newEnv(t)
	hostile := map[string]string{
		"dot":        ".",
		"dotdot":     "..",
		"slash":      "a/b",
		"backslash":  `a\b`,
		"nul":        "a\x00b",
		"leadingdot": ".hidden",
		"newline":    "a\nb",
		"10KB":       strings.Repeat("x", 10<<10),
		"unicode":    "ü",
		"space":      "x y",
	}
	for name, id := range hostile {
		t.Run(name, func(t *testing.T) {
			rev := e.svc.Rev()
			b := sample("ok", "1.0.0", 1)
			b.CookbookID = id
			_, err := e.svc.Upsert(t.Context(), b, UpsertOptions{})
			require.Error(t, err)
			ae := apperr.As(err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, ae.Code)
			assert.Equal(t, "bundle.cookbook_id must match "+IDPattern, ae.Message)
			assert.LessOrEqual(t, len(ae.Details["cookbook_id"].(string)), 150, "hostile values are clipped in details")
			assert.Equal(t, rev, e.svc.Rev(), "nothing written")

			_, err = e.svc.Get(t.Context(), id, "")
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)
			_, err = e.svc.Delete(t.Context(), id, "")
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)

			b = sample("ok", "1.0.0", 1)
			b.Entries[0].EntryID = id
			_, err = e.svc.Upsert(t.Context(), b, UpsertOptions{})
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)

			b = sample("ok", "1.0.0", 1)
			b.Version = id
			_, err = e.svc.Upsert(t.Context(), b, UpsertOptions{})
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)
			_, err = e.svc.Get(t.Context(), "ok", id)
			require.Error(t, err)
			assert.Equal(t, "version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", apperr.As(err).Message)
		})
	}
	// Case differs, ids differ: bbolt keys are exact, nothing collides.
	mustUpsert(t, e.svc, sample("Abc", "1.0.0", 1), "")
	mustUpsert(t, e.svc, sample("abc", "1.0.0", 2), "")
	st, err := e.svc.Get(t.Context(), "Abc", "")
	require.NoError(t, err)
	assert.Len(t, st.Bundle.Entries, 1)
	_, err = e.svc.Get(t.Context(), " ", "")
	assert.Equal(t, apperr.CodeValidation, apperr.As(err).Code)
}

func TestDecodeKeepsUnknownCaseVariants(t *testing.T) {
	// encoding/json would map "Title" onto title; the bundle keeps it as an
	// unknown key instead, so it cannot silently replace the real title.
	raw := `{"type":"accords.cookbook.bundle.v1","cookbook_id":"c","version":"1.0.0","title":"Real","Title":"Shadow",
	  "entries":[{"entry_id":"e","entry_type":"recipe.verb.v1","connector_id":"x","verb":"y","request":{}}]}`
	b, err := DecodeBundle([]byte(raw))
	require.NoError(t, err)
	assert.Equal(t, "Real", b.Title)
	assert.Equal(t, "Shadow", b.Extra["Title"])
	out, err := json.Marshal(b)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"Title":"Shadow"`)
}

// The pattern messages and schemas state is the rule ValidID checks.
func TestIDPatternIsTheRuleChecked(t *testing.T) {
	assert.Equal(t, IDPattern, ident.ID.String())
	for _, id := range []string{"net.http", "a", strings.Repeat("a", 128)} {
		assert.True(t, ValidID(id), id)
	}
	for _, id := range []string{"", ".hidden", "a/b", "a b", "net.http\n", strings.Repeat("a", 129)} {
		assert.False(t, ValidID(id), id)
	}
}

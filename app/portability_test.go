package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemasArePortable is a strict portability check in the manner of the
// MCP Inspector's schema lint, over every tool's input and output schema as
// clients receive them. It reports errors for what some client refuses or
// misreads, so a tool list passes here when every client we know of takes
// it whole:
//   - the root of both schemas is type "object" (MCP requires it for the
//     input; the TypeScript SDK parses the output the same way);
//   - "type" is one string: type arrays are refused or mistranslated by
//     clients that map schemas to one-type dialects (Gemini's OpenAPI
//     subset); a value of several types is anyOf of single-type branches;
//   - every schema is an object with a type, or anyOf/oneOf of typed
//     branches: boolean schemas make the TypeScript SDK reject the whole
//     list, and typeless ones are refused by OpenAI-style validators;
//   - arrays say what they hold (VS Code and OpenAI refuse arrays without
//     items);
//   - required names defined properties (Ajv strict refuses others);
//   - no references ($ref, $defs: Gemini refuses them, external ones no
//     client can resolve) and no OpenAPI keywords (nullable, discriminator);
//   - format only from the set every provider accepts; enum values and
//     defaults of the schema's own type.
func TestSchemasArePortable(t *testing.T) {
	t.Parallel()
	var errs []string
	for _, d := range tools.Definitions() {
		raw, err := json.Marshal(d.MCPTool())
		require.NoError(t, err)
		var wire struct {
			Input  any `json:"inputSchema"`
			Output any `json:"outputSchema"`
		}
		require.NoError(t, json.Unmarshal(raw, &wire))
		for _, part := range []struct {
			name   string
			schema any
		}{{"inputSchema", wire.Input}, {"outputSchema", wire.Output}} {
			root, ok := part.schema.(map[string]any)
			if !ok || root["type"] != "object" {
				errs = append(errs, fmt.Sprintf("%s %s: root is not type object", d.Name, part.name))
				continue
			}
			lint(d.Name+" "+part.name, "", root, &errs)
		}
	}
	assert.Empty(t, errs, "portability errors:\n%s", strings.Join(errs, "\n"))
}

var portableFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

func lint(where, path string, v any, errs *[]string) {
	report := func(format string, args ...any) {
		*errs = append(*errs, fmt.Sprintf("%s %s: %s", where, "#"+path, fmt.Sprintf(format, args...)))
	}
	s, ok := v.(map[string]any)
	if !ok {
		report("schema is %T, not an object", v)
		return
	}
	for _, k := range []string{"$ref", "$defs", "definitions", "nullable", "discriminator"} {
		if _, has := s[k]; has {
			report("uses %s", k)
		}
	}
	typ, hasType := s["type"]
	if hasType {
		if _, one := typ.(string); !one {
			report("type %v is not one string; use anyOf", typ)
		}
	}
	branches, _ := s["anyOf"].([]any)
	if b, ok := s["oneOf"].([]any); ok {
		branches = append(branches, b...)
	}
	if !hasType && len(branches) == 0 {
		report("no type")
	}
	for i, b := range branches {
		bs, ok := b.(map[string]any)
		if !ok {
			report("anyOf branch %d is %T", i, b)
			continue
		}
		if _, ok := bs["type"].(string); !ok {
			report("anyOf branch %d has no single type", i)
		}
		lint(where, fmt.Sprintf("%s/anyOf/%d", path, i), bs, errs)
	}
	if f, ok := s["format"].(string); ok && !slices.Contains(portableFormats, f) {
		report("format %q is not portable", f)
	}
	t, _ := typ.(string)
	if t == "array" {
		if items, ok := s["items"]; !ok {
			report("array without items")
		} else {
			lint(where, path+"/items", items, errs)
		}
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		lint(where, path+"/properties/"+name, p, errs)
	}
	if ap, ok := s["additionalProperties"]; ok {
		if _, isBool := ap.(bool); !isBool {
			lint(where, path+"/additionalProperties", ap, errs)
		}
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := props[fmt.Sprint(r)]; !ok {
				report("required %v is not a property", r)
			}
		}
	}
	for _, e := range asList(s["enum"]) {
		if t != "" && jsonscan.Type(e) != t {
			report("enum value %v is not a %s", e, t)
		}
	}
	if d, ok := s["default"]; ok && t != "" && jsonscan.Type(d) != t && !(t == "number" && jsonscan.Type(d) == "integer") {
		report("default %v is not a %s", d, t)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// The check itself catches what it claims to.
func TestPortabilityCheckCatchesTheUnportable(t *testing.T) {
	t.Parallel()
	bad := map[string]any{"type": "object", "required": []any{"x"}, "properties": map[string]any{
		"a": map[string]any{"type": []any{"string", "null"}},
		"b": true,
		"c": map[string]any{"type": "array"},
		"d": map[string]any{"description": "no type"},
		"e": map[string]any{"$ref": "#/$defs/e"},
		"f": map[string]any{"type": "string", "format": "uri"},
		"g": map[string]any{"type": "string", "enum": []any{"x", 1.0}},
		"h": map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"properties": map[string]any{}}}},
	}}
	var errs []string
	lint("t", "", bad, &errs)
	all := strings.Join(errs, "\n")
	for _, want := range []string{"/properties/a: type [string null] is not one string", "/properties/b: schema is bool",
		"/properties/c: array without items", "/properties/d: no type", "/properties/e: uses $ref", `format "uri"`,
		"enum value 1 is not a string", "anyOf branch 1 has no single type", "required x is not a property"} {
		assert.Contains(t, all, want)
	}
}

package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// checker validates arguments against one tool's input schema. It supports
// the subset of JSON Schema the tools use: type(s), required, properties,
// items, enum, minimum/maximum. It is compiled once per tool (sorted
// names, allowed-value lists), so a call allocates only for what it
// reports.
type checker struct {
	types []string
	// integer: an integer (not number) field, which refuses fractions.
	integer  bool
	enum     []any
	allowed  []string
	min, max *float64
	// required and props are sorted by name, so the first problem reported
	// is deterministic.
	required []string
	props    []propChecker
	items    *checker
}

type propChecker struct {
	name     string
	nullable bool
	check    *checker
}

func compileSchema(s *jsonschema.Schema) *checker {
	if s == nil {
		return nil
	}
	s = flattenAnyOf(s)
	c := &checker{types: s.Types, enum: s.Enum, min: s.Minimum, max: s.Maximum, items: compileSchema(s.Items)}
	if s.Type != "" {
		c.types = []string{s.Type}
	}
	c.integer = slices.Contains(c.types, "integer") && !slices.Contains(c.types, "number")
	for _, e := range s.Enum {
		c.allowed = append(c.allowed, fmt.Sprint(e))
	}
	c.required = slices.Sorted(slices.Values(s.Required))
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[n]
		fp := flattenAnyOf(p)
		c.props = append(c.props, propChecker{name: n, check: compileSchema(p),
			nullable: slices.Contains(fp.Types, "null") || fp.Type == "null"})
	}
	return c
}

// flattenAnyOf reads anyOf branches of one type each (how the schemas say
// "a CSV string or an array", or "any value") as one schema of several
// types: the branches' keywords apply to values of their own type, and
// these branches never share a type.
func flattenAnyOf(s *jsonschema.Schema) *jsonschema.Schema {
	if len(s.AnyOf) == 0 {
		return s
	}
	out := *s
	out.AnyOf = nil
	for _, b := range s.AnyOf {
		switch {
		case b.Type != "":
			out.Types = append(out.Types, b.Type)
		default:
			out.Types = append(out.Types, b.Types...)
		}
		if b.Items != nil {
			out.Items = b.Items
		}
		if len(b.Properties) > 0 {
			out.Properties, out.Required = b.Properties, b.Required
		}
		if b.Minimum != nil {
			out.Minimum = b.Minimum
		}
		if b.Maximum != nil {
			out.Maximum = b.Maximum
		}
		if len(b.Enum) > 0 {
			out.Enum = b.Enum
		}
	}
	return &out
}

// validateArgs checks args and returns the first problem as an MCP_VALIDATION_ERROR naming the field.
// Defaults are not written into args (the decoder applies them), so args
// keeps exactly the keys the client sent.
func validateArgs(c *checker, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	if _, err := c.check(args, ""); err != nil {
		return nil, err
	}
	return args, nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeAllowed(allowed []string, got string) bool {
	for _, a := range allowed {
		if a == got || (a == "number" && got == "integer") || (a == "integer" && got == "number") {
			return true
		}
	}
	return false
}

func fieldName(path string) string {
	if path == "" {
		return "arguments"
	}
	return path
}

func child(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (c *checker) check(v any, path string) (any, error) {
	if c == nil {
		return v, nil
	}
	got := jsonType(v)
	if len(c.types) > 0 && !typeAllowed(c.types, got) {
		want := strings.Join(c.types, " or ")
		return nil, apperr.Validation(fieldName(path), "%s must be %s, got %s", fieldName(path), article(want), got).
			With("expected", want).With("actual", got)
	}
	if f, ok := v.(float64); ok && c.integer && f != math.Trunc(f) {
		// The predecessor truncated 2.5 to 2; a fraction where a count is
		// meant is a mistake to report (D2), not to guess at.
		return nil, apperr.Validation(fieldName(path), "%s must be an integer, got %v", fieldName(path), f).
			With("expected", "integer").With("actual", "number")
	}
	if len(c.enum) > 0 && !slices.Contains(c.enum, v) {
		return nil, apperr.Validation(fieldName(path), "%s must be one of %s, got %v", fieldName(path), strings.Join(c.allowed, ", "), v).
			With("allowed", slices.Clone(c.allowed))
	}
	if f, ok := v.(float64); ok {
		if c.min != nil && f < *c.min {
			return nil, apperr.Validation(fieldName(path), "%s must be at least %v", fieldName(path), *c.min)
		}
		if c.max != nil && f > *c.max {
			return nil, apperr.Validation(fieldName(path), "%s must be at most %v", fieldName(path), *c.max)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range c.required {
			if val, ok := x[r]; !ok || val == nil {
				return nil, apperr.Validation(child(path, r), "%s is required", child(path, r))
			}
		}
		for _, p := range c.props {
			val, ok := x[p.name]
			if !ok {
				continue
			}
			// An explicit null for an optional field is not checked: the
			// decoder reads it as absent (nested) or zero (top level).
			if val == nil && !p.nullable {
				continue
			}
			nv, err := p.check.check(val, child(path, p.name))
			if err != nil {
				return nil, err
			}
			x[p.name] = nv
		}
		return x, nil
	case []any:
		if c.items != nil {
			for i, item := range x {
				nv, err := c.items.check(item, fmt.Sprintf("%s[%d]", fieldName(path), i))
				if err != nil {
					return nil, err
				}
				x[i] = nv
			}
		}
		return x, nil
	}
	return v, nil
}

func article(t string) string {
	switch {
	case strings.HasPrefix(t, "a"), strings.HasPrefix(t, "i"), strings.HasPrefix(t, "o"):
		return "an " + t
	}
	return "a " + t
}

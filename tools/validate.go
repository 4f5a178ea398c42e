package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// validateArgs checks args against s, applies top-level defaults, truncates
// numbers given for integer fields, and returns the first problem as an
// MCP_VALIDATION_ERROR naming the field. It supports the subset of JSON
// Schema the registry uses: type(s), required, properties, items, enum,
// minimum/maximum.
func validateArgs(s *jsonschema.Schema, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	for name, p := range s.Properties {
		if _, present := args[name]; !present && len(p.Default) > 0 {
			var v any
			if err := json.Unmarshal(p.Default, &v); err == nil {
				args[name] = v
			}
		}
	}
	v, err := checkValue(s, args, "")
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
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

func checkValue(s *jsonschema.Schema, v any, path string) (any, error) {
	if s == nil {
		return v, nil
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	got := jsonType(v)
	if len(types) > 0 && !typeAllowed(types, got) {
		want := strings.Join(types, " or ")
		return nil, apperr.Validation(fieldName(path), "%s must be %s, got %s", fieldName(path), article(want), got).
			With("expected", want).With("actual", got)
	}
	// Integer fields accept any JSON number and truncate it (spec §8.2).
	if f, ok := v.(float64); ok && contains(types, "integer") && !contains(types, "number") {
		v = math.Trunc(f)
	}
	if len(s.Enum) > 0 {
		found := false
		for _, e := range s.Enum {
			if e == v {
				found = true
				break
			}
		}
		if !found {
			allowed := make([]string, 0, len(s.Enum))
			for _, e := range s.Enum {
				allowed = append(allowed, fmt.Sprint(e))
			}
			return nil, apperr.Validation(fieldName(path), "%s must be one of %s, got %v", fieldName(path), strings.Join(allowed, ", "), v).
				With("allowed", allowed)
		}
	}
	if f, ok := v.(float64); ok {
		if s.Minimum != nil && f < *s.Minimum {
			return nil, apperr.Validation(fieldName(path), "%s must be at least %v", fieldName(path), *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return nil, apperr.Validation(fieldName(path), "%s must be at most %v", fieldName(path), *s.Maximum)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		req := append([]string(nil), s.Required...)
		sort.Strings(req)
		for _, r := range req {
			if val, ok := x[r]; !ok || val == nil {
				return nil, apperr.Validation(child(path, r), "%s is required", child(path, r))
			}
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			val, ok := x[n]
			if !ok {
				continue
			}
			// An explicit null for an optional field means "absent".
			if val == nil && !contains(s.Properties[n].Types, "null") && s.Properties[n].Type != "null" {
				delete(x, n)
				continue
			}
			nv, err := checkValue(s.Properties[n], val, child(path, n))
			if err != nil {
				return nil, err
			}
			x[n] = nv
		}
		return x, nil
	case []any:
		if s.Items != nil {
			for i, item := range x {
				nv, err := checkValue(s.Items, item, fmt.Sprintf("%s[%d]", fieldName(path), i))
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func article(t string) string {
	switch {
	case strings.HasPrefix(t, "a"), strings.HasPrefix(t, "i"), strings.HasPrefix(t, "o"):
		return "an " + t
	}
	return "a " + t
}

// decodeError turns a JSON decoding failure of validated arguments into a
// validation error naming the field when the decoder says which.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		f := te.Field
		if f == "" {
			f = "arguments"
		}
		return apperr.Validation(f, "%s must be %s", f, te.Type.String()).WithCause(err)
	}
	return apperr.Validation("arguments", "arguments could not be decoded: %v", err).WithCause(err)
}

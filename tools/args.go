package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/google/jsonschema-go/jsonschema"
)

// Call is the per-invocation context handed to handlers.
type Call struct {
	Principal caller.Principal
	// Progress reports progress when the client sent a progress token; it is
	// a no-op otherwise.
	Progress func(ctx context.Context, progress, total float64, message string)
}

// Scope is the tenant scope of the call.
func (c *Call) Scope() string { return c.Principal.Scope }

// StringList is an argument given as a CSV string or a string array (both
// accepted; tools list the array form). Items are trimmed
// and blanks dropped; an absent argument is nil, a given one never is (so
// "given but empty" stays distinguishable).
type StringList []string

// UnmarshalJSON reads a CSV string or a string array; null leaves l as it
// is (absent).
func (l *StringList) UnmarshalJSON(b []byte) error {
	var items []string
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		items = strings.Split(s, ",")
	default:
		if err := json.Unmarshal(b, &items); err != nil {
			return err
		}
	}
	out := StringList{}
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	*l = out
	return nil
}

// AnyValue is an argument that may be any JSON value, null included
// (plan_input). Given tells an explicit null, which is forwarded as null,
// from an absent argument.
type AnyValue struct {
	Value any
	Given bool
}

// UnmarshalJSON takes any JSON value; it runs only for a given argument.
func (a *AnyValue) UnmarshalJSON(b []byte) error {
	a.Given = true
	return json.Unmarshal(b, &a.Value)
}

// argTypes are the schemas of the argument types that decode themselves:
// every field of the type accepts the forms its UnmarshalJSON reads.
var argTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[StringList](): {AnyOf: []*jsonschema.Schema{str(), strs()}},
	reflect.TypeFor[AnyValue]():   anyValue(),
}

// required trims a required string argument; blank is a validation error.
func required(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", apperr.Validation(field, "%s is required", field)
	}
	return v, nil
}

// firstNonBlank returns the first argument that is not blank.
func firstNonBlank(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

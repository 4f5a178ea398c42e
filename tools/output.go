package tools

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Output schemas say what a tool's data holds: its real fields and their
// types, briefly (no prose: field names carry the meaning, the tool's
// description the rest). Every tools/list pays for them, so they stay
// shallow. Every node has one type, or anyOf of single types, and arrays
// say what they hold: the strict portability check holds every tool to
// that. A field that may be absent or null is left out: no schema here
// requires fields, and each lists only fields whose type always holds.

// obj is an object with the given name, schema pairs as properties.
func obj(fields ...any) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object"}
	if len(fields)%2 != 0 {
		panic("obj: fields come in name, schema pairs")
	}
	for i := 0; i < len(fields); i += 2 {
		name, ok1 := fields[i].(string)
		p, ok2 := fields[i+1].(*jsonschema.Schema)
		if !ok1 || !ok2 {
			panic(fmt.Sprintf("obj: pair %d is not a name and a schema", i/2))
		}
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		s.Properties[name] = p
	}
	return s
}

// arr is an array of items.
func arr(items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: items}
}

func str() *jsonschema.Schema     { return &jsonschema.Schema{Type: "string"} }
func boolean() *jsonschema.Schema { return &jsonschema.Schema{Type: "boolean"} }

// strs is an array of strings.
func strs() *jsonschema.Schema { return arr(str()) }

// objs is an array of objects whose fields are not described further.
func objs() *jsonschema.Schema { return arr(obj()) }

// anyValue is any JSON value, as anyOf of the six types (a schema without a
// type is refused by clients that translate schemas for their model).
func anyValue() *jsonschema.Schema {
	var branches []*jsonschema.Schema
	for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
		branches = append(branches, &jsonschema.Schema{Type: t})
	}
	return &jsonschema.Schema{AnyOf: branches}
}

// vaultBody is the data of a tool that passes Vaultclaw's body through
// unchanged: fields are Vault's, described where Vault documents them.
func vaultBody(fields ...any) *jsonschema.Schema { return obj(fields...) }

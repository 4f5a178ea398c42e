package envelope

import "github.com/google/jsonschema-go/jsonschema"

// OutputSchema is a tool's outputSchema: the envelope in the smallest form
// every client we test accepts (the TypeScript SDK's Ajv, Ajv strict,
// go-sdk's jsonschema-go), around the schema of the tool's own data.
//
// Only data is described: ok, error and meta are the same for every tool,
// so the server instructions and docs/contract.md describe them once
// instead of every tool repeating them in every tools/list. data is null on
// failure, and clients validate failures too, hence anyOf with null (a type
// array would be shorter but is not portable). No "required": Ajv's strict
// mode refuses a required property that properties does not define, and
// defining all four would cost each tool what describing them costs.
func OutputSchema(data *jsonschema.Schema) *jsonschema.Schema {
	if data == nil {
		data = &jsonschema.Schema{Type: "object"}
	}
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"data": {AnyOf: []*jsonschema.Schema{data, {Type: "null"}}},
		},
	}
}

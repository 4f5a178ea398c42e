package envelope

import "github.com/google/jsonschema-go/jsonschema"

// OutputSchema is a tool's outputSchema: the envelope in the smallest form
// every tested client accepts, around the schema of the tool's data. Only
// data is described (ok, error and meta are documented once); data is null
// on failure, hence anyOf with null. No "required": Ajv's strict mode
// refuses one that properties does not define.
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

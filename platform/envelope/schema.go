package envelope

import "github.com/google/jsonschema-go/jsonschema"

// OutputSchema is the explicit JSON Schema of the envelope, declared as every
// tool's outputSchema. "data" gets a concrete schema (not the boolean schema
// true, which some clients reject for the whole tools/list).
func OutputSchema() *jsonschema.Schema {
	str := &jsonschema.Schema{Type: "string"}
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"ok", "data", "error", "meta"},
		Properties: map[string]*jsonschema.Schema{
			"ok": {Type: "boolean", Description: "true when the call succeeded"},
			"data": {
				Types:       []string{"object", "array", "string", "number", "boolean", "null"},
				Description: "tool-specific result; null on failure",
			},
			"error": {
				Types:       []string{"object", "null"},
				Description: "null on success",
				Required:    []string{"code", "category", "message", "retryable", "vault_code", "details"},
				Properties: map[string]*jsonschema.Schema{
					"code":       str,
					"category":   {Type: "string", Enum: []any{"auth", "approval", "validation", "policy", "secrets", "plans", "network", "internal"}},
					"message":    str,
					"retryable":  {Type: "boolean"},
					"vault_code": str,
					"details":    {Type: "object"},
				},
			},
			"meta": {
				Type:     "object",
				Required: []string{"request_id", "vault_http_status", "vault_code"},
				Properties: map[string]*jsonschema.Schema{
					"request_id":        str,
					"vault_http_status": {Type: "integer"},
					"vault_code":        str,
				},
			},
		},
	}
}

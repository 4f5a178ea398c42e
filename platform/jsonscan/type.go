package jsonscan

import (
	"fmt"
	"math"
)

// Type is the JSON Schema type of a value decoded by encoding/json into
// any; a whole number is an integer, as jsonschema-go reads it.
func Type(v any) string {
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
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

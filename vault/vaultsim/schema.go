package vaultsim

import (
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// FieldError is one schema violation, in Vaultclaw's shape.
type FieldError struct {
	Path     string `json:"path"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// Field error codes.
const (
	FieldTypeMismatch   = "TYPE_MISMATCH"
	FieldUnknown        = "UNKNOWN_FIELD"
	FieldRequired       = "REQUIRED"
	FieldEnumMismatch   = "ENUM_MISMATCH"
	FieldOutOfRange     = "OUT_OF_RANGE"
	FieldTooShort       = "TOO_SHORT"
	FieldFormatInvalid  = "FORMAT_INVALID"
	FieldModuleHash     = "MODULE_HASH_MISMATCH"
	FieldModuleHashMiss = "MODULE_HASH_REQUIRED"
)

// schema is a JSON Schema subset, with x-deprecated (property → hint) for
// fields Vaultclaw used to accept.
type schema = map[string]any

func fieldName(path string) string {
	if path == "" {
		return "request"
	}
	return strings.TrimPrefix(strings.ReplaceAll(path, "/", "."), ".")
}

func ptrJoin(path, key string) string {
	key = strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
	return path + "/" + key
}

// validate appends the violations of v against sc at path.
func validate(sc schema, v any, path string, errs *[]FieldError) {
	if sc == nil {
		return
	}
	if !checkType(sc, v, path, errs) {
		return
	}
	checkEnum(sc, v, path, errs)
	switch x := v.(type) {
	case float64:
		checkNumber(sc, x, path, errs)
	case string:
		checkString(sc, x, path, errs)
	case []any:
		checkArray(sc, x, path, errs)
	case map[string]any:
		checkObject(sc, x, path, errs)
	}
}

// checkType reports whether v has the schema's type (an integer is a
// number); a mismatch is the only violation recorded for v.
func checkType(sc schema, v any, path string, errs *[]FieldError) bool {
	want, ok := sc["type"].(string)
	if !ok {
		return true
	}
	got := jsonscan.Type(v)
	if want == got || (want == "number" && got == "integer") {
		return true
	}
	*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldTypeMismatch,
		Message: fmt.Sprintf("%s must be %s", fieldName(path), article(want)), Expected: want, Actual: got})
	return false
}

func checkEnum(sc schema, v any, path string, errs *[]FieldError) {
	enum, ok := sc["enum"].([]any)
	if !ok {
		return
	}
	found := false
	for _, e := range enum {
		if e == v {
			found = true
		}
	}
	if found {
		return
	}
	names := make([]string, len(enum))
	for i, e := range enum {
		names[i] = fmt.Sprint(e)
	}
	*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldEnumMismatch,
		Message: fmt.Sprintf("%s must be one of %s", fieldName(path), strings.Join(names, ", ")), Expected: strings.Join(names, "|"), Actual: fmt.Sprint(v)})
}

func checkNumber(sc schema, x float64, path string, errs *[]FieldError) {
	if min, ok := sc["minimum"].(float64); ok && x < min {
		*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldOutOfRange, Message: fmt.Sprintf("%s must be at least %v", fieldName(path), min), Expected: fmt.Sprintf(">=%v", min), Actual: fmt.Sprint(x)})
	}
	if max, ok := sc["maximum"].(float64); ok && x > max {
		*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldOutOfRange, Message: fmt.Sprintf("%s must be at most %v", fieldName(path), max), Expected: fmt.Sprintf("<=%v", max), Actual: fmt.Sprint(x)})
	}
}

func checkString(sc schema, x, path string, errs *[]FieldError) {
	if min, ok := sc["minLength"].(float64); ok && float64(len(strings.TrimSpace(x))) < min {
		*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldTooShort, Message: fmt.Sprintf("%s must not be empty", fieldName(path)), Expected: "non-empty string", Actual: "empty string"})
	}
	switch sc["format"] {
	case "email":
		if a, err := mail.ParseAddress(x); err != nil || a.Address != strings.TrimSpace(x) {
			*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldFormatInvalid, Message: fmt.Sprintf("%s must be an e-mail address", fieldName(path)), Expected: "email", Actual: x})
		}
	case "uri":
		if u, err := url.Parse(x); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldFormatInvalid, Message: fmt.Sprintf("%s must be an absolute http(s) URL", fieldName(path)), Expected: "uri", Actual: x})
		}
	}
}

func checkArray(sc schema, x []any, path string, errs *[]FieldError) {
	if min, ok := sc["minItems"].(float64); ok && float64(len(x)) < min {
		*errs = append(*errs, FieldError{Path: pathOrRoot(path), Code: FieldTooShort, Message: fmt.Sprintf("%s must have at least %v item(s)", fieldName(path), min), Expected: fmt.Sprintf("array with >=%v items", min), Actual: fmt.Sprintf("array with %d items", len(x))})
	}
	if items, ok := sc["items"].(schema); ok {
		for i, it := range x {
			validate(items, it, fmt.Sprintf("%s/%d", path, i), errs)
		}
	}
}

// checkObject reports missing required properties first, then each
// present key in sorted order, so the violations come out stable.
func checkObject(sc schema, x map[string]any, path string, errs *[]FieldError) {
	props, _ := sc["properties"].(map[string]any)
	req, _ := sc["required"].([]any)
	for _, r := range req {
		name := r.(string)
		if val, ok := x[name]; !ok || val == nil {
			*errs = append(*errs, FieldError{Path: ptrJoin(path, name), Code: FieldRequired, Message: fmt.Sprintf("%s is required", fieldName(ptrJoin(path, name))), Expected: typeOf(props[name]), Actual: "missing"})
		}
	}
	deprecated, _ := sc["x-deprecated"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(x)) {
		p := ptrJoin(path, k)
		if ps, ok := props[k].(schema); ok {
			if x[k] == nil {
				continue // explicit null counts as absent
			}
			validate(ps, x[k], p, errs)
			continue
		}
		if hint, ok := deprecated[k].(string); ok {
			*errs = append(*errs, FieldError{Path: p, Code: FieldUnknown, Message: fmt.Sprintf("%s is not supported (deprecated): %s", fieldName(p), hint), Expected: "absent", Actual: jsonscan.Type(x[k])})
			continue
		}
		switch ap := sc["additionalProperties"].(type) {
		case bool:
			if !ap {
				*errs = append(*errs, FieldError{Path: p, Code: FieldUnknown, Message: fmt.Sprintf("%s is not a known field", fieldName(p)), Expected: "absent", Actual: jsonscan.Type(x[k])})
			}
		case schema:
			validate(ap, x[k], p, errs)
		}
	}
}

func typeOf(v any) string {
	if sc, ok := v.(schema); ok {
		if t, ok := sc["type"].(string); ok {
			return t
		}
	}
	return "value"
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func article(t string) string {
	switch t[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + t
	}
	return "a " + t
}

// schema builders keep the verb definitions readable.
func obj(props map[string]any, required ...string) schema {
	req := make([]any, len(required))
	for i, r := range required {
		req[i] = r
	}
	return schema{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

func str() schema      { return schema{"type": "string"} }
func nonEmpty() schema { return schema{"type": "string", "minLength": 1.0} }
func boolean() schema  { return schema{"type": "boolean"} }
func integer(min, max int) schema {
	return schema{"type": "integer", "minimum": float64(min), "maximum": float64(max)}
}
func strArray() schema { return schema{"type": "array", "items": str()} }
func anyValue() schema { return schema{} }
func enum(values ...string) schema {
	e := make([]any, len(values))
	for i, v := range values {
		e[i] = v
	}
	return schema{"type": "string", "enum": e}
}
func emails(min int) schema {
	s := schema{"type": "array", "items": schema{"type": "string", "format": "email"}}
	if min > 0 {
		s["minItems"] = float64(min)
	}
	return s
}

package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/jsonscan"
	"github.com/google/jsonschema-go/jsonschema"
)

// MaxArgumentValues bounds the JSON values of one call's arguments.
// Decoded JSON costs tens of bytes per value, so a message of a million
// tiny values would cost far more memory than its size; the largest
// legitimate argument, a cookbook bundle, holds a few tens of thousands.
const MaxArgumentValues = 200_000

// decodeArguments decodes a call's arguments. Unlike json.Unmarshal it
// names the field of a number out of range (1e400), refuses text that is
// not valid Unicode instead of replacing it, and refuses documents with
// more than MaxArgumentValues values before decoding them.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	scan := jsonscan.Scan(raw)
	if scan.Values > MaxArgumentValues {
		return nil, apperr.Validation("arguments", "arguments hold more than %d JSON values", MaxArgumentValues).
			With("max_values", MaxArgumentValues)
	}
	if scan.BadText >= 0 {
		f := fieldName(jsonscan.PathAt(raw, scan.BadText))
		return nil, apperr.Validation(f, "%s is not valid UTF-8 text (invalid bytes or an unpaired surrogate escape)", f)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, explainDecode(raw)
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.Validation("arguments", "arguments must be a JSON object")
	}
	return args, nil
}

// explainDecode names what made raw undecodable: a number beyond float64
// (json.Unmarshal does not say where), or else the document itself. It
// runs only on failure, so the fast path keeps one copy of the input.
func explainDecode(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if err := numbersToFloat(v, ""); err != nil {
			return err
		}
	}
	return apperr.Validation("arguments", "arguments must be a JSON object")
}

// numbersToFloat converts every json.Number to float64 in place; a number
// beyond float64 is a validation error naming its field.
func numbersToFloat(v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				f, err := toFloat(n, child(path, k))
				if err != nil {
					return err
				}
				x[k] = f
				continue
			}
			if err := numbersToFloat(e, child(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			at := itemPath(path, i)
			if n, ok := e.(json.Number); ok {
				f, err := toFloat(n, at)
				if err != nil {
					return err
				}
				x[i] = f
				continue
			}
			if err := numbersToFloat(e, at); err != nil {
				return err
			}
		}
	}
	return nil
}

func toFloat(n json.Number, path string) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, apperr.Validation(path, "%s is a number out of range", path).With("value", clipNumber(string(n)))
	}
	return f, nil
}

func clipNumber(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// argSchema checks one tool's arguments with jsonschema-go, the way the
// go-sdk's AddTool does: the schema is resolved once, its defaults checked
// against it; each call's arguments get their defaults, are validated, and
// are decoded into the tool's argument struct by encoding/json
// (decodeArgs). What it adds is the refusal: an MCP_VALIDATION_ERROR
// naming the first refused value in name order (refusal), where the
// SDK answers with a text error.
//
// The schema is resolved on the tool's first call, not when it is
// defined: tools are defined when the package starts, and resolving all of
// them costs every process (each CLI command too) milliseconds of its
// start-up budget. TestEveryToolSchemaResolves resolves every tool's.
type argSchema struct {
	tool     string
	schema   *jsonschema.Schema
	resolved func() (*jsonschema.Resolved, error)
	// known are the argument names the tool reads, for the
	// unknown-argument warnings.
	known *argNames
	// parts are subschemas resolved on their own (*jsonschema.Schema to
	// *jsonschema.Resolved), made on the first refused call that needs
	// them: validating a value against its own subschema is how refusal
	// finds the value that was refused.
	parts sync.Map
}

func newArgSchema(tool string, s *jsonschema.Schema) *argSchema {
	return &argSchema{tool: tool, schema: s, known: knownArguments(s),
		resolved: sync.OnceValues(func() (*jsonschema.Resolved, error) {
			r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
			if err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", tool, err)
			}
			return r, nil
		})}
}

// prepare validates args (nil: none), as decodeArguments returned them,
// and returns them with the schema's defaults as the JSON the argument
// struct is decoded from. It changes args.
//
// Where an object has declared properties, keys it does not declare are
// dropped (the warnings have named them): encoding/json matches keys
// without regard to case, so "Limit" would otherwise fill the limit field
// past the validation of "limit". A null the property's schema does not
// admit reads as absent, so defaults apply; at the top level it reads as
// given and zero, with no default, as the predecessor read arguments,
// except for an object whose fields have defaults, which gets them.
func (a *argSchema) prepare(args map[string]any) ([]byte, error) {
	r, err := a.resolved()
	if err != nil {
		return nil, apperr.Internal(a.tool, err)
	}
	if args == nil {
		args = map[string]any{}
	}
	zero := tidy(a.schema, args, true)
	if err := r.ApplyDefaults(&args); err != nil {
		return nil, apperr.Internal("apply argument defaults", err)
	}
	for _, name := range zero {
		delete(args, name)
	}
	if err := r.Validate(args); err != nil {
		return nil, a.refusal(a.schema, args, "")
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, apperr.Internal("encode arguments", err)
	}
	return raw, nil
}

// decodeArgs decodes prepared arguments into the argument struct in. The
// schema let them through, so what fails here is a value the Go type
// cannot hold (an integer beyond int), or a loose form's UnmarshalJSON.
func decodeArgs[In any](raw []byte, in *In) error {
	err := json.Unmarshal(raw, in)
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		f := fieldName(te.Field)
		return apperr.Validation(f, "%s must be %s", f, te.Type)
	}
	if _, ok := errors.AsType[*apperr.Error](err); ok {
		return err
	}
	return apperr.Validation("arguments", "arguments cannot be decoded: %v", err)
}

// shape is the declared properties and items of s, looking into its anyOf
// branches (of one type each: a CSV string or an array, any value).
func shape(s *jsonschema.Schema) (props map[string]*jsonschema.Schema, items *jsonschema.Schema) {
	props, items = s.Properties, s.Items
	for _, b := range s.AnyOf {
		if len(b.Properties) > 0 {
			props = b.Properties
		}
		if b.Items != nil {
			items = b.Items
		}
	}
	return props, items
}

// tidy drops, from the object m described by s, the keys s does not
// declare and the nulls it does not admit, at every level with declared
// properties; free-form objects are kept as sent. At the top level it
// returns the names whose null reads as given and zero (kept until the
// defaults are applied, so none is).
func tidy(s *jsonschema.Schema, m map[string]any, top bool) (zero []string) {
	props, _ := shape(s)
	if len(props) == 0 && !top {
		return nil
	}
	for k, v := range m {
		p, ok := props[k]
		if !ok {
			delete(m, k)
			continue
		}
		switch x := v.(type) {
		case nil:
			switch {
			case admitsNull(p):
			case top && !hasFieldDefaults(p):
				zero = append(zero, k)
			default:
				delete(m, k)
			}
		case map[string]any:
			tidy(p, x, false)
		case []any:
			if _, items := shape(p); items != nil {
				for _, item := range x {
					if im, ok := item.(map[string]any); ok {
						tidy(items, im, false)
					}
				}
			}
		}
	}
	return zero
}

func admitsNull(s *jsonschema.Schema) bool {
	if slices.Contains(typesOf(s), "null") {
		return true
	}
	return slices.ContainsFunc(s.AnyOf, admitsNull)
}

func hasFieldDefaults(s *jsonschema.Schema) bool {
	props, _ := shape(s)
	for _, p := range props {
		if len(p.Default) > 0 || hasFieldDefaults(p) {
			return true
		}
	}
	return false
}

func typesOf(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// refusal is the MCP_VALIDATION_ERROR of v, which s refused: it names the
// first refused value in name order (a required name missing first, then
// the properties, then array items), and says what jsonschema-go found
// wrong with it.
func (a *argSchema) refusal(s *jsonschema.Schema, v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		for _, r := range slices.Sorted(slices.Values(s.Required)) {
			if _, ok := x[r]; !ok {
				f := child(path, r)
				return apperr.Validation(f, "%s is required", f)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			p := s.Properties[name]
			if val, ok := x[name]; ok && !a.valid(p, val) {
				return a.refusal(p, val, child(path, name))
			}
		}
	case []any:
		if s.Items != nil {
			for i, item := range x {
				if !a.valid(s.Items, item) {
					return a.refusal(s.Items, item, itemPath(path, i))
				}
			}
		}
	}
	if len(s.AnyOf) > 0 {
		// Branches of one type each: the value's own type picks the
		// branch that says what is wrong with it.
		got := jsonscan.Type(v)
		var want []string
		var match []*jsonschema.Schema
		for _, b := range s.AnyOf {
			want = append(want, typesOf(b)...)
			if typeAllowed(typesOf(b), got) {
				match = append(match, b)
			}
		}
		switch len(match) {
		case 0:
			return typeError(path, want, v)
		case 1:
			return a.refusal(match[0], v, path)
		}
	}
	return a.keywordError(s, v, path)
}

// valid reports whether v satisfies s.
func (a *argSchema) valid(s *jsonschema.Schema, v any) bool {
	r := a.part(s)
	return r != nil && r.Validate(v) == nil
}

func (a *argSchema) part(s *jsonschema.Schema) *jsonschema.Resolved {
	if s == a.schema {
		r, _ := a.resolved()
		return r
	}
	if r, ok := a.parts.Load(s); ok {
		return r.(*jsonschema.Resolved)
	}
	// A subschema of a resolved schema without references resolves too.
	r, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	a.parts.Store(s, r)
	return r
}

// keywordError says why s itself refuses v (its values, if any, passed),
// from the keyword jsonschema-go reports.
func (a *argSchema) keywordError(s *jsonschema.Schema, v any, path string) error {
	f := fieldName(path)
	var msg string
	if r := a.part(s); r != nil {
		if err := r.Validate(v); err != nil {
			msg = innermost(err).Error()
		}
	}
	keyword, detail, _ := strings.Cut(msg, ": ")
	switch keyword {
	case "type":
		return typeError(path, typesOf(s), v)
	case "enum":
		allowed := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			allowed[i] = fmt.Sprint(e)
		}
		return apperr.Validation(f, "%s must be one of %s, got %v", f, strings.Join(allowed, ", "), v).With("allowed", allowed)
	case "minimum":
		return apperr.Validation(f, "%s must be at least %v", f, *s.Minimum)
	case "maximum":
		return apperr.Validation(f, "%s must be at most %v", f, *s.Maximum)
	case "":
		return apperr.Validation(f, "%s is invalid", f)
	}
	return apperr.Validation(f, "%s is invalid: %s: %s", f, keyword, detail)
}

// innermost is the error jsonschema-go wraps in the schema locations it
// passed through: "keyword: what is wrong".
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// typeError is "limit must be an integer, got string"; a fraction where an
// integer is meant says the number ("got 2.5"): it is refused, not
// truncated (D2).
func typeError(path string, want []string, v any) error {
	f, got := fieldName(path), jsonscan.Type(v)
	if len(want) == 1 && want[0] == "integer" && got == "number" {
		return apperr.Validation(f, "%s must be an integer, got %v", f, v).With("expected", "integer").With("actual", got)
	}
	w := strings.Join(want, " or ")
	return apperr.Validation(f, "%s must be %s, got %s", f, article(w), got).With("expected", w).With("actual", got)
}

// typeAllowed: integer and number pick each other's branch, so that a
// fraction given for an integer is reported by the integer branch.
func typeAllowed(allowed []string, got string) bool {
	for _, a := range allowed {
		if a == got || (a == "number" && got == "integer") || (a == "integer" && got == "number") {
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

func itemPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", fieldName(path), i)
}

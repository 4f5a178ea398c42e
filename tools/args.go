package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// Call is the per-invocation context handed to handlers.
type Call struct {
	Principal caller.Principal
	// Progress reports progress when the client sent a progress token; it is
	// a no-op otherwise.
	Progress func(ctx context.Context, progress, total float64, message string)
	// args are the arguments as the client sent them (validated; numbers
	// for integer fields truncated). Handlers read the decoded struct; this
	// stays for questions about the call itself, such as which keys it had.
	args map[string]any
}

// Scope is the tenant scope of the call.
func (c *Call) Scope() string { return c.Principal.Scope }

// Given reports whether the client sent the top-level argument name (an
// explicit null counts).
func (c *Call) Given(name string) bool {
	_, ok := c.args[name]
	return ok
}

// ArgumentNames are the top-level argument names the client sent, sorted,
// including names the tool does not know (they are accepted and ignored).
func (c *Call) ArgumentNames() []string {
	out := make([]string, 0, len(c.args))
	for k := range c.args {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// StringList is an argument given as a CSV string or a string array. Items
// are trimmed and blanks dropped; an absent argument is nil, a given one
// never is (so "given but empty" stays distinguishable).
type StringList []string

func (l *StringList) setArg(v any, path string) error {
	out := StringList{}
	switch x := v.(type) {
	case string:
		for p := range strings.SplitSeq(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	case []any:
		for i, item := range x {
			s, ok := item.(string)
			if !ok {
				return apperr.Validation(path, "string list must only include strings").With("index", i)
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	default:
		return apperr.Validation(path, "value must be csv string or string array")
	}
	*l = out
	return nil
}

// argSetter is implemented by argument types that decode themselves from
// the validated JSON value.
type argSetter interface {
	setArg(v any, path string) error
}

var argSetterType = reflect.TypeFor[argSetter]()

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

// decoder fills an argument struct In from the validated JSON object in one
// pass: no JSON round trip. Its plan is built once per tool from In and the
// tool's schema, whose defaults it applies at every level.
type decoder[In any] struct {
	plan *structPlan
}

func newDecoder[In any](tool string, s *jsonschema.Schema) decoder[In] {
	p, err := planStruct(reflect.TypeFor[In](), s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", tool, err))
	}
	return decoder[In]{plan: p}
}

func (d decoder[In]) decode(args map[string]any, dst *In) error {
	return d.plan.bind(reflect.ValueOf(dst).Elem(), args, "", true)
}

// bindFunc sets dst from the validated JSON value v (never nil, except a
// nil map for an absent object).
type bindFunc func(dst reflect.Value, v any, path string) error

type fieldPlan struct {
	name  string
	index int
	bind  bindFunc
	// def is the decoded schema default (hasDef).
	def    any
	hasDef bool
	// object is the plan of a struct-valued field: an absent or null
	// object is bound as {} so its own defaults apply.
	object *structPlan
	// keepNull: a pointer to an interface records an explicit null as a
	// non-nil pointer (the argument was given).
	keepNull bool
}

type structPlan struct {
	fields []fieldPlan
}

// bind fills the struct dst from the object v (nil: every field absent).
// An absent field gets its default. An explicit null for a top-level field
// leaves it zero, as the predecessor read arguments; inside nested objects a
// null counts as absent, so nested defaults apply.
func (p *structPlan) bind(dst reflect.Value, v any, path string, top bool) error {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return apperr.Validation(fieldName(path), "%s must be an object", fieldName(path))
	}
	for i := range p.fields {
		f := &p.fields[i]
		fv := dst.Field(f.index)
		val, present := m[f.name]
		switch {
		case present && val != nil:
		case present && f.keepNull:
			fv.Set(reflect.New(fv.Type().Elem()))
			continue
		case f.hasDef && (!present || !top):
			val = cloneValue(f.def)
		case f.object != nil:
			val = map[string]any(nil)
		default:
			continue
		}
		if err := f.bind(fv, val, child(path, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// planStruct maps the exported, JSON-named fields of t onto the properties
// of s.
func planStruct(t reflect.Type, s *jsonschema.Schema) (*structPlan, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("argument type %s is not a struct", t)
	}
	p := &structPlan{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		var ps *jsonschema.Schema
		if s != nil {
			ps = s.Properties[name]
		}
		f := fieldPlan{name: name, index: i}
		if sf.Type.Kind() == reflect.Struct && !reflect.PointerTo(sf.Type).Implements(argSetterType) {
			sp, err := planStruct(sf.Type, ps)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", name, err)
			}
			f.object = sp
			f.bind = func(dst reflect.Value, v any, path string) error { return sp.bind(dst, v, path, false) }
		} else {
			bind, err := planValue(sf.Type, ps)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", name, err)
			}
			f.bind = bind
		}
		if ps != nil && len(ps.Default) > 0 {
			if err := json.Unmarshal(ps.Default, &f.def); err != nil {
				return nil, fmt.Errorf("argument %s: default: %w", name, err)
			}
			f.hasDef = true
		}
		f.keepNull = sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Interface
		p.fields = append(p.fields, f)
	}
	return p, nil
}

// planValue returns how a value of type t is set from validated JSON
// described by s.
func planValue(t reflect.Type, s *jsonschema.Schema) (bindFunc, error) {
	if reflect.PointerTo(t).Implements(argSetterType) {
		return bindSetter, nil
	}
	switch t.Kind() {
	case reflect.String:
		return bindString, nil
	case reflect.Bool:
		return bindBool, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return bindInt(t), nil
	case reflect.Float32, reflect.Float64:
		return bindFloat(t), nil
	case reflect.Interface:
		return planInterface(t)
	case reflect.Map:
		return planMap(t)
	case reflect.Slice:
		return planSlice(t, s)
	case reflect.Pointer:
		return planPointer(t, s)
	case reflect.Struct:
		sp, err := planStruct(t, s)
		if err != nil {
			return nil, err
		}
		return func(dst reflect.Value, v any, path string) error {
			return sp.bind(dst, v, path, false)
		}, nil
	}
	return nil, fmt.Errorf("unsupported argument type %s", t)
}

func bindSetter(dst reflect.Value, v any, path string) error {
	return dst.Addr().Interface().(argSetter).setArg(v, path)
}

func bindString(dst reflect.Value, v any, path string) error {
	s, ok := v.(string)
	if !ok {
		return mismatch(path, "string")
	}
	dst.SetString(s)
	return nil
}

func bindBool(dst reflect.Value, v any, path string) error {
	b, ok := v.(bool)
	if !ok {
		return mismatch(path, "bool")
	}
	dst.SetBool(b)
	return nil
}

// bindInt accepts whole numbers that fit the integer type t.
func bindInt(t reflect.Type) bindFunc {
	return func(dst reflect.Value, v any, path string) error {
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 || dst.OverflowInt(int64(f)) {
			return mismatch(path, t.String())
		}
		dst.SetInt(int64(f))
		return nil
	}
}

func bindFloat(t reflect.Type) bindFunc {
	return func(dst reflect.Value, v any, path string) error {
		f, ok := v.(float64)
		if !ok {
			return mismatch(path, t.String())
		}
		dst.SetFloat(f)
		return nil
	}
}

// planInterface takes any JSON value into an empty interface.
func planInterface(t reflect.Type) (bindFunc, error) {
	if t.NumMethod() != 0 {
		return nil, fmt.Errorf("unsupported interface type %s", t)
	}
	return func(dst reflect.Value, v any, _ string) error {
		dst.Set(reflect.ValueOf(v))
		return nil
	}, nil
}

// planMap takes a JSON object as it is; only map[string]any can hold one.
func planMap(t reflect.Type) (bindFunc, error) {
	if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.Interface || t.Elem().NumMethod() != 0 {
		return nil, fmt.Errorf("unsupported map type %s (use map[string]any)", t)
	}
	return func(dst reflect.Value, v any, path string) error {
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, "object")
		}
		dst.Set(reflect.ValueOf(m))
		return nil
	}, nil
}

// planSlice binds each item with the element plan; a null item stays the
// element's zero value.
func planSlice(t reflect.Type, s *jsonschema.Schema) (bindFunc, error) {
	var items *jsonschema.Schema
	if s != nil {
		items = s.Items
	}
	elem, err := planValue(t.Elem(), items)
	if err != nil {
		return nil, err
	}
	return func(dst reflect.Value, v any, path string) error {
		arr, ok := v.([]any)
		if !ok {
			return mismatch(path, "array")
		}
		out := reflect.MakeSlice(t, len(arr), len(arr))
		for i, item := range arr {
			at := fmt.Sprintf("%s[%d]", fieldName(path), i)
			if item == nil {
				continue
			}
			if err := elem(out.Index(i), item, at); err != nil {
				return err
			}
		}
		dst.Set(out)
		return nil
	}, nil
}

// planPointer binds into a fresh value and sets the pointer only when
// that succeeds.
func planPointer(t reflect.Type, s *jsonschema.Schema) (bindFunc, error) {
	inner, err := planValue(t.Elem(), s)
	if err != nil {
		return nil, err
	}
	return func(dst reflect.Value, v any, path string) error {
		p := reflect.New(t.Elem())
		if err := inner(p.Elem(), v, path); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}, nil
}

// mismatch is the error of a value the schema let through but the Go type
// cannot hold (for example an integer beyond int64).
func mismatch(path, want string) error {
	f := fieldName(path)
	return apperr.Validation(f, "%s must be %s", f, want)
}

// cloneValue deep-copies decoded JSON, so a default shared by every call is
// never handed out for mutation.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

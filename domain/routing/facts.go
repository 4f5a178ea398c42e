package routing

import (
	"fmt"
	"strings"
)

// hasValue: non-blank strings, non-empty lists and objects, any number or
// bool; nil does not count.
func hasValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(x) != ""
	case []any:
		return len(x) > 0
	case []string:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// coerceFact converts a fact to the input's declared type, or reports that
// it does not fit (a fact of the wrong shape is ignored, not passed on).
func coerceFact(spec InputSpec, v any) (any, bool) {
	switch spec.Type {
	case TypeString:
		s, ok := v.(string)
		s = strings.TrimSpace(s)
		return s, ok && s != ""
	case TypeStringArray:
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); s != "" {
				return []string{s}, true
			}
		case []any:
			out := []string{}
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, false
				}
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out, len(out) > 0
		case []string:
			return x, len(x) > 0
		}
	case TypeInteger:
		switch x := v.(type) {
		case float64:
			if x == float64(int64(x)) && x > 0 {
				return int(x), true
			}
		case int:
			return x, x > 0
		}
	case TypeObjectArray:
		x, ok := v.([]any)
		if !ok || len(x) == 0 {
			return nil, false
		}
		for _, e := range x {
			if _, ok := e.(map[string]any); !ok {
				return nil, false
			}
		}
		return x, true
	case TypeBool:
		b, ok := v.(bool)
		return b, ok
	}
	return nil, false
}

// factAutofill fills any route input still empty from context.facts.<key>
// or its alias, in sorted key order.
func (r *Resolver) factAutofill(keys []string, inputs, facts map[string]any, fills *[]Autofill) {
	for _, key := range keys {
		if hasValue(inputs[key]) {
			continue
		}
		spec := r.reg.Inputs[key]
		for _, fk := range []string{key, spec.FactAlias} {
			if fk == "" {
				continue
			}
			v, ok := coerceFact(spec, facts[fk])
			if !ok {
				continue
			}
			inputs[key] = v
			*fills = append(*fills, Autofill{InputKey: key, Source: SourceFacts,
				Reason: fmt.Sprintf("filled %s from context.facts.%s", key, fk), FactKey: fk})
			break
		}
	}
}

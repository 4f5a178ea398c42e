package orchestration

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer. Unlike the predecessor (which
// walked objects only) array indices are supported in lookup and set.
type Pointer []string

// ParsePointer parses s. The empty string is the whole document; any other
// pointer must start with "/". "~1" decodes to "/" and "~0" to "~"; any other
// "~" escape is invalid.
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with \"/\"", s)
	}
	parts := strings.Split(s[1:], "/")
	out := make(Pointer, len(parts))
	for i, p := range parts {
		for j := range len(p) {
			if p[j] == '~' && (j+1 >= len(p) || (p[j+1] != '0' && p[j+1] != '1')) {
				return nil, fmt.Errorf("JSON pointer %q has an invalid ~ escape", s)
			}
		}
		out[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return out, nil
}

// String renders the pointer back in escaped form.
func (p Pointer) String() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// arrayIndex parses an RFC 6901 array index: digits without leading zeros.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// Lookup resolves p in doc (decoded JSON). It reports false when any segment
// is missing, out of range, or walks into a scalar.
func (p Pointer) Lookup(doc any) (any, bool) {
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// ConflictError reports a pointer that crosses a value which cannot hold
// children (a scalar, or a bad array index).
type ConflictError struct {
	Pointer string
	Segment string
	Reason  string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("pointer conflict at %q in %s: %s", e.Segment, e.Pointer, e.Reason)
}

// Set writes value at p in doc and returns the (possibly new) document,
// creating missing objects; index len (or "-") appends.
func (p Pointer) Set(doc any, value any) (any, error) {
	return p.set(doc, value, 0)
}

func (p Pointer) set(cur any, value any, depth int) (any, error) {
	if depth == len(p) {
		return value, nil
	}
	tok := p[depth]
	switch c := cur.(type) {
	case map[string]any:
		next, ok := c[tok]
		if !ok && depth+1 < len(p) {
			next = map[string]any{}
		}
		nv, err := p.set(next, value, depth+1)
		if err != nil {
			return nil, err
		}
		c[tok] = nv
		return c, nil
	case []any:
		i := len(c)
		if tok != "-" {
			n, ok := arrayIndex(tok)
			if !ok {
				return nil, &ConflictError{Pointer: p.String(), Segment: tok, Reason: "not an array index"}
			}
			i = n
		}
		switch {
		case i < len(c):
			nv, err := p.set(c[i], value, depth+1)
			if err != nil {
				return nil, err
			}
			c[i] = nv
			return c, nil
		case i == len(c):
			var start any
			if depth+1 < len(p) {
				start = map[string]any{}
			}
			nv, err := p.set(start, value, depth+1)
			if err != nil {
				return nil, err
			}
			return append(c, nv), nil
		default:
			return nil, &ConflictError{Pointer: p.String(), Segment: tok, Reason: fmt.Sprintf("index %d is beyond the array length %d", i, len(c))}
		}
	case nil:
		// Only reachable for a document that is null itself.
		return nil, &ConflictError{Pointer: p.String(), Segment: tok, Reason: "parent is null"}
	default:
		return nil, &ConflictError{Pointer: p.String(), Segment: tok, Reason: fmt.Sprintf("parent is a %s, not an object or array", kindOf(cur))}
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, int, int64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

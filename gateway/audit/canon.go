package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// canonicalObject returns what json.Marshal writes for the JSON object raw
// decoded with UseNumber: keys sorted, a repeated key's last value, strings
// re-escaped as encoding/json escapes them, numbers as written. It builds
// no decoded value, which made SumArgs several times cheaper than decoding
// into maps and encoding again. It declines (false) anything it does not
// take apart plainly: a top level that is not one object with at most
// whitespace around it, invalid JSON, nesting past maxCanonicalDepth;
// SumArgs then takes the decoding path, whose answer this reproduces (a
// fuzz target compares them).
func canonicalObject(raw []byte) ([]byte, bool) {
	c := canonWriter{b: raw, out: make([]byte, 0, len(raw))}
	c.ws()
	if c.i >= len(c.b) || c.b[c.i] != '{' || !c.value(0) {
		return nil, false
	}
	c.ws()
	if c.i != len(c.b) {
		return nil, false
	}
	return c.out, true
}

// maxCanonicalDepth keeps canonicalObject's recursion well inside the
// nesting encoding/json's decoder accepts (10,000).
const maxCanonicalDepth = 1000

type canonWriter struct {
	b   []byte
	i   int
	out []byte
}

func (c *canonWriter) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value copies one value to out in canonical form.
func (c *canonWriter) value(depth int) bool {
	c.ws()
	if c.i >= len(c.b) {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		return depth < maxCanonicalDepth && c.object(depth+1)
	case ch == '[':
		return depth < maxCanonicalDepth && c.array(depth+1)
	case ch == '"':
		s, ok := c.str()
		if ok {
			c.out = appendCanonicalString(c.out, s)
		}
		return ok
	case ch == '-' || (ch >= '0' && ch <= '9'):
		start := c.i
		if !c.number() {
			return false
		}
		c.out = append(c.out, c.b[start:c.i]...)
		return true
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(c.b[c.i:], []byte(lit)) {
				c.i += len(lit)
				c.out = append(c.out, lit...)
				return true
			}
		}
		return false
	}
}

// member is one key of an object and where its canonical value sits in out.
type member struct {
	key        string
	start, end int
}

func (c *canonWriter) object(depth int) bool {
	c.i++ // '{'
	base := len(c.out)
	var members []member
	if c.empty('}') {
		c.out = append(c.out, '{', '}')
		return true
	}
	for more := true; more; {
		c.ws()
		if !c.peek('"') {
			return false
		}
		key, ok := c.str()
		if !ok {
			return false
		}
		c.ws()
		if !c.peek(':') {
			return false
		}
		c.i++
		start := len(c.out)
		if !c.value(depth) {
			return false
		}
		members = append(members, member{key: key, start: start, end: len(c.out)})
		if more, ok = c.after('}'); !ok {
			return false
		}
	}
	// The values were written in arrival order; write them again sorted,
	// the last of a repeated key only (a decoded map keeps the last).
	values := bytes.Clone(c.out[base:])
	c.out = c.out[:base]
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	c.out = append(c.out, '{')
	n := 0
	for k, m := range members {
		if k+1 < len(members) && members[k+1].key == m.key {
			continue
		}
		if n > 0 {
			c.out = append(c.out, ',')
		}
		n++
		c.out = appendCanonicalString(c.out, m.key)
		c.out = append(c.out, ':')
		c.out = append(c.out, values[m.start-base:m.end-base]...)
	}
	c.out = append(c.out, '}')
	return true
}

func (c *canonWriter) array(depth int) bool {
	c.i++ // '['
	c.out = append(c.out, '[')
	if c.empty(']') {
		c.out = append(c.out, ']')
		return true
	}
	for more, n := true, 0; more; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		if !c.value(depth) {
			return false
		}
		var ok bool
		if more, ok = c.after(']'); !ok {
			return false
		}
	}
	c.out = append(c.out, ']')
	return true
}

// empty consumes closing when it comes first, reporting whether it did.
func (c *canonWriter) empty(closing byte) bool {
	c.ws()
	if c.peek(closing) {
		c.i++
		return true
	}
	return false
}

// after reads what follows a member: a comma (more: another member comes)
// or closing (the container ends); ok is false for anything else.
func (c *canonWriter) after(closing byte) (more, ok bool) {
	c.ws()
	switch {
	case c.peek(','):
		c.i++
		return true, true
	case c.peek(closing):
		c.i++
		return false, true
	}
	return false, false
}

// str reads a string and returns its decoded value: a plain one (printable
// ASCII without escapes) as it stands, any other through encoding/json, so
// escapes, surrogates and invalid UTF-8 decode exactly as there.
func (c *canonWriter) str() (string, bool) {
	start := c.i
	c.i++ // '"'
	plain := true
	for c.i < len(c.b) {
		switch ch := c.b[c.i]; {
		case ch == '"':
			c.i++
			if plain {
				return string(c.b[start+1 : c.i-1]), true
			}
			var s string
			if json.Unmarshal(c.b[start:c.i], &s) != nil {
				return "", false
			}
			return s, true
		case ch == '\\':
			plain = false
			c.i += 2
		case ch < 0x20:
			return "", false
		default:
			if ch > 0x7e {
				plain = false
			}
			c.i++
		}
	}
	return "", false
}

// appendCanonicalString appends s as json.Marshal writes it: printable
// ASCII other than the characters it escapes as it is, anything else
// through encoding/json.
func appendCanonicalString(out []byte, s string) []byte {
	for i := range len(s) {
		switch ch := s[i]; {
		case ch < 0x20 || ch > 0x7e, ch == '"', ch == '\\', ch == '<', ch == '>', ch == '&':
			enc, err := json.Marshal(s)
			if err != nil { // strings always encode
				panic(err)
			}
			return append(out, enc...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// number reads a JSON number (the grammar encoding/json accepts).
func (c *canonWriter) number() bool {
	if c.peek('-') {
		c.i++
	}
	switch {
	case c.peek('0'):
		c.i++
	case c.digits() == 0:
		return false
	}
	if c.peek('.') {
		c.i++
		if c.digits() == 0 {
			return false
		}
	}
	if c.peek('e') || c.peek('E') {
		c.i++
		if c.peek('+') || c.peek('-') {
			c.i++
		}
		if c.digits() == 0 {
			return false
		}
	}
	return true
}

func (c *canonWriter) peek(ch byte) bool { return c.i < len(c.b) && c.b[c.i] == ch }

// digits reads a run of digits and returns its length.
func (c *canonWriter) digits() int {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	return c.i - start
}

// Package canonjson reads JSON objects that are exactly what json.Marshal
// writes for a flat struct of strings, string lists, booleans and numbers:
// the fields in struct order, an omitempty field only when set, strings
// that need no escape, numbers as encoding/json formats them. Such bytes
// decode in one pass without reflection, several times faster than
// encoding/json; anything else is declined, and the caller decodes it with
// encoding/json instead, so a reader built on this never answers
// differently, only sooner. Stored records we write ourselves (audit
// receipts, index hits) are read this way.
package canonjson

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// A Field is one struct field's encoding: its key with the colon, as
// `"name":`, whether it is omitempty, and how its value is read into T.
type Field[T any] struct {
	Key  string
	Omit bool
	Read func(*Scanner, *T) bool
}

// NewField is a Field, for tables written one field a line.
func NewField[T any](key string, omit bool, read func(*Scanner, *T) bool) Field[T] {
	return Field[T]{Key: key, Omit: omit, Read: read}
}

// Parse decodes raw into a T field by field, or declines (false) when raw
// is not exactly the canonical encoding the fields describe.
func Parse[T any](raw []byte, fields []Field[T]) (T, bool) {
	p := Scanner{b: raw}
	var v, zero T
	if !p.Lit(`{`) {
		return zero, false
	}
	for i, f := range fields {
		if !p.Key(i > 0, f.Key) {
			if f.Omit {
				continue
			}
			return zero, false
		}
		if !f.Read(&p, &v) {
			return zero, false
		}
	}
	if !p.Lit(`}`) || p.i != len(p.b) {
		return zero, false
	}
	return v, true
}

// Scanner is a position in the bytes being read.
type Scanner struct {
	b []byte
	i int
}

// Lit consumes s when the input continues with it.
func (p *Scanner) Lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// Key consumes the comma before a field (when not the first) and its key,
// or nothing when the input does not continue with both.
func (p *Scanner) Key(comma bool, key string) bool {
	at := p.i
	if (comma && !p.Lit(`,`)) || !p.Lit(key) {
		p.i = at
		return false
	}
	return true
}

// Set reads an omitempty string that is present: not empty.
func (p *Scanner) Set(v *string) bool { return p.Str(v) && *v != "" }

// List reads an omitempty list of strings that is present: at least one
// element.
func (p *Scanner) List(v *[]string) bool {
	if !p.Lit(`[`) {
		return false
	}
	for {
		var s string
		if !p.Str(&s) {
			return false
		}
		*v = append(*v, s)
		if p.Lit(`]`) {
			return true
		}
		if !p.Lit(`,`) {
			return false
		}
	}
}

// Str reads a string that json.Marshal writes without escapes: printable
// ASCII other than the quote, the backslash and the HTML characters it
// escapes (< > &), and valid UTF-8 other than U+2028 and U+2029.
func (p *Scanner) Str(v *string) bool {
	if !p.Lit(`"`) {
		return false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			*v = string(p.b[start:p.i])
			p.i++
			return true
		case c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return false
			}
			p.i += size
		}
	}
	return false
}

// Bool reads true or false.
func (p *Scanner) Bool(v *bool) bool {
	switch {
	case p.Lit(`true`):
		*v = true
	case p.Lit(`false`):
		*v = false
	default:
		return false
	}
	return true
}

// Uint reads an unsigned integer as strconv formats it: no sign, no
// leading zero.
func (p *Scanner) Uint(v *uint64) bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	tok := p.b[start:p.i]
	if len(tok) == 0 || (len(tok) > 1 && tok[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return false
	}
	*v = n
	return true
}

// Float reads a number and accepts it only when json.Marshal writes the
// float64 it denotes the same way.
func (p *Scanner) Float(v *float64) bool {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		p.i++
	}
	tok := p.b[start:p.i]
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	var buf [32]byte
	if string(AppendFloat(buf[:0], f)) != string(tok) {
		return false
	}
	*v = f
	return true
}

// AppendFloat formats f as encoding/json does: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21, with a
// one-digit negative exponent written without its leading zero.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

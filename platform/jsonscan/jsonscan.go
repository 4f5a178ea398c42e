// Package jsonscan checks raw JSON before it is decoded: how many values it
// holds (a small document of tiny values can decode large) and whether every
// string is valid Unicode, since encoding/json would silently replace bad
// text with U+FFFD.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Result describes a scanned document.
type Result struct {
	// Values approximates the number of JSON values (containers, keys and
	// scalars); it is exact enough to bound decoding cost.
	Values int
	// BadText is the offset of the first string that is not valid Unicode,
	// or -1.
	BadText int
}

// Scan reads raw once. It does not check the JSON grammar (the decoder
// does); it only counts and checks strings.
func Scan(raw []byte) Result {
	res := Result{Values: 1, BadText: -1}
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ',', ':', '[', '{':
			res.Values++
		case '"':
			end, ok := scanString(raw, i+1)
			if !ok && res.BadText < 0 {
				res.BadText = i
			}
			i = end
		}
	}
	return res
}

// scanString checks the string body starting at i and returns the index of
// its closing quote (or len(raw)) and whether its text is valid Unicode.
func scanString(raw []byte, i int) (int, bool) {
	ok := true
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			return i, ok
		case c == '\\':
			if i+1 >= len(raw) {
				return len(raw), ok
			}
			if raw[i+1] != 'u' {
				i += 2
				continue
			}
			r, n := hex4(raw, i+2)
			i += 2 + n
			if n < 4 {
				continue // malformed escape: the decoder refuses it
			}
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				// A high surrogate must be followed by \u and a low one.
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, n2 := hex4(raw, i+2)
					if n2 == 4 && r2 >= 0xDC00 && r2 <= 0xDFFF {
						i += 6
						continue
					}
				}
				ok = false
			case utf16.IsSurrogate(r):
				ok = false // a low surrogate alone
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				ok = false
			}
			i += n
		}
	}
	return len(raw), ok
}

func hex4(raw []byte, i int) (rune, int) {
	if i+4 > len(raw) {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(v), 4
}

// PathAt names the value at byte offset off in the dotted form of tool
// errors ("bundle.entries[2].title"); for error reports.
func PathAt(raw []byte, off int) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		key    string
		index  int
		// expectKey: inside an object, the next string token is a key.
		expectKey bool
	}
	var stack []frame
	path := func() string {
		var b bytes.Buffer
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	// beforeValue updates the enclosing frame for a value about to start.
	beforeValue := func() {
		if n := len(stack); n > 0 && !stack[n-1].object {
			stack[n-1].index++
		}
	}
	for {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return path()
		}
		end := int(dec.InputOffset())
		top := len(stack) - 1
		if d, isDelim := tok.(json.Delim); isDelim {
			switch d {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].expectKey = true
				} else {
					beforeValue()
				}
				if off < end && off >= start {
					return path()
				}
				stack = append(stack, frame{object: d == '{', index: -1, expectKey: d == '{'})
			case '}', ']':
				stack = stack[:top]
				if top-1 >= 0 && stack[top-1].object {
					stack[top-1].expectKey = true
				}
			}
			continue
		}
		if top >= 0 && stack[top].object && stack[top].expectKey {
			stack[top].key, _ = tok.(string)
			stack[top].expectKey = false
			if off >= start && off < end {
				return path()
			}
			continue
		}
		if top >= 0 && stack[top].object {
			stack[top].expectKey = true
		} else {
			beforeValue()
		}
		if off >= start && off < end {
			return path()
		}
	}
}

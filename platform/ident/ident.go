// Package ident checks identifiers: one byte of a first class, then up to
// Max-1 bytes of a second, both ASCII. A Rule accepts exactly what
// `^[F][R]{0,Max-1}$` (its String) accepts, checked byte by byte without
// compiling the counted repetition.
package ident

import (
	"fmt"
	"strconv"
)

// Rule is a compiled identifier shape. Its zero value accepts nothing.
type Rule struct {
	first, rest [256]bool
	max         int
	pattern     string
}

// New builds the rule of 1..max bytes, the first in class first, the rest
// in class rest. Classes are ASCII ranges and literals as inside brackets,
// '-' only last; it panics on anything else or a max below 1.
func New(first, rest string, max int) Rule {
	if max < 1 {
		panic(fmt.Sprintf("ident: max %d below 1", max))
	}
	r := Rule{max: max}
	parseClass(first, &r.first)
	parseClass(rest, &r.rest)
	r.pattern = "^[" + first + "][" + rest + "]{0," + strconv.Itoa(max-1) + "}$"
	return r
}

func parseClass(class string, set *[256]bool) {
	if class == "" {
		panic("ident: empty class")
	}
	for i := 0; i < len(class); i++ {
		c := class[i]
		if c >= 0x80 || c == '\\' || c == '[' || c == ']' || c == '^' && i == 0 {
			panic(fmt.Sprintf("ident: class %q: byte %q not supported", class, c))
		}
		if i+2 < len(class) && class[i+1] == '-' {
			hi := class[i+2]
			if hi < c || hi >= 0x80 {
				panic(fmt.Sprintf("ident: class %q: bad range %c-%c", class, c, hi))
			}
			for b := int(c); b <= int(hi); b++ {
				set[b] = true
			}
			i += 2
			continue
		}
		if c == '-' && i != len(class)-1 {
			panic(fmt.Sprintf("ident: class %q: '-' must be last", class))
		}
		set[c] = true
	}
}

// Valid reports whether s has the rule's shape.
func (r Rule) Valid(s string) bool {
	if len(s) == 0 || len(s) > r.max || !r.first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !r.rest[s[i]] {
			return false
		}
	}
	return true
}

// Max is the longest identifier the rule accepts, in bytes.
func (r Rule) Max() int { return r.max }

// String is the regular expression the rule is equivalent to, as messages
// and JSON schemas state it.
func (r Rule) String() string { return r.pattern }

// ID is the rule of cookbook, entry and source ids (decision D6): printable,
// free of path syntax and bounded in length.
var ID = New("A-Za-z0-9", "A-Za-z0-9._-", 128)

// Package redact removes secrets from text that came from elsewhere (an
// error a transport or a remote server produced).
package redact

import "strings"

// wholeWordBelow is the token length under which only whole-word
// occurrences are masked, so short tokens do not garble ordinary words.
const wholeWordBelow = 8

// Token replaces each occurrence of token in text with mask. Tokens of
// wholeWordBelow bytes or more are replaced wherever they occur; shorter
// ones only where no letter or digit touches them on either side.
func Token(text, token, mask string) string {
	if token == "" {
		return text
	}
	if len(token) >= wholeWordBelow {
		return strings.ReplaceAll(text, token, mask)
	}
	var b strings.Builder
	pos := 0
	for {
		i := strings.Index(text[pos:], token)
		if i < 0 {
			b.WriteString(text[pos:])
			return b.String()
		}
		start := pos + i
		end := start + len(token)
		b.WriteString(text[pos:start])
		if (start > 0 && alnum(text[start-1])) || (end < len(text) && alnum(text[end])) {
			b.WriteString(token)
		} else {
			b.WriteString(mask)
		}
		pos = end
	}
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

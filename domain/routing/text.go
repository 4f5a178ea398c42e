package routing

import (
	"strings"
	"unicode/utf8"
)

// text is the per-request view of the request text, computed once.
type text struct {
	raw        string // trimmed
	lower      string // lowercased raw
	normalized string // lowercased, whitespace collapsed
	words      []string
	tokens     map[string]bool // words of >= 2 chars
	padded     string          // " " + words joined + " " for phrase tests
}

func newText(s string) *text {
	t := &text{raw: strings.TrimSpace(s)}
	t.lower = strings.ToLower(t.raw)
	t.normalized = strings.Join(strings.Fields(t.lower), " ")
	t.words = splitWords(t.lower)
	t.tokens = make(map[string]bool, len(t.words))
	kept := make([]string, 0, len(t.words))
	for _, w := range t.words {
		if len(w) >= 2 {
			t.tokens[w] = true
		}
		kept = append(kept, w)
	}
	t.padded = " " + strings.Join(kept, " ") + " "
	return t
}

// splitWords lowercases s and splits it on every character outside [a-z0-9].
func splitWords(s string) []string {
	s = strings.ToLower(s)
	return strings.FieldsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
}

func (t *text) has(tok string) bool { return t.tokens[tok] }

// hasPhrase reports whether the words of phrase occur consecutively.
func (t *text) hasPhrase(phrase string) bool {
	return strings.Contains(t.padded, " "+phrase+" ")
}

// normalizeAlias lowercases, turns punctuation into spaces and collapses
// whitespace, so "Driver's-License" and "drivers license" compare by words.
func normalizeAlias(s string) string {
	return strings.Join(splitWords(strings.ReplaceAll(s, "'", "")), " ")
}

// cutBytes shortens s to at most n bytes without splitting a UTF-8 rune.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.TrimSpace(s)
}

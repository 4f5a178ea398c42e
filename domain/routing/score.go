package routing

import (
	"strings"
)

// gates are the domain words a route's domain requires at least one of.
var gates = []struct {
	domainPart string
	words      []string
}{
	{"gmail", []string{"gmail", "inbox", "email", "emails", "mail", "message", "messages", "thread", "label", "labels", "draft"}},
	{"http", []string{"http", "url", "webhook", "endpoint", "api"}},
}

// score returns the best route (first with the strictly highest score), its
// score and whether another route ties it exactly.
func (r *Resolver) score(t *text) (*RouteDef, int, bool) {
	var best *RouteDef
	top, tie := 0, false
	for i := range r.reg.Routes {
		rt := &r.reg.Routes[i]
		s := scoreRoute(rt, t)
		switch {
		case s > top:
			best, top, tie = rt, s, false
		case s == top && s > 0:
			tie = true
		}
	}
	return best, top, tie
}

func scoreRoute(rt *RouteDef, t *text) int {
	s := 0
	for _, g := range gates {
		if !strings.Contains(rt.Domain, g.domainPart) {
			continue
		}
		n := 0
		for _, w := range g.words {
			if t.has(w) {
				n++
			}
		}
		if n == 0 {
			return 0
		}
		s += n
	}
	for _, k := range rt.Keywords {
		if rt.keywordPhrases[k] {
			if t.hasPhrase(k) {
				s += 3
			}
			continue
		}
		// D10: whole words only; a regular plural still counts as the word
		// (+2) but only the exact word earns the token bonus (+1).
		switch {
		case t.has(k):
			s += 3
		case t.has(k+"s") || t.has(k+"es"):
			s += 2
		}
	}
	for _, tag := range rt.Tags {
		if t.has(tag) {
			s++
		}
	}
	for _, w := range rt.idWords {
		if t.has(w) {
			s++
		}
	}
	return s
}

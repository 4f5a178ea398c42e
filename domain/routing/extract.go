package routing

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// All patterns are compiled once at package init.
var (
	reEmail = regexp.MustCompile(`(?i)\b[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}\b`)

	// Subject patterns, in priority order: the predecessor's, plus the
	// unquoted "subject is X" / "subject: X" forms it missed.
	reSubject = []*regexp.Regexp{
		regexp.MustCompile(`(?is)\bwith\s+(?:the\s+)?subject\s+["']?(.+?)["']?\s+and\s+(?:(?:the|a)\s+)?(?:message\s+)?body\b`),
		regexp.MustCompile(`(?i)\bsubject\s*(?:line\s*)?(?:is|=|:)\s*(?:"([^"\n]+)"|'([^'\n]+)')`),
		regexp.MustCompile(`(?i)\bsubject\s+as\s+["']?([^"'\n,.;:!?]+)`),
		regexp.MustCompile(`(?i)\bsubject\s+to\s+be\s+["']?([^"'\n,.;:!?]+)`),
		regexp.MustCompile(`(?is)\bsubject\s+(.+?)\s+and\s+(?:(?:the|a)\s+)?(?:message\s+)?body\b`),
		regexp.MustCompile(`(?i)\bsubject\s+(?:"([^"\n]+)"|'([^'\n]+)')`),
		regexp.MustCompile(`(?i)\bwith\s+(?:the\s+)?subject\s+((?:[^\s"',.;:!?]+[ \t]*){1,11})`),
		regexp.MustCompile(`(?i)\bsubject\s*(?:line\s*)?(?:is|=|:)\s*([^\s"',.;:!?][^"\n,.;!?]*)`),
	}
	// Body patterns, in priority order.
	reBody = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bbody\s*(?:is|=|:)\s*(?:"([^"\n]+)"|'([^'\n]+)')`),
		regexp.MustCompile(`(?i)\bbody\s*(?:is|=|:)\s*((?:[^\s"',.;:!?]+[ \t]*){1,25})`),
		regexp.MustCompile(`(?i)\bbody\s+(?:to\s+(?:have|say|include)|says?|includes?)\s+([^\n]+)`),
		regexp.MustCompile(`(?i)\bbody\s+(?:"([^"\n]+)"|'([^'\n]+)')`),
		// A bare "body <words>" counts only right after "with/and [message]
		// body" or "message body", so "the fields in the body" adds nothing.
		regexp.MustCompile(`(?i)(?:\b(?:with|and)\s+(?:(?:the|a)\s+)?(?:message\s+)?|\bmessage\s+)body\s+((?:[^\s"',.;:!?]+[ \t]*){1,25})`),
	}
	reMessageIDSep  = regexp.MustCompile(`(?i)\bmessage[_\s-]?id\s*(?:is|=|:)\s*["']?([A-Za-z0-9_-]+)`)
	reMessageIDBare = regexp.MustCompile(`(?i)\bmessage(?:[_\s-]?id)?\s+([A-Za-z0-9_-]{8,})`)
	reThreadIDSep   = regexp.MustCompile(`(?i)\bthread[_\s-]?id\s*(?:is|=|:)\s*["']?([A-Za-z0-9_-]+)`)
	reThreadIDBare  = regexp.MustCompile(`(?i)\bthread(?:[_\s-]?id)?\s+([A-Za-z0-9_-]{8,})`)
	reLabel         = regexp.MustCompile(`(?i)\blabel\s*(?:is|=|:)\s*["']?([A-Za-z0-9_-]+)`)
	rePageLimitA    = regexp.MustCompile(`(?i)\b(?:first|top|last|latest)\s+(\d{1,3})\b`)
	rePageLimitB    = regexp.MustCompile(`(?i)\b(\d{1,3})\s+(?:emails|messages|mails)\b`)
	// Methods: upper-case words, "method X", or a verb directly before a
	// URL; plain English "get"/"post"/"put" adds nothing.
	reMethodUpper = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE)\b`)
	reMethodNamed = regexp.MustCompile(`(?i)\bmethod\s*(?:is|=|:)?\s*["']?(get|post|put|patch|delete)\b`)
	reMethodURL   = regexp.MustCompile(`(?i)\b(get|post|put|patch|delete)\s+(?:(?:a\s+)?request\s+)?(?:to\s+)?https?://`)
	reURL         = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>]+`)
	reDigit       = regexp.MustCompile(`[0-9]`)
)

// idOf is the id in s: "word id: X", else a bare "word X" with a digit in X.
func idOf(s string, sep, bare *regexp.Regexp) string {
	if v := firstGroup(sep, s); v != "" {
		return v
	}
	return idWithDigit(bare, s)
}

// url is the first http(s) URL in s, without the sentence punctuation that
// follows it.
func url(s string) string {
	u := strings.TrimRight(reURL.FindString(s), ".,;:!?)]}")
	if len(u) <= len("https://") {
		return ""
	}
	return u
}

// firstGroup returns the first non-empty capture group of the first match.
func firstGroup(re *regexp.Regexp, s string) string {
	m := re.FindStringSubmatch(s)
	for i := 1; i < len(m); i++ {
		if v := strings.TrimSpace(m[i]); v != "" {
			return v
		}
	}
	return ""
}

func firstOf(res []*regexp.Regexp, s string) string {
	for _, re := range res {
		if v := firstGroup(re, s); v != "" {
			return v
		}
	}
	return ""
}

// idWithDigit returns the first bare id candidate that contains a digit:
// "message regarding" is English, "message 18c2f3a9" is an id.
func idWithDigit(re *regexp.Regexp, s string) string {
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if reDigit.MatchString(m[1]) {
			return m[1]
		}
	}
	return ""
}

// emails returns every e-mail address in s, deduplicated case-insensitively
// keeping the first spelling, in order of appearance.
func emails(s string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, m := range reEmail.FindAllString(s, -1) {
		k := strings.ToLower(m)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, m)
	}
	return out
}

// extract pulls every recognisable input out of the request text.
func (r *Registry) extract(t *text) map[string]any {
	in := map[string]any{}
	if to := emails(t.raw); len(to) > 0 {
		in["to"] = to
	}
	if v := strings.Trim(firstOf(reSubject, t.raw), " \t\"'"); v != "" {
		in["subject"] = v
	}
	if v := strings.Trim(firstOf(reBody, t.raw), " \t\"'"); v != "" {
		in["text_plain"] = v
	}
	if v := idOf(t.raw, reMessageIDSep, reMessageIDBare); v != "" {
		in["message_id"] = v
	}
	if v := idOf(t.raw, reThreadIDSep, reThreadIDBare); v != "" {
		in["thread_id"] = v
	}
	if v := firstGroup(reLabel, t.raw); v != "" {
		in["label"] = strings.ToLower(v)
	} else if t.has("inbox") {
		in["label"] = "inbox"
	}
	for _, re := range []*regexp.Regexp{rePageLimitA, rePageLimitB} {
		if v := firstGroup(re, t.raw); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				in["page_limit"] = n
				break
			}
		}
	}
	if v := firstOf([]*regexp.Regexp{reMethodUpper, reMethodNamed, reMethodURL}, t.raw); v != "" {
		in["method"] = strings.ToUpper(v)
	}
	if u := url(t.raw); u != "" {
		in["url"] = u
	}
	if docs := r.documentTypes(t); len(docs) > 0 {
		att := make([]any, 0, len(docs))
		for _, d := range docs {
			att = append(att, map[string]any{"type_id": d})
		}
		in["document_attachments"] = att
	}
	return in
}

// negators cancel a document alias that follows them closely ("without my
// passport", "don't attach the birth certificate").
var negators = map[string]bool{"without": true, "no": true, "not": true, "dont": true, "don": true,
	"exclude": true, "excluding": true, "except": true, "never": true, "minus": true, "omit": true, "skip": true}

// clauseWords end a negation's reach: "without a subject and my passport".
var clauseWords = map[string]bool{"and": true, "but": true, "with": true, "plus": true, "also": true, "then": true}

// documentTypes maps whole-word alias phrases ("s" plural accepted) to type
// ids, longest alias first, one per type id, negated mentions skipped.
func (r *Registry) documentTypes(t *text) []string {
	words := splitWords(strings.NewReplacer("'", "", "\u2019", "").Replace(t.lower))
	used := make([]bool, len(words))
	var out []string
	seenType := map[string]bool{}
	for _, a := range r.aliases {
		n := len(a.words)
		for i := 0; i+n <= len(words); i++ {
			if !matchWords(words[i:i+n], a.words) || anyUsed(used[i:i+n]) {
				continue
			}
			for j := i; j < i+n; j++ {
				used[j] = true
			}
			if negated(words, i) || seenType[a.typeID] {
				continue
			}
			seenType[a.typeID] = true
			out = append(out, a.typeID)
		}
	}
	return out
}

func matchWords(got, want []string) bool {
	for k := range want {
		g := got[k]
		if g != want[k] && !(k == len(want)-1 && (g == want[k]+"s" || g == want[k]+"es")) {
			return false
		}
	}
	return true
}

func anyUsed(u []bool) bool {
	for _, b := range u {
		if b {
			return true
		}
	}
	return false
}

func negated(words []string, at int) bool {
	for k := at - 1; k >= 0 && k >= at-4; k-- {
		if clauseWords[words[k]] {
			return false
		}
		if negators[words[k]] {
			return true
		}
	}
	return false
}

// Weather detection (D10): "weather in boston tomorrow", "boston's weather".
type weather struct {
	requested bool
	location  string
	timeframe string
}

var timeframes = [][]string{{"this", "weekend"}, {"this", "week"}, {"next", "week"}, {"today"}, {"tomorrow"}, {"tonight"}}

// locationStops end a location: connectives, timeframes and verbs that start
// the next clause.
var locationStops = map[string]bool{"and": true, "to": true, "with": true, "that": true, "please": true, "then": true,
	"but": true, "so": true, "because": true, "about": true, "via": true, "by": true, "from": true, "using": true,
	"for": true, "in": true, "on": true, "at": true, "as": true, "is": true, "was": true, "will": true, "like": true,
	"or": true, "if": true, "when": true, "send": true, "email": true, "include": true, "tell": true, "also": true}

// possessiveStops end a city possessive when walking back from "X's weather".
var possessiveStops = map[string]bool{"the": true, "my": true, "his": true, "her": true, "their": true, "our": true,
	"your": true, "a": true, "an": true, "of": true, "and": true, "with": true, "about": true, "send": true,
	"email": true, "him": true, "them": true, "me": true, "us": true, "is": true, "what": true, "whats": true, "s": true,
	"get": true, "check": true, "include": true, "tell": true, "share": true, "give": true, "in": true, "for": true, "to": true}

type wtok struct {
	w          string
	possessive bool // followed by 's
	comma      bool // followed by ','
	brk        bool // followed by sentence punctuation
}

// weatherTokens splits lowercased text into words, remembering possessive
// and punctuation marks that matter to location boundaries.
func weatherTokens(s string) []wtok {
	s = strings.ReplaceAll(s, "\u2019", "'")
	var out []wtok
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, wtok{w: cur.String()})
			cur.Reset()
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-':
			cur.WriteRune(c)
		case c == '\'' && i+1 < len(rs) && rs[i+1] == 's' && (i+2 == len(rs) || !isAlnum(rs[i+2])):
			flush()
			if len(out) > 0 {
				out[len(out)-1].possessive = true
			}
			i++
		case c == ',':
			flush()
			if len(out) > 0 {
				out[len(out)-1].comma = true
			}
		case c == '.' || c == ';' || c == ':' || c == '!' || c == '?' || c == '\n' || c == '"' || c == '(' || c == ')':
			flush()
			if len(out) > 0 {
				out[len(out)-1].brk = true
			}
		case c == '\'':
			// Apostrophes inside words ("what's" handled above) are dropped.
		default:
			flush()
		}
	}
	flush()
	return out
}

func isAlnum(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }

// timeframeAt returns the timeframe phrase starting at i and its length.
func timeframeAt(ts []wtok, i int) (string, int) {
	for _, tf := range timeframes {
		if i+len(tf) > len(ts) {
			continue
		}
		ok := true
		for k, w := range tf {
			if ts[i+k].w != w {
				ok = false
				break
			}
		}
		if ok {
			return strings.Join(tf, " "), len(tf)
		}
	}
	return "", 0
}

// timeframeEndingAt returns a timeframe phrase that ends at index i.
func timeframeEndingAt(ts []wtok, i int) string {
	for _, tf := range timeframes {
		start := i - len(tf) + 1
		if start < 0 {
			continue
		}
		if p, _ := timeframeAt(ts, start); p == strings.Join(tf, " ") {
			return p
		}
	}
	return ""
}

// detectWeather finds the word "weather" with a timeframe around it (else
// today) and a location: a possessive before it or "in/for/at X" after it.
func detectWeather(lower string) weather {
	ts := weatherTokens(lower)
	at := slices.IndexFunc(ts, func(tk wtok) bool { return tk.w == "weather" })
	if at < 0 {
		return weather{}
	}
	wx := weather{requested: true}
	leading, location := leadingWeather(ts, at)
	wx.location = location
	i := at + 1
	if i < len(ts) && !ts[at].brk && ts[i].w == "forecast" {
		i++
	}
	// "weather tomorrow in boston"
	var trailing string
	if i < len(ts) && !ts[i-1].brk {
		if tf, n := timeframeAt(ts, i); n > 0 {
			trailing = tf
			i += n
		}
	}
	if loc, tf, ok := locationAfter(ts, i); ok {
		wx.location = loc
		if tf != "" && trailing == "" {
			trailing = tf
		}
	}
	wx.location = cutBytes(wx.location, 60)
	switch {
	case leading != "":
		wx.timeframe = leading
	case trailing != "":
		wx.timeframe = trailing
	default:
		wx.timeframe = "today"
	}
	return wx
}

// leadingWeather reads a timeframe ("tomorrow's weather") or a city
// possessive ("boston's weather") before index at.
func leadingWeather(ts []wtok, at int) (timeframe, location string) {
	if at == 0 || ts[at-1].brk {
		return "", ""
	}
	if tf := timeframeEndingAt(ts, at-1); tf != "" {
		return tf, ""
	}
	if !ts[at-1].possessive {
		return "", ""
	}
	var loc []string
	for k := at - 1; k >= 0 && k >= at-3; k-- {
		if possessiveStops[ts[k].w] || (k < at-1 && (ts[k].brk || ts[k].comma || ts[k].possessive)) {
			break
		}
		if tf := timeframeEndingAt(ts, k); tf != "" {
			break
		}
		loc = append([]string{ts[k].w}, loc...)
	}
	return "", strings.Join(loc, " ")
}

// locationAfter reads "in/for/at <place>" from index i (up to six words) and
// a timeframe directly after the place.
func locationAfter(ts []wtok, i int) (location, timeframe string, ok bool) {
	if i >= len(ts) || ts[i-1].brk || (ts[i].w != "in" && ts[i].w != "for" && ts[i].w != "at") {
		return "", "", false
	}
	var loc []string
	j := i + 1
	for ; j < len(ts) && len(loc) < 6; j++ {
		if locationStops[ts[j].w] {
			break
		}
		if tf, _ := timeframeAt(ts, j); tf != "" {
			break
		}
		w := ts[j].w
		if ts[j].comma && j+1 < len(ts) {
			w += ","
		}
		loc = append(loc, w)
		if ts[j].brk || ts[j].possessive {
			j++
			break
		}
	}
	if len(loc) == 0 {
		return "", "", false
	}
	if tf, _ := timeframeAt(ts, j); tf != "" && !ts[j-1].brk {
		timeframe = tf
	}
	return strings.TrimRight(strings.Join(loc, " "), ", "), timeframe, true
}

package routing

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
)

// Request is one resolve call.
type Request struct {
	Text string
	// Facts are context.facts from the agent's normal loop.
	Facts map[string]any
	// AllowSearch enables the catalog search fallback.
	AllowSearch bool
}

// Resolver resolves requests against a registry and, optionally, a catalog
// searcher. It is immutable and safe for concurrent use.
type Resolver struct {
	reg    *Registry
	search Searcher
}

// New builds a resolver; search may be nil (no fallback).
func New(reg *Registry, search Searcher) *Resolver {
	return &Resolver{reg: reg, search: search}
}

// Registry returns the resolver's registry.
func (r *Resolver) Registry() *Registry { return r.reg }

// MaxRequestBytes bounds the request text: a request is a sentence or two,
// and extraction cost grows with the text.
const MaxRequestBytes = 16 << 10

const (
	reasonEmpty       = "request_text is empty"
	hintEmpty         = "Provide a natural-language Vault request after /vault."
	reasonNoMatch     = "request did not match deterministic Vault routing rules"
	hintNoMatch       = "Use /vault for explicit Vault actions or run the request without /vault for normal agent routing."
	reasonAmbiguous   = "multiple deterministic routes matched with similar confidence"
	hintAmbiguous     = "Rephrase with explicit action (send, draft, reply, list, trash, untrash) or use strict route wording."
	minRegistryScore  = 4
	autofillReasonFmt = "autofilled %d missing inputs from deterministic enrichment"
)

// Resolve maps the request to a route. It never panics and its output
// depends only on its input (and the searcher's answers).
func (r *Resolver) Resolve(ctx context.Context, req Request) Result {
	t := newText(req.Text)
	if t.raw == "" {
		res := newResult()
		res.Status, res.Confidence = StatusNotEligible, ConfidenceLow
		res.Reasons = []string{reasonEmpty}
		res.FallbackHint = hintEmpty
		return res
	}
	if len(t.raw) > MaxRequestBytes {
		res := newResult()
		res.Status, res.Confidence = StatusNotEligible, ConfidenceLow
		res.Reasons = []string{fmt.Sprintf("request_text is longer than %d bytes", MaxRequestBytes)}
		res.FallbackHint = "Shorten the request to the action, recipients and the few details it needs."
		return res
	}
	facts := req.Facts
	if facts == nil {
		facts = map[string]any{}
	}
	inputs := r.reg.extract(t)
	if res, ok := r.passportIntent(t, inputs, facts); ok {
		return res
	}
	best, top, tie := r.score(t)
	if top >= minRegistryScore {
		if tie {
			res := newResult()
			res.Status, res.Confidence, res.Score = StatusAmbiguous, confidenceFor(top), top
			res.Inputs = inputs
			res.NeedsClarification = true
			res.Reasons = []string{reasonAmbiguous}
			res.FallbackHint = hintAmbiguous
			return res
		}
		return r.resolveRoute(t, best, top, inputs, facts)
	}
	var searchErr error
	if req.AllowSearch && r.search != nil {
		res, err := r.searchFallback(ctx, t, facts)
		if err == nil && res.Status != StatusNotEligible {
			return res
		}
		searchErr = err
	}
	res := newResult()
	res.Status, res.Confidence = StatusNotEligible, ConfidenceLow
	res.Inputs = inputs
	res.Reasons = []string{reasonNoMatch}
	if searchErr != nil {
		// D10: a failing fallback is reported, never swallowed.
		res.Reasons = append(res.Reasons, "search fallback failed: "+searchErr.Error())
	}
	res.FallbackHint = hintNoMatch
	return res
}

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

var semanticMarkers = []string{"weather", "recipe", "how to", "instructions", "instruction", "summarize", "summary",
	"explain", "answer", "steps", "step by step"}

var (
	reTopic  = regexp.MustCompile(`(?i)\b(?:about|regarding|re)\s+["']?((?:[^\s"',.;:!?]+[ \t]*){1,11})`)
	reSaying = regexp.MustCompile(`(?i)\b(?:saying|that\s+says|to\s+say|telling\s+(?:him|her|them)(?:\s+that)?)\s+["']?([^"\n]+)`)
)

// topicTail words never end a topic: "about the invoice to bob@x.com" is
// about "the invoice".
var topicTail = map[string]bool{"to": true, "for": true, "and": true, "with": true, "at": true, "on": true, "in": true,
	"by": true, "from": true, "of": true, "cc": true, "via": true}

// topicPhrase is the subject implied by "about/regarding/re <topic>": up to
// 11 words, stopping at a clause break or an e-mail address, cut to 70
// bytes.
func topicPhrase(raw string) string {
	words := strings.Fields(firstGroup(reTopic, raw))
	for i, w := range words {
		if strings.Contains(w, "@") {
			words = words[:i]
			break
		}
	}
	for len(words) > 0 && topicTail[strings.ToLower(words[len(words)-1])] {
		words = words[:len(words)-1]
	}
	return cutBytes(strings.Trim(strings.Join(words, " "), " .,:;!?\"'"), 70)
}

func (t *text) semanticBody() bool {
	for _, m := range semanticMarkers {
		if t.hasPhrase(m) {
			return true
		}
	}
	return false
}

// composeState is the compose-route analysis shared by autofill and
// guidance.
type composeState struct {
	wx               weather
	summary          string
	bodyNeedsExt     bool
	subjectNeedsExt  bool
	semanticBodyOnly bool
}

func factString(facts map[string]any, key string) string {
	s, _ := facts[key].(string)
	return strings.TrimSpace(s)
}

func weatherSummary(facts map[string]any) string {
	if s := factString(facts, "weather_summary"); s != "" {
		return s
	}
	if w, ok := facts["weather"].(map[string]any); ok {
		return factString(w, "summary")
	}
	return ""
}

func (r *Resolver) analyzeCompose(t *text, inputs, facts map[string]any) composeState {
	cs := composeState{wx: detectWeather(t.lower), summary: weatherSummary(facts)}
	noBody := !hasValue(inputs["text_plain"])
	cs.semanticBodyOnly = noBody && t.semanticBody()
	cs.bodyNeedsExt = noBody && ((cs.wx.requested && cs.summary == "") || t.semanticBody())
	cs.subjectNeedsExt = !hasValue(inputs["subject"]) && cs.bodyNeedsExt &&
		(hasValue(inputs["document_attachments"]) || strings.Contains(t.normalized, "subject as ") ||
			strings.Contains(t.normalized, "subject to be ") || strings.Contains(t.normalized, "subject line"))
	return cs
}

func displayName(typeID string) string {
	seg := typeID
	if i := strings.LastIndex(seg, "."); i >= 0 {
		seg = seg[i+1:]
	}
	words := strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(seg))
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

func firstAttachmentType(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	m, _ := list[0].(map[string]any)
	s, _ := m["type_id"].(string)
	return s
}

// composeAutofill fills subject and body for e-mail composing routes.
func (r *Resolver) composeAutofill(t *text, cs composeState, inputs, facts map[string]any, fills *[]Autofill) {
	set := func(key, val, source, reason, fact string) {
		if strings.TrimSpace(val) == "" || hasValue(inputs[key]) {
			return
		}
		inputs[key] = val
		*fills = append(*fills, Autofill{InputKey: key, Source: source, Reason: reason, FactKey: fact})
	}
	attType := firstAttachmentType(inputs["document_attachments"])
	if !hasValue(inputs["subject"]) {
		switch {
		case factString(facts, "email_subject") != "":
			set("subject", factString(facts, "email_subject"), SourceFacts, "composed subject from normal-loop facts", "email_subject")
		case topicPhrase(t.raw) != "":
			set("subject", topicPhrase(t.raw), SourceHeuristic, "inferred subject from natural-language topic phrase", "")
		case hasValue(inputs["document_attachments"]) && !cs.subjectNeedsExt:
			name := "Requested document"
			if d := displayName(attType); d != "" {
				name = d
			}
			set("subject", "Document: "+name, SourceAttachment, "filled subject from attachment intent", "")
		case cs.wx.requested:
			subj := "Weather update"
			if cs.wx.location != "" {
				subj += " for " + cs.wx.location
			}
			if cs.wx.timeframe == "tomorrow" {
				subj += " (tomorrow)"
			}
			set("subject", subj, SourceHeuristic, "inferred weather-focused subject", "")
		}
	}
	if hasValue(inputs["text_plain"]) {
		return
	}
	if b := factString(facts, "email_body"); b != "" {
		set("text_plain", b, SourceFacts, "composed body from normal-loop facts", "email_body")
		return
	}
	if cs.summary != "" && cs.wx.requested {
		body := cs.summary
		if cs.wx.location != "" {
			body = fmt.Sprintf("Weather for %s (%s): %s", cs.wx.location, cs.wx.timeframe, cs.summary)
		}
		set("text_plain", body, SourceFacts, "composed body from normal-loop facts", "weather_summary")
		return
	}
	if cs.bodyNeedsExt {
		return
	}
	if s := firstGroup(reSaying, t.raw); s != "" {
		set("text_plain", cutBytes(strings.TrimSpace(s), 220), SourceHeuristic, "inferred body from request phrasing", "")
		return
	}
	if hasValue(inputs["document_attachments"]) {
		// The attachment default wins over "Following up regarding
		// Document: …" (spec §10 Resolver 3).
		body := "Attached is the requested document."
		if d := displayName(attType); d != "" {
			body = "Attached is my " + strings.ToLower(d) + "."
		}
		set("text_plain", body, SourceAttachment, "filled body from attachment intent", "")
		return
	}
	if s, _ := inputs["subject"].(string); s != "" {
		set("text_plain", "Following up regarding "+s+".", SourceHeuristic, "inferred body from request phrasing", "")
	}
}

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

func (r *Resolver) resolveRoute(t *text, rt *RouteDef, score int, extracted, facts map[string]any) Result {
	res := newResult()
	keys := append(append([]string{}, rt.RequiredInputs...), rt.OptionalInputs...)
	sort.Strings(keys)
	// Only the route's own inputs are returned: "method" from an English
	// "get" is no input of a Gmail template.
	for _, k := range keys {
		if v, ok := extracted[k]; ok {
			res.Inputs[k] = v
		}
	}
	var cs composeState
	if rt.Compose {
		cs = r.analyzeCompose(t, res.Inputs, facts)
		r.composeAutofill(t, cs, res.Inputs, facts, &res.AutofilledInputs)
	}
	r.factAutofill(keys, res.Inputs, facts, &res.AutofilledInputs)
	for _, k := range rt.RequiredInputs {
		if !hasValue(res.Inputs[k]) {
			res.MissingInputs = append(res.MissingInputs, k)
		}
	}
	routeName := rt.RouteID
	for _, k := range res.MissingInputs {
		res.MissingInputGuidance = append(res.MissingInputGuidance, r.guidance(t, rt, routeName, k, cs))
	}
	res.ProgressHint = progressHint(res.MissingInputGuidance)
	res.NeedsClarification = anyAsk(res.MissingInputGuidance)
	res.Status = StatusExecutable
	if len(res.MissingInputs) > 0 {
		res.Status = StatusMissingInputs
	}
	res.Confidence, res.Score = confidenceFor(score), score
	res.Domain = rt.Domain
	res.Route = RouteRef{RouteID: rt.RouteID, CookbookID: rt.CookbookID, Version: rt.Version, EntryID: rt.EntryID, EntryType: rt.EntryType, Source: "registry"}
	res.Execution = Execution{Strategy: rt.Strategy, Tool: toolFor(rt.Strategy), ConnectorID: rt.ConnectorID, Verb: rt.Verb}
	if len(rt.Orchestration) > 0 {
		res.Execution.Orchestration = maps.Clone(rt.Orchestration)
	}
	res.Reasons = []string{fmt.Sprintf("matched route %s via deterministic keyword scoring", rt.RouteID)}
	if n := len(res.AutofilledInputs); n > 0 {
		res.Reasons = append(res.Reasons, fmt.Sprintf(autofillReasonFmt, n))
	}
	return res
}

func (r *Resolver) question(key string) string {
	if q := r.reg.Inputs[key].Question; q != "" {
		return q
	}
	return "Please provide " + key + "."
}

func (r *Resolver) guidance(t *text, rt *RouteDef, routeName, key string, cs composeState) Guidance {
	var pol *Policy
	for i := range rt.EnrichmentPolicies {
		p := &rt.EnrichmentPolicies[i]
		if p.InputKey != key {
			continue
		}
		match := false
		switch p.Condition {
		case "":
			match = true
		case condWeather:
			match = cs.wx.requested && cs.summary == ""
		case condSemBody:
			match = cs.semanticBodyOnly
		case condSemSubject:
			match = cs.subjectNeedsExt
		}
		if match {
			pol = p
			break
		}
	}
	g := Guidance{InputKey: key, RequiredForRoute: routeName, ResolutionMode: ModeAskUser, Question: r.question(key)}
	if pol == nil || pol.Sensitive || pol.ResolutionMode != ModeAutoRetry {
		return g
	}
	factKey := pol.FactKey
	if factKey == "" {
		factKey = key
	}
	batch := pol.BatchGroup
	if batch == "" {
		batch = strings.ReplaceAll(strings.ToLower(rt.RouteID), ".", "_") + "_enrichment"
	}
	instr := pol.Instructions
	if instr == "" {
		instr = fmt.Sprintf("Resolve %s and retry vaultclaw_route_resolve with context.facts.%s.", key, factKey)
	}
	g.ResolutionMode = ModeAutoRetry
	g.Question = fmt.Sprintf("Resolve %s and retry route resolve with context.facts.%s.", key, factKey)
	fr := &FactRequest{InputKey: key, FactKey: factKey, FactKind: pol.FactKind, Kind: pol.FactKind,
		Parallelizable: pol.IsParallelizable(), BatchGroup: batch, RequestText: t.raw, Instructions: instr}
	if pol.FactKind == "weather_forecast" && cs.wx.requested {
		fr.Location, fr.Timeframe = cs.wx.location, cs.wx.timeframe
		if fr.Timeframe == "" {
			fr.Timeframe = "today"
		}
	}
	g.ExternalFactRequest = fr
	return g
}

func anyAsk(gs []Guidance) bool {
	for _, g := range gs {
		if g.ResolutionMode == ModeAskUser {
			return true
		}
	}
	return false
}

func progressHint(gs []Guidance) *ProgressHint {
	if len(gs) == 0 {
		return nil
	}
	auto, ask, par := 0, 0, true
	keys, groups := map[string]bool{}, map[string]bool{}
	for _, g := range gs {
		if g.ResolutionMode == ModeAskUser {
			ask++
			continue
		}
		auto++
		fr := g.ExternalFactRequest
		par = par && fr.Parallelizable
		keys[fr.FactKey] = true
		groups[fr.BatchGroup] = true
	}
	if auto == 0 {
		return &ProgressHint{Mode: ProgressAskUser, NextAction: NextAskUser, Message: "Missing inputs require user clarification."}
	}
	h := &ProgressHint{RetryRecommended: true, Parallelizable: par, FactKeys: sortedKeys(keys), BatchGroups: sortedKeys(groups)}
	if ask == 0 {
		h.Mode, h.NextAction = ProgressAutoEnrich, NextRunFactsRetry
		h.Message = "Missing inputs can be auto-filled with normal-loop facts. Fetch facts and retry route resolve."
	} else {
		h.Mode, h.NextAction = ProgressPartialEnrich, NextRunFactsThenAsk
		h.Message = "Some missing inputs can be auto-filled with normal-loop facts; remaining fields require user input."
	}
	return h
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

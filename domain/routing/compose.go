package routing

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

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
// 11 words before a clause break or address, cut to 70 bytes.
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
	return slices.ContainsFunc(semanticMarkers, t.hasPhrase)
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
		// Document: …", which the predecessor sent instead.
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

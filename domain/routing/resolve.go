package routing

import (
	"context"
	"fmt"
	"maps"
	"sort"
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

// resolveRoute answers for a matched route: its inputs after autofill, what
// is missing and how to get it, and how to execute.
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

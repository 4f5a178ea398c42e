package routing

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// question is what to ask the user for key.
func (r *Resolver) question(key string) string {
	if q := r.reg.Inputs[key].Question; q != "" {
		return q
	}
	return "Please provide " + key + "."
}

// guidance says how to obtain one missing input: ask the user, or fetch a
// fact when a non-sensitive enrichment policy matches.
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

// anyAsk reports whether some input needs the user.
func anyAsk(gs []Guidance) bool {
	for _, g := range gs {
		if g.ResolutionMode == ModeAskUser {
			return true
		}
	}
	return false
}

// progressHint summarises the guidance into the next step for the agent.
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
		if fr.FactKey != "" {
			keys[fr.FactKey] = true
		}
		if fr.BatchGroup != "" {
			groups[fr.BatchGroup] = true
		}
	}
	if auto == 0 {
		return &ProgressHint{Mode: ProgressAskUser, NextAction: NextAskUser, Message: "Missing inputs require user clarification."}
	}
	h := &ProgressHint{RetryRecommended: true, Parallelizable: par, FactKeys: slices.Sorted(maps.Keys(keys)), BatchGroups: slices.Sorted(maps.Keys(groups))}
	if ask == 0 {
		h.Mode, h.NextAction = ProgressAutoEnrich, NextRunFactsRetry
		h.Message = "Missing inputs can be auto-filled with normal-loop facts. Fetch facts and retry route resolve."
	} else {
		h.Mode, h.NextAction = ProgressPartialEnrich, NextRunFactsThenAsk
		h.Message = "Some missing inputs can be auto-filled with normal-loop facts; remaining fields require user input."
	}
	return h
}

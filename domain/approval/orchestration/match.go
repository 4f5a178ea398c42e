package orchestration

import (
	"slices"
	"sort"
	"strings"
)

// Match is the scoring of one profile against the requirements (see Score).
// Empty lists are nil so they serialise as null, as the predecessor's do.
type Match struct {
	ProfileID string   `json:"profile_id"`
	Score     int      `json:"score"`
	Satisfied []string `json:"satisfied_requirements"`
	Missing   []string `json:"missing_requirements"`
}

// Qualifies reports whether nothing is missing.
func (m Match) Qualifies() bool { return len(m.Missing) == 0 }

// AsMap is the match as generic JSON.
func (m Match) AsMap() map[string]any {
	out := map[string]any{"profile_id": m.ProfileID, "score": m.Score, "satisfied_requirements": nil, "missing_requirements": nil}
	if m.Satisfied != nil {
		out["satisfied_requirements"] = toAny(m.Satisfied)
	}
	if m.Missing != nil {
		out["missing_requirements"] = toAny(m.Missing)
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// allows reports whether list is unrestricted (empty) or contains v, ignoring
// case and surrounding space.
func allows(list []string, v string) bool {
	return len(list) == 0 || slices.ContainsFunc(list, foldEqual(v))
}

// foldEqual matches strings equal to v, ignoring case and surrounding space.
func foldEqual(v string) func(string) bool {
	v = strings.TrimSpace(v)
	return func(x string) bool { return strings.EqualFold(strings.TrimSpace(x), v) }
}

func overlapFold(a, b []string) bool {
	return slices.ContainsFunc(a, func(x string) bool { return slices.ContainsFunc(b, foldEqual(x)) })
}

// Score matches p against reqs. Checks run in the order intent, types, mode,
// target and only the first failure of a requirement is reported.
func Score(p Profile, reqs []Requirement) Match { return score(p, reqs, requirementKeys(reqs)) }

func requirementKeys(reqs []Requirement) []string {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key()
	}
	return keys
}

// findSlot returns the first slot named name (profiles have few slots, so a
// scan beats building a map per profile).
func findSlot(p Profile, name string) (ProfileSlot, bool) {
	for _, s := range p.Slots {
		if s.Slot == name {
			return s, true
		}
	}
	return ProfileSlot{}, false
}

func score(p Profile, reqs []Requirement, keys []string) Match {
	m := Match{ProfileID: p.ProfileID}
	for i, r := range reqs {
		key := keys[i]
		s, ok := findSlot(p, r.Slot)
		if !ok {
			m.Missing = append(m.Missing, key+":slot_missing")
			continue
		}
		local := 1
		if r.Intent != "" {
			if !allows(s.AllowedIntents, r.Intent) {
				m.Missing = append(m.Missing, key+":intent")
				continue
			}
			local++
		}
		if len(r.ExpectedSecretTypes) > 0 && len(s.ExpectedSecretTypes) > 0 {
			if !overlapFold(r.ExpectedSecretTypes, s.ExpectedSecretTypes) {
				m.Missing = append(m.Missing, key+":expected_secret_types")
				continue
			}
			local++
		}
		if !allows(s.AllowedModes, r.Mode) {
			m.Missing = append(m.Missing, key+":mode")
			continue
		}
		local++
		if !allows(s.AllowedTargets, r.Target) {
			m.Missing = append(m.Missing, key+":target")
			continue
		}
		local++
		m.Score += local
		m.Satisfied = append(m.Satisfied, key)
	}
	sort.Strings(m.Satisfied)
	sort.Strings(m.Missing)
	return m
}

// Best returns the index of the qualifying profile with the highest score
// (ties to the smallest profile_id), or -1; matches follow profiles' order.
func Best(profiles []Profile, reqs []Requirement) (best int, matches []Match) {
	best = -1
	matches = make([]Match, len(profiles))
	keys := requirementKeys(reqs)
	for i, p := range profiles {
		matches[i] = score(p, reqs, keys)
		if !matches[i].Qualifies() {
			continue
		}
		if best < 0 || matches[i].Score > matches[best].Score ||
			(matches[i].Score == matches[best].Score && p.ProfileID < profiles[best].ProfileID) {
			best = i
		}
	}
	return best, matches
}

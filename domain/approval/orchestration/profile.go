package orchestration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ProfileSlot is one slot of an unbounded profile. Field order
// is the wire order of the auto-create upsert body.
type ProfileSlot struct {
	Slot                string   `json:"slot"`
	Required            bool     `json:"required,omitempty"`
	AllowedIntents      []string `json:"allowed_intents,omitempty"`
	ExpectedSecretTypes []string `json:"expected_secret_types,omitempty"`
	AllowedModes        []string `json:"allowed_modes"`
	AllowedTargets      []string `json:"allowed_targets"`
}

// Profile is a connector.unbounded.profile.v1 document.
type Profile struct {
	Type        string        `json:"type"`
	ProfileID   string        `json:"profile_id"`
	ConnectorID string        `json:"connector_id"`
	Verb        string        `json:"verb"`
	Slots       []ProfileSlot `json:"slots"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// DecodeProfile normalises a profile as Vault returned it (trimmed, sorted,
// deduped); non-object slots are skipped.
func DecodeProfile(v any) Profile {
	m, _ := v.(map[string]any)
	p := Profile{
		Type:        str(m["type"]),
		ProfileID:   str(m["profile_id"]),
		ConnectorID: str(m["connector_id"]),
		Verb:        str(m["verb"]),
		Slots:       []ProfileSlot{},
	}
	slots, _ := m["slots"].([]any)
	for _, s := range slots {
		sm, ok := s.(map[string]any)
		if !ok {
			continue
		}
		req, _ := sm["required"].(bool)
		p.Slots = append(p.Slots, ProfileSlot{
			Slot:                str(sm["slot"]),
			Required:            req,
			AllowedIntents:      cleanList(sm["allowed_intents"]),
			ExpectedSecretTypes: cleanList(sm["expected_secret_types"]),
			AllowedModes:        nonNil(cleanList(sm["allowed_modes"])),
			AllowedTargets:      nonNil(cleanList(sm["allowed_targets"])),
		})
	}
	sort.SliceStable(p.Slots, func(i, j int) bool { return p.Slots[i].Slot < p.Slots[j].Slot })
	return p
}

// AsMap is the profile as generic JSON (for tool output).
func (p Profile) AsMap() map[string]any {
	raw, _ := json.Marshal(p)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// Hash12 is the first 12 hex characters of the SHA-256 of the canonical
// requirements JSON (with encoding/json's HTML escaping).
func Hash12(reqs []Requirement) string {
	if reqs == nil {
		reqs = []Requirement{}
	}
	raw, _ := json.Marshal(reqs)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:12]
}

// AutoProfileID is "mcp.auto.<hash12>".
func AutoProfileID(reqs []Requirement) string { return "mcp.auto." + Hash12(reqs) }

// AutoIdempotencyKey is the stable key of the auto-create upsert.
func AutoIdempotencyKey(reqs []Requirement) string { return "mcp-unbounded-profile-" + Hash12(reqs) }

func union(dst map[string]bool, vals ...string) {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			dst[v] = true
		}
	}
}

// MinimalProfile is the profile auto-create upserts: one slot per distinct
// slot name with the union of what the requirements ask for.
func MinimalProfile(reqs []Requirement) Profile {
	type acc struct {
		required                       bool
		intents, types, modes, targets map[string]bool
	}
	bySlot := map[string]*acc{}
	var names []string
	for _, r := range reqs {
		a, ok := bySlot[r.Slot]
		if !ok {
			a = &acc{required: r.Required, intents: map[string]bool{}, types: map[string]bool{}, modes: map[string]bool{}, targets: map[string]bool{}}
			bySlot[r.Slot] = a
			names = append(names, r.Slot)
		}
		union(a.intents, r.Intent)
		union(a.types, r.ExpectedSecretTypes...)
		union(a.modes, r.Mode)
		union(a.targets, r.Target)
	}
	sort.Strings(names)
	p := Profile{Type: ProfileType, ProfileID: AutoProfileID(reqs), ConnectorID: GenericConnector, Verb: GenericVerb, Slots: []ProfileSlot{}}
	for _, n := range names {
		a := bySlot[n]
		p.Slots = append(p.Slots, ProfileSlot{
			Slot:                n,
			Required:            a.required,
			AllowedIntents:      slices.Sorted(maps.Keys(a.intents)),
			ExpectedSecretTypes: slices.Sorted(maps.Keys(a.types)),
			AllowedModes:        nonNil(slices.Sorted(maps.Keys(a.modes))),
			AllowedTargets:      nonNil(slices.Sorted(maps.Keys(a.targets))),
		})
	}
	return p
}

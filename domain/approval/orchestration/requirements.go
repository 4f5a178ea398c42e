// Package orchestration implements unbounded-profile orchestration for
// generic.http requests: requirement derivation, deterministic matching,
// auto-create and plan preflight, over decoded JSON and a small interface.
package orchestration

import (
	"fmt"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// The only connector/verb pair that is orchestrated.
const (
	GenericConnector = "generic.http"
	GenericVerb      = "generic.http.request.v1"
	ProfileType      = "connector.unbounded.profile.v1"
)

// IsGeneric reports whether connector/verb is the orchestrated pair (trimmed,
// case-sensitive, as the predecessor compares them).
func IsGeneric(connectorID, verb string) bool {
	return strings.TrimSpace(connectorID) == GenericConnector && strings.TrimSpace(verb) == GenericVerb
}

// Requirement is one secret attachment the profile must allow; its JSON form
// is the canonical hash input of auto-create, so keep the field order.
type Requirement struct {
	Slot                string   `json:"slot"`
	Intent              string   `json:"intent,omitempty"`
	ExpectedSecretTypes []string `json:"expected_secret_types,omitempty"`
	Mode                string   `json:"mode"`
	Target              string   `json:"target"`
	Required            bool     `json:"required"`
}

// Key is "<slot>:<mode>:<target>", the name used in match reports.
func (r Requirement) Key() string { return r.Slot + ":" + r.Mode + ":" + r.Target }

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// cleanList trims, drops blanks and non-strings, dedupes and sorts (byte
// order). It returns nil for an empty result.
func cleanList(v any) []string {
	arr, _ := v.([]any)
	strs := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			strs = append(strs, s)
		}
	}
	return cleanStrings(strs)
}

// cleanStrings trims, drops blanks, dedupes and sorts (byte order). It
// returns nil for an empty result.
func cleanStrings(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range in {
		s := strings.TrimSpace(x)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func parseRequirement(m map[string]any) Requirement {
	return normalizeRequirement(Requirement{
		Slot:                str(m["slot"]),
		Intent:              str(m["intent"]),
		ExpectedSecretTypes: cleanList(m["expected_secret_types"]),
		Mode:                str(m["mode"]),
		Target:              str(m["target"]),
	})
}

// normalizeRequirement trims r. A caller's required:false is discarded:
// every requirement is required, and the auto-create hash depends on it.
func normalizeRequirement(r Requirement) Requirement {
	return Requirement{
		Slot:                strings.TrimSpace(r.Slot),
		Intent:              strings.TrimSpace(r.Intent),
		ExpectedSecretTypes: cleanStrings(r.ExpectedSecretTypes),
		Mode:                strings.TrimSpace(r.Mode),
		Target:              strings.TrimSpace(r.Target),
		Required:            true,
	}
}

func sortRequirements(reqs []Requirement) {
	sort.SliceStable(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.Slot != b.Slot {
			return a.Slot < b.Slot
		}
		if a.Mode != b.Mode {
			return a.Mode < b.Mode
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Intent < b.Intent
	})
}

// DeriveRequirements reads payload.secret_attachments (not deduplicated);
// field names payload in validation errors. A missing or empty list yields
// none.
func DeriveRequirements(payload map[string]any, field string) ([]Requirement, error) {
	arr, ok := payload["secret_attachments"].([]any)
	if !ok || len(arr) == 0 {
		return nil, nil
	}
	base := joinField(field, "secret_attachments")
	out := make([]Requirement, 0, len(arr))
	for i, item := range arr {
		m, ok := item.(map[string]any)
		where := fmt.Sprintf("%s[%d]", base, i)
		if !ok {
			return nil, apperr.Validation(where, "secret_attachments[%d] must be object", i)
		}
		r := parseRequirement(m)
		if r.Slot == "" || r.Mode == "" || r.Target == "" {
			missing := []string{}
			for _, f := range []struct{ n, v string }{{"slot", r.Slot}, {"mode", r.Mode}, {"target", r.Target}} {
				if f.v == "" {
					missing = append(missing, f.n)
				}
			}
			return nil, apperr.Validation(where+"."+missing[0], "secret_attachments[%d] requires slot/mode/target", i).
				With("missing", missing)
		}
		out = append(out, r)
	}
	sortRequirements(out)
	return out, nil
}

// NormalizeRequirements cleans explicit requirements: the list must not be
// empty; entries missing slot, mode or target are dropped.
func NormalizeRequirements(in []Requirement, field string) ([]Requirement, error) {
	if len(in) == 0 {
		return nil, apperr.Validation(field, "%s must be a non-empty array", field)
	}
	out := make([]Requirement, 0, len(in))
	for _, r := range in {
		r = normalizeRequirement(r)
		if r.Slot == "" || r.Mode == "" || r.Target == "" {
			continue
		}
		out = append(out, r)
	}
	sortRequirements(out)
	return out, nil
}

func joinField(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

// Package routing resolves a natural-language Vault request to a cookbook
// route, extracts its inputs and says how to obtain missing ones.
package routing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// RegistryType is the only registry document type accepted.
const RegistryType = "vaultclaw.routing.registry.v1"

// Strategies a route may declare. TOOL_INVOKE is reserved for intents built
// into the resolver (the passport workflow) and rejected in the file.
const (
	StrategyTemplate     = "TEMPLATE"
	StrategyRecipe       = "RECIPE"
	StrategyConnectorJob = "CONNECTOR_EXECUTE_JOB"
	StrategyPlanExecute  = "PLAN_EXECUTE"
	StrategyToolInvoke   = "TOOL_INVOKE"
)

// Resolution modes of guidance items and enrichment policies.
const (
	ModeAskUser    = "ASK_USER"
	ModeAutoRetry  = "AUTO_RETRY_WITH_FACTS"
	condWeather    = "weather_requested"
	condSemBody    = "semantic_body_request"
	condSemSubject = "semantic_subject_request"
)

// Input value types declared by the registry; fact autofill checks them.
const (
	TypeString      = "string"
	TypeStringArray = "string_array"
	TypeInteger     = "integer"
	TypeObjectArray = "object_array"
	TypeBool        = "bool"
)

//go:embed registry.v1.json
var embeddedRegistry []byte

// InputSpec describes one input key a route may require.
type InputSpec struct {
	Type        string `json:"type"`
	Question    string `json:"question,omitempty"`
	FactAlias   string `json:"fact_alias,omitempty"`
	Description string `json:"description,omitempty"`
}

// Policy says how a missing input is obtained.
type Policy struct {
	InputKey       string `json:"input_key"`
	ResolutionMode string `json:"resolution_mode"`
	FactKey        string `json:"fact_key,omitempty"`
	FactKind       string `json:"fact_kind,omitempty"`
	Sensitive      bool   `json:"sensitive,omitempty"`
	Parallelizable *bool  `json:"parallelizable,omitempty"`
	BatchGroup     string `json:"batch_group,omitempty"`
	Instructions   string `json:"instructions,omitempty"`
	Condition      string `json:"condition,omitempty"`
}

// IsParallelizable applies the default (true).
func (p Policy) IsParallelizable() bool { return p.Parallelizable == nil || *p.Parallelizable }

// RouteDef is one registry route.
type RouteDef struct {
	RouteID            string         `json:"route_id"`
	Intent             string         `json:"intent,omitempty"`
	Domain             string         `json:"domain"`
	CookbookID         string         `json:"cookbook_id,omitempty"`
	Version            string         `json:"version,omitempty"`
	EntryID            string         `json:"entry_id,omitempty"`
	EntryType          string         `json:"entry_type,omitempty"`
	Strategy           string         `json:"strategy"`
	ConnectorID        string         `json:"connector_id,omitempty"`
	Verb               string         `json:"verb,omitempty"`
	Compose            bool           `json:"compose,omitempty"`
	Keywords           []string       `json:"keywords"`
	RequiredInputs     []string       `json:"required_inputs,omitempty"`
	OptionalInputs     []string       `json:"optional_inputs,omitempty"`
	Tags               []string       `json:"tags,omitempty"`
	Orchestration      map[string]any `json:"orchestration,omitempty"`
	EnrichmentPolicies []Policy       `json:"enrichment_policies,omitempty"`

	// idWords are the words of route_id and entry_id, scored as tokens.
	idWords []string
	// keywordPhrases are keywords with several words, matched as phrases.
	keywordPhrases map[string]bool
}

// Registry is a parsed, validated route registry. It is immutable after
// Load and safe for concurrent use.
type Registry struct {
	Type                string               `json:"type"`
	Version             string               `json:"version"`
	Inputs              map[string]InputSpec `json:"inputs"`
	DocumentTypeAliases map[string]string    `json:"document_type_aliases"`
	Routes              []RouteDef           `json:"routes"`

	aliases []alias
	byID    map[string]*RouteDef
}

type alias struct {
	phrase string // normalized
	words  []string
	typeID string
}

var (
	defaultOnce sync.Once
	defaultReg  *Registry
	defaultErr  error
)

// Default returns the embedded registry, parsed and validated once.
func Default() (*Registry, error) {
	defaultOnce.Do(func() { defaultReg, defaultErr = Load(embeddedRegistry) })
	return defaultReg, defaultErr
}

var (
	safeID    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	inputKeyR = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	typeIDR   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// Load parses and validates a registry document. Unknown fields are
// rejected so a typo never silently disables a rule.
func Load(raw []byte) (*Registry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Registry
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("registry: decode: %w", err)
	}
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &r, nil
}

func normList(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (r *Registry) validate() error {
	if r.Type != RegistryType {
		return fmt.Errorf("type must be %q, got %q", RegistryType, r.Type)
	}
	if strings.TrimSpace(r.Version) == "" {
		return fmt.Errorf("version is required")
	}
	if len(r.Inputs) == 0 {
		return fmt.Errorf("inputs must declare at least one input key")
	}
	// Sorted iteration so the first problem reported is always the same.
	for _, k := range slices.Sorted(maps.Keys(r.Inputs)) {
		spec := r.Inputs[k]
		if !inputKeyR.MatchString(k) {
			return fmt.Errorf("inputs: invalid input key %q", k)
		}
		switch spec.Type {
		case TypeString, TypeStringArray, TypeInteger, TypeObjectArray, TypeBool:
		default:
			return fmt.Errorf("inputs.%s: unknown type %q", k, spec.Type)
		}
	}
	if len(r.Routes) == 0 {
		return fmt.Errorf("routes must be non-empty")
	}
	// Aliases: normalize keys, reject collisions and bad type ids.
	seenAlias := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(r.DocumentTypeAliases)) {
		typeID := r.DocumentTypeAliases[k]
		n := normalizeAlias(k)
		if n == "" {
			return fmt.Errorf("document_type_aliases: empty alias")
		}
		if !typeIDR.MatchString(typeID) {
			return fmt.Errorf("document_type_aliases[%q]: invalid type_id %q", k, typeID)
		}
		if prev, dup := seenAlias[n]; dup {
			return fmt.Errorf("document_type_aliases: %q and %q normalize to the same alias", prev, k)
		}
		seenAlias[n] = k
		r.aliases = append(r.aliases, alias{phrase: n, words: strings.Fields(n), typeID: typeID})
	}
	// Longest alias first, then alphabetical: a longer phrase wins over the
	// shorter phrase it contains, and the order is stable.
	sort.Slice(r.aliases, func(i, j int) bool {
		a, b := r.aliases[i], r.aliases[j]
		if len(a.phrase) != len(b.phrase) {
			return len(a.phrase) > len(b.phrase)
		}
		return a.phrase < b.phrase
	})
	r.byID = map[string]*RouteDef{}
	for i := range r.Routes {
		rt := &r.Routes[i]
		if err := r.validateRoute(rt); err != nil {
			return fmt.Errorf("routes[%d] (%s): %w", i, rt.RouteID, err)
		}
		if _, dup := r.byID[rt.RouteID]; dup {
			return fmt.Errorf("routes[%d]: duplicate route_id %q", i, rt.RouteID)
		}
		r.byID[rt.RouteID] = rt
	}
	return nil
}

// validateRoute normalises rt in place and checks it against the registry.
func (r *Registry) validateRoute(rt *RouteDef) error {
	normalizeRoute(rt)
	if rt.RouteID == "" || !safeID.MatchString(strings.ToLower(rt.RouteID)) {
		return fmt.Errorf("route_id is required and must be a safe identifier")
	}
	if rt.Domain == "" {
		return fmt.Errorf("domain is required")
	}
	if err := checkStrategy(rt); err != nil {
		return err
	}
	rt.Keywords = normList(rt.Keywords)
	if len(rt.Keywords) == 0 {
		return fmt.Errorf("keywords must be non-empty")
	}
	rt.keywordPhrases = map[string]bool{}
	for _, k := range rt.Keywords {
		if strings.Contains(k, " ") {
			rt.keywordPhrases[k] = true
		}
	}
	rt.Tags = normList(rt.Tags)
	rt.RequiredInputs = normList(rt.RequiredInputs)
	rt.OptionalInputs = normList(rt.OptionalInputs)
	if err := r.checkRouteInputs(rt); err != nil {
		return err
	}
	seenPolicy := map[string]bool{}
	for i := range rt.EnrichmentPolicies {
		if err := r.checkPolicy(rt, i, seenPolicy); err != nil {
			return err
		}
	}
	rt.idWords = splitWords(rt.RouteID + " " + rt.EntryID)
	return nil
}

// normalizeRoute trims the route's scalar fields and folds the case of
// those compared case-insensitively.
func normalizeRoute(rt *RouteDef) {
	rt.RouteID = strings.TrimSpace(rt.RouteID)
	rt.Domain = strings.ToLower(strings.TrimSpace(rt.Domain))
	rt.CookbookID = strings.TrimSpace(rt.CookbookID)
	rt.Version = strings.TrimSpace(rt.Version)
	rt.EntryID = strings.TrimSpace(rt.EntryID)
	rt.EntryType = strings.ToLower(strings.TrimSpace(rt.EntryType))
	rt.Strategy = strings.ToUpper(strings.TrimSpace(rt.Strategy))
	rt.ConnectorID = strings.TrimSpace(rt.ConnectorID)
	rt.Verb = strings.TrimSpace(rt.Verb)
}

// checkStrategy checks that the route names what its strategy runs.
func checkStrategy(rt *RouteDef) error {
	switch rt.Strategy {
	case StrategyTemplate, StrategyRecipe:
		if rt.CookbookID == "" || rt.EntryID == "" || rt.EntryType == "" {
			return fmt.Errorf("%s needs cookbook_id, entry_id and entry_type", rt.Strategy)
		}
	case StrategyConnectorJob:
		if rt.ConnectorID == "" || rt.Verb == "" {
			return fmt.Errorf("CONNECTOR_EXECUTE_JOB needs connector_id and verb")
		}
	case StrategyPlanExecute:
		if rt.CookbookID == "" && rt.EntryID == "" {
			return fmt.Errorf("PLAN_EXECUTE needs cookbook_id or entry_id")
		}
	default:
		return fmt.Errorf("unknown strategy %q", rt.Strategy)
	}
	return nil
}

// checkRouteInputs checks that every input the route names is declared
// and none is both required and optional.
func (r *Registry) checkRouteInputs(rt *RouteDef) error {
	for _, k := range append(append([]string{}, rt.RequiredInputs...), rt.OptionalInputs...) {
		if _, ok := r.Inputs[k]; !ok {
			return fmt.Errorf("unknown input key %q (declare it under inputs)", k)
		}
	}
	for _, k := range rt.RequiredInputs {
		if slices.Contains(rt.OptionalInputs, k) {
			return fmt.Errorf("input %q is both required and optional", k)
		}
	}
	return nil
}

// checkPolicy normalises and checks enrichment policy i of rt: a declared
// input, a known mode and condition, one policy per (input, condition).
func (r *Registry) checkPolicy(rt *RouteDef, i int, seen map[string]bool) error {
	p := &rt.EnrichmentPolicies[i]
	p.InputKey = strings.ToLower(strings.TrimSpace(p.InputKey))
	p.ResolutionMode = strings.ToUpper(strings.TrimSpace(p.ResolutionMode))
	p.FactKey = strings.TrimSpace(p.FactKey)
	p.FactKind = strings.TrimSpace(p.FactKind)
	p.BatchGroup = strings.TrimSpace(p.BatchGroup)
	p.Condition = strings.ToLower(strings.TrimSpace(p.Condition))
	if _, ok := r.Inputs[p.InputKey]; !ok {
		return fmt.Errorf("enrichment_policies[%d]: unknown input key %q", i, p.InputKey)
	}
	if !slices.Contains(rt.RequiredInputs, p.InputKey) && !slices.Contains(rt.OptionalInputs, p.InputKey) {
		return fmt.Errorf("enrichment_policies[%d]: input %q is not an input of this route", i, p.InputKey)
	}
	switch p.ResolutionMode {
	case ModeAskUser:
	case ModeAutoRetry:
		if p.FactKey == "" || p.FactKind == "" {
			return fmt.Errorf("enrichment_policies[%d]: AUTO_RETRY_WITH_FACTS needs fact_key and fact_kind", i)
		}
	default:
		return fmt.Errorf("enrichment_policies[%d]: unknown resolution_mode %q", i, p.ResolutionMode)
	}
	switch p.Condition {
	case "", condWeather, condSemBody, condSemSubject:
	default:
		return fmt.Errorf("enrichment_policies[%d]: unknown condition %q", i, p.Condition)
	}
	key := p.InputKey + "\x00" + p.Condition
	if seen[key] {
		return fmt.Errorf("enrichment_policies[%d]: duplicate policy for (%s, %q)", i, p.InputKey, p.Condition)
	}
	seen[key] = true
	return nil
}

// Route returns the route with id, if any.
func (r *Registry) Route(id string) (*RouteDef, bool) {
	rt, ok := r.byID[id]
	return rt, ok
}

package routing

// Status values.
const (
	StatusExecutable    = "RESOLVED_EXECUTABLE"
	StatusMissingInputs = "RESOLVED_MISSING_INPUTS"
	StatusNotEligible   = "NOT_VAULT_ELIGIBLE"
	StatusAmbiguous     = "AMBIGUOUS"
)

// Confidence values.
const (
	ConfidenceHigh   = "HIGH"
	ConfidenceMedium = "MEDIUM"
	ConfidenceLow    = "LOW"
)

// Progress modes and next actions.
const (
	ProgressAutoEnrich    = "AUTO_ENRICH_AND_RETRY"
	ProgressPartialEnrich = "PARTIAL_AUTO_ENRICH_THEN_ASK_USER"
	ProgressAskUser       = "ASK_USER"

	NextRunFactsRetry   = "RUN_FACT_TASKS_AND_RETRY_ROUTE_RESOLVE"
	NextRunFactsThenAsk = "RUN_FACT_TASKS_THEN_ASK_USER_IF_STILL_MISSING"
	NextAskUser         = "ASK_USER_FOR_MISSING_INPUTS"
)

// Autofill sources.
const (
	SourceFacts      = "external_facts"
	SourceHeuristic  = "nl_heuristic"
	SourceAttachment = "attachment_default"
)

// Resolver identifies this resolver in meta.resolver.
const ResolverVersion = "registry+search.v1"

// Result is the resolver's answer. Every list is non-nil so JSON always
// carries [] rather than null, and every map marshals with sorted keys.
type Result struct {
	Status               string         `json:"status"`
	Confidence           string         `json:"confidence"`
	Domain               string         `json:"domain"`
	Route                RouteRef       `json:"route"`
	Execution            Execution      `json:"execution"`
	Inputs               map[string]any `json:"inputs"`
	MissingInputs        []string       `json:"missing_inputs"`
	AutofilledInputs     []Autofill     `json:"autofilled_inputs"`
	MissingInputGuidance []Guidance     `json:"missing_input_guidance"`
	ProgressHint         *ProgressHint  `json:"progress_hint"`
	NeedsClarification   bool           `json:"needs_clarification"`
	Reasons              []string       `json:"reasons"`
	FallbackHint         string         `json:"fallback_hint"`
	// Score is the winning route's score (diagnostics; not serialised).
	Score int `json:"-"`
}

// RouteRef names the resolved route ({} when unset).
type RouteRef struct {
	RouteID    string `json:"route_id,omitempty"`
	CookbookID string `json:"cookbook_id,omitempty"`
	Version    string `json:"version,omitempty"`
	EntryID    string `json:"entry_id,omitempty"`
	EntryType  string `json:"entry_type,omitempty"`
	Source     string `json:"source,omitempty"`
}

// Execution says which tool runs the route ({"strategy":""} when unset).
type Execution struct {
	Strategy      string         `json:"strategy"`
	Tool          string         `json:"tool,omitempty"`
	ConnectorID   string         `json:"connector_id,omitempty"`
	Verb          string         `json:"verb,omitempty"`
	Orchestration map[string]any `json:"orchestration,omitempty"`
}

// Autofill records one input filled by the resolver.
type Autofill struct {
	InputKey string `json:"input_key"`
	Source   string `json:"source"`
	Reason   string `json:"reason"`
	FactKey  string `json:"fact_key,omitempty"`
}

// Guidance says how to obtain one missing input.
type Guidance struct {
	InputKey            string       `json:"input_key"`
	RequiredForRoute    string       `json:"required_for_route"`
	ResolutionMode      string       `json:"resolution_mode"`
	Question            string       `json:"question"`
	ExternalFactRequest *FactRequest `json:"external_fact_request,omitempty"`
}

// FactRequest asks the agent's normal loop for a fact, then a retry.
type FactRequest struct {
	InputKey       string `json:"input_key"`
	FactKey        string `json:"fact_key"`
	FactKind       string `json:"fact_kind"`
	Kind           string `json:"kind"`
	Parallelizable bool   `json:"parallelizable"`
	BatchGroup     string `json:"batch_group"`
	RequestText    string `json:"request_text"`
	Instructions   string `json:"instructions"`
	Location       string `json:"location,omitempty"`
	Timeframe      string `json:"timeframe,omitempty"`
}

// ProgressHint tells the agent what to do next.
type ProgressHint struct {
	Mode             string   `json:"mode"`
	NextAction       string   `json:"next_action"`
	Message          string   `json:"message"`
	RetryRecommended bool     `json:"retry_recommended,omitempty"`
	Parallelizable   bool     `json:"parallelizable,omitempty"`
	FactKeys         []string `json:"fact_keys,omitempty"`
	BatchGroups      []string `json:"batch_groups,omitempty"`
}

func newResult() Result {
	return Result{
		Inputs:               map[string]any{},
		MissingInputs:        []string{},
		AutofilledInputs:     []Autofill{},
		MissingInputGuidance: []Guidance{},
		Reasons:              []string{},
	}
}

func confidenceFor(score int) string {
	switch {
	case score >= 10:
		return ConfidenceHigh
	case score >= 6:
		return ConfidenceMedium
	default:
		return ConfidenceLow
	}
}

func toolFor(strategy string) string {
	switch strategy {
	case StrategyTemplate:
		return "vaultclaw_template_render"
	case StrategyRecipe:
		return "vaultclaw_recipe_get"
	case StrategyConnectorJob:
		return "vaultclaw_connector_execute_job"
	case StrategyPlanExecute:
		return "vaultclaw_plan_execute"
	}
	return ""
}

package tools

import (
	"context"
	"strings"

	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/approval/orchestration"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset vault, continued: execute-job, plans and unbounded-profile
// orchestration. These can end in an approval handoff.

type orchestrationIn struct {
	UnboundedProfiles  bool `json:"unbounded_profiles,omitempty" jsonschema:"resolve an unbounded profile for generic.http requests; default true"`
	AutoCreateProfiles bool `json:"auto_create_profiles,omitempty" jsonschema:"create a minimal profile when none matches; default true"`
}

// options are the orchestration flags; an absent or null orchestration
// object decodes with its defaults.
func (o orchestrationIn) options() orchestration.Options {
	return orchestration.Options{UnboundedProfiles: o.UnboundedProfiles, AutoCreate: o.AutoCreateProfiles}
}

type executeJobIn struct {
	Request        map[string]any  `json:"request" jsonschema:"execute request: connector_id, verb, policy_version, request (verb payload), ..."`
	Orchestration  orchestrationIn `json:"orchestration,omitempty" jsonschema:"unbounded-profile orchestration flags"`
	IdempotencyKey string          `json:"idempotency_key,omitempty" jsonschema:"optional key naming this action"`
}

type planIn struct {
	Plan map[string]any `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
}

type planExecuteIn struct {
	Plan map[string]any `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
	// PlanInput is nil when absent; an explicit null is a non-nil pointer
	// to nil, forwarded as null.
	PlanInput              *any            `json:"plan_input,omitempty" jsonschema:"input the plan's plan_input bindings read"`
	Orchestration          orchestrationIn `json:"orchestration,omitempty" jsonschema:"unbounded-profile orchestration flags"`
	Analysis               *bool           `json:"analysis,omitempty" jsonschema:"forwarded to Vault"`
	AnalysisAPIKeySecretID string          `json:"analysis_api_key_secret_id,omitempty" jsonschema:"forwarded to Vault"`
	AnalysisModel          string          `json:"analysis_model,omitempty" jsonschema:"forwarded to Vault"`
	IdempotencyKey         string          `json:"idempotency_key,omitempty" jsonschema:"optional key naming this action"`
}

type previewIn struct {
	Plan      map[string]any `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
	PlanInput *any           `json:"plan_input,omitempty" jsonschema:"input the plan's plan_input bindings read"`
}

type requirementIn struct {
	// slot, mode and target are not schema-required: entries missing them
	// are dropped, as the predecessor did.
	Slot                string   `json:"slot,omitempty"`
	Mode                string   `json:"mode,omitempty"`
	Target              string   `json:"target,omitempty"`
	Intent              string   `json:"intent,omitempty"`
	ExpectedSecretTypes []string `json:"expected_secret_types,omitempty"`
	Required            bool     `json:"required,omitempty"`
}

type resolveIn struct {
	Requirements []requirementIn `json:"requirements" jsonschema:"secret attachment requirements {slot, mode, target, intent?, expected_secret_types?}"`
	AutoCreate   bool            `json:"auto_create,omitempty" jsonschema:"create a minimal profile when none matches; default true"`
}

// anyJSON lets an optional "any" argument be null, so an explicit
// plan_input: null is kept and forwarded to Vault.
func anyJSON(s *jsonschema.Schema, name string) {
	p := Prop(s, name)
	p.Type = ""
	p.Types = []string{"null", "boolean", "object", "array", "number", "string"}
}

// orchestrationDefaults documents and applies the orchestration defaults;
// the object may be null (meaning: the defaults).
func orchestrationDefaults(s *jsonschema.Schema) {
	o := Prop(s, "orchestration")
	o.Type = ""
	o.Types = []string{"null", "object"}
	Default(o, "unbounded_profiles", true)
	Default(o, "auto_create_profiles", true)
}

// planInput splits an optional plan_input into its value and whether it was
// given.
func planInput(p *any) (any, bool) {
	if p == nil {
		return nil, false
	}
	return *p, true
}

var connectorExecuteJob = Define(Tool{
	Name:  "vaultclaw_connector_execute_job",
	Title: "Execute a connector request as a job",
	Description: "Run a connector request as an asynchronous Vault job: resolve an unbounded profile for generic.http, " +
		"derive the module hash, validate, then execute. When a person must approve, returns MCP_APPROVAL_REQUIRED with a handle for vaultclaw_approval_wait.",
	Toolset:    ToolsetVault,
	Capability: CapVaultExecute,
	Hints:      Hints{OpenWorld: true},
	Needs:      NeedSessions | NeedExecution,
}, func(s *jsonschema.Schema) {
	orchestrationDefaults(s)
	keyDoc(s)
}, executeJob)

func executeJob(ctx context.Context, d *Deps, c *Call, in executeJobIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	out, err := d.Execution.ExecuteJob(ctx, c.Scope(), sess, in.Request, in.Orchestration.options(), key)
	if err != nil {
		return Result{}, err
	}
	return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
}

var planValidate = Define(Tool{
	Name:        "vaultclaw_plan_validate",
	Title:       "Validate a plan",
	Description: "Ask Vault to validate a connector execution plan without running it. module_hash is never injected into plan steps.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultRead,
	Hints:       ReadRemote,
	Needs:       NeedSessions | NeedExecution,
}, nil, validatePlan)

func validatePlan(ctx context.Context, d *Deps, c *Call, in planIn) (Result, error) {
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	out, err := d.Execution.PlanValidate(ctx, sess, in.Plan)
	if err != nil {
		return Result{}, err
	}
	return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
}

var planExecute = Define(Tool{
	Name:  "vaultclaw_plan_execute",
	Title: "Execute a plan",
	Description: "Run a connector execution plan. generic.http steps get an unbounded profile first (strict: unresolved runtime bindings fail with " +
		"MCP_PLAN_PROFILE_PRECHECK_UNRESOLVED). When a person must approve, returns MCP_APPROVAL_REQUIRED with a PLAN_RUN handle for vaultclaw_approval_wait.",
	Toolset:    ToolsetVault,
	Capability: CapVaultExecute,
	Hints:      Hints{OpenWorld: true},
	Needs:      NeedSessions | NeedExecution,
	Renders:    true,
}, func(s *jsonschema.Schema) {
	orchestrationDefaults(s)
	anyJSON(s, "plan_input")
	keyDoc(s)
}, executePlan)

func executePlan(ctx context.Context, d *Deps, c *Call, in planExecuteIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	input, given := planInput(in.PlanInput)
	out, err := d.Execution.PlanExecute(ctx, c.Scope(), sess, execution.PlanExecuteInput{
		Plan: in.Plan, PlanInput: input, PlanInputSet: given, Orchestration: in.Orchestration.options(),
		Analysis: in.Analysis, AnalysisAPIKeySecretID: strings.TrimSpace(in.AnalysisAPIKeySecretID), AnalysisModel: strings.TrimSpace(in.AnalysisModel),
		BeforeSend:     renderedCheck(ctx),
		IdempotencyKey: key,
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
}

var unboundedProfileResolve = Define(Tool{
	Name:  "vaultclaw_unbounded_profile_resolve",
	Title: "Resolve an unbounded profile",
	Description: "Find the best unbounded profile for explicit secret-attachment requirements (deterministic score and tie-break), " +
		"auto-creating a minimal mcp.auto.<hash> profile when none matches and auto_create is true.",
	Toolset:    ToolsetVault,
	Capability: CapVaultExecute,
	Hints:      Hints{Idempotent: true, OpenWorld: true},
	Needs:      NeedSessions | NeedExecution,
}, func(s *jsonschema.Schema) {
	Default(s, "auto_create", true)
}, resolveUnboundedProfile)

func resolveUnboundedProfile(ctx context.Context, d *Deps, c *Call, in resolveIn) (Result, error) {
	given := make([]orchestration.Requirement, len(in.Requirements))
	for i, r := range in.Requirements {
		given[i] = orchestration.Requirement{Slot: r.Slot, Mode: r.Mode, Target: r.Target, Intent: r.Intent,
			ExpectedSecretTypes: r.ExpectedSecretTypes, Required: r.Required}
	}
	reqs, err := orchestration.NormalizeRequirements(given, "requirements")
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	data, err := d.Execution.ResolveProfile(ctx, sess, reqs, in.AutoCreate)
	if err != nil {
		return Result{}, err
	}
	return OK(data)
}

var planUnboundedProfilePreview = Define(Tool{
	Name:  "vaultclaw_plan_unbounded_profile_preview",
	Title: "Preview plan profile resolution",
	Description: "Show which unbounded profile each generic.http step of a plan would use, and which bindings are only known at runtime, " +
		"without creating profiles or running the plan.",
	Toolset:    ToolsetVault,
	Capability: CapVaultRead,
	Hints:      ReadRemote,
	Needs:      NeedSessions | NeedExecution,
}, func(s *jsonschema.Schema) {
	anyJSON(s, "plan_input")
}, previewPlanProfiles)

func previewPlanProfiles(ctx context.Context, d *Deps, c *Call, in previewIn) (Result, error) {
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	input, given := planInput(in.PlanInput)
	data, err := d.Execution.PreviewPlan(ctx, sess, in.Plan, input, given)
	if err != nil {
		return Result{}, err
	}
	return OK(data)
}

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
	UnboundedProfiles  bool `json:"unbounded_profiles,omitempty"`
	AutoCreateProfiles bool `json:"auto_create_profiles,omitempty"`
}

// options are the orchestration flags; an absent or null orchestration
// object decodes with its defaults.
func (o orchestrationIn) options() orchestration.Options {
	return orchestration.Options{UnboundedProfiles: o.UnboundedProfiles, AutoCreate: o.AutoCreateProfiles}
}

type executeJobIn struct {
	Request        map[string]any  `json:"request" jsonschema:"{connector_id, verb, request}"`
	Orchestration  orchestrationIn `json:"orchestration,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

type planIn struct {
	Plan map[string]any `json:"plan"`
}

type planExecuteIn struct {
	Plan map[string]any `json:"plan"`
	// PlanInput: an explicit null is given, and forwarded as null.
	PlanInput              AnyValue        `json:"plan_input,omitempty"`
	Orchestration          orchestrationIn `json:"orchestration,omitempty"`
	Analysis               *bool           `json:"analysis,omitempty"`
	AnalysisAPIKeySecretID string          `json:"analysis_api_key_secret_id,omitempty"`
	AnalysisModel          string          `json:"analysis_model,omitempty"`
	IdempotencyKey         string          `json:"idempotency_key,omitempty"`
}

type previewIn struct {
	Plan      map[string]any `json:"plan"`
	PlanInput AnyValue       `json:"plan_input,omitempty"`
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
	Requirements []requirementIn `json:"requirements"`
	AutoCreate   bool            `json:"auto_create,omitempty"`
}

// orchestrationDefaults documents and applies the orchestration defaults;
// the object may be null (meaning: the defaults).
func orchestrationDefaults(s *jsonschema.Schema) {
	o := Prop(s, "orchestration")
	Default(o, "unbounded_profiles", true)
	Default(o, "auto_create_profiles", true)
}

var connectorExecuteJob = Define(Tool{
	Name:        "vaultclaw_connector_execute_job",
	Description: "Run a connector request as a job: it may send mail or call APIs.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultExecute,
	Effect:      Executes,
	Needs:       NeedSessions | NeedExecution,
	Output:      obj("response", obj()),
}, orchestrationDefaults, executeJob)

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
	Description: "Check a plan without running it.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultRead,
	Effect:      ReadsRemote,
	Needs:       NeedSessions | NeedExecution,
	Output:      vaultBody("valid", boolean()),
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
	Name:        "vaultclaw_plan_execute",
	Description: "Run a plan, e.g. a rendered template: it may send mail or call APIs.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultExecute,
	Effect:      Executes,
	Needs:       NeedSessions | NeedExecution,
	Narrowed:    map[string]*jsonschema.Schema{"plan_input": obj()},
	Unlisted:    []string{"analysis", "analysis_api_key_secret_id", "analysis_model"},
	Output:      obj("response", obj()),
	Renders:     true,
}, orchestrationDefaults, executePlan)

func executePlan(ctx context.Context, d *Deps, c *Call, in planExecuteIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	out, err := d.Execution.PlanExecute(ctx, c.Scope(), sess, execution.PlanExecuteInput{
		Plan: in.Plan, PlanInput: in.PlanInput.Value, PlanInputSet: in.PlanInput.Given, Orchestration: in.Orchestration.options(),
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
	Name:        "vaultclaw_unbounded_profile_resolve",
	Description: "Find or create the unbounded profile for secret attachments.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultExecute,
	Effect:      ReplacesRemote,
	Needs:       NeedSessions | NeedExecution,
	Output:      obj("profile_id", str(), "created", boolean()),
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
	Name:        "vaultclaw_plan_unbounded_profile_preview",
	Description: "Show the unbounded profile each plan step would use.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultRead,
	Effect:      ReadsRemote,
	Needs:       NeedSessions | NeedExecution,
	Narrowed:    map[string]*jsonschema.Schema{"plan_input": obj()},
	Output:      obj("resolutions", objs(), "transformed_plan", obj()),
}, nil, previewPlanProfiles)

func previewPlanProfiles(ctx context.Context, d *Deps, c *Call, in previewIn) (Result, error) {
	sess, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	data, err := d.Execution.PreviewPlan(ctx, sess, in.Plan, in.PlanInput.Value, in.PlanInput.Given)
	if err != nil {
		return Result{}, err
	}
	return OK(data)
}

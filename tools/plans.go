package tools

import (
	"context"
	"strings"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/approval/orchestration"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/google/jsonschema-go/jsonschema"
)

type orchestrationIn struct {
	UnboundedProfiles  bool `json:"unbounded_profiles,omitempty" jsonschema:"resolve an unbounded profile for generic.http requests; default true"`
	AutoCreateProfiles bool `json:"auto_create_profiles,omitempty" jsonschema:"create a minimal profile when none matches; default true"`
}

type executeJobIn struct {
	Request       map[string]any   `json:"request" jsonschema:"execute request: connector_id, verb, policy_version, request (verb payload), ..."`
	Orchestration *orchestrationIn `json:"orchestration,omitempty" jsonschema:"unbounded-profile orchestration flags"`
}

type planIn struct {
	Plan map[string]any `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
}

type planExecuteIn struct {
	Plan                   map[string]any   `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
	PlanInput              any              `json:"plan_input,omitempty" jsonschema:"input the plan's plan_input bindings read"`
	Orchestration          *orchestrationIn `json:"orchestration,omitempty" jsonschema:"unbounded-profile orchestration flags"`
	Analysis               *bool            `json:"analysis,omitempty" jsonschema:"forwarded to Vault"`
	AnalysisAPIKeySecretID string           `json:"analysis_api_key_secret_id,omitempty" jsonschema:"forwarded to Vault"`
	AnalysisModel          string           `json:"analysis_model,omitempty" jsonschema:"forwarded to Vault"`
}

type planRunGetIn struct {
	RunID string `json:"run_id" jsonschema:"plan run id"`
}

type previewIn struct {
	Plan      map[string]any `json:"plan" jsonschema:"connector.execution.plan.v1 plan"`
	PlanInput any            `json:"plan_input,omitempty" jsonschema:"input the plan's plan_input bindings read"`
}

type requirementIn struct {
	// slot, mode and target are not schema-required: entries missing them
	// are dropped, as the reference does (spec §5.2).
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
// plan_input: null is kept and forwarded (spec §2.8).
func anyJSON(s *jsonschema.Schema, name string) {
	p := Prop(s, name)
	p.Type = ""
	p.Types = []string{"null", "boolean", "object", "array", "number", "string"}
}

func orchestrationDefaults(s *jsonschema.Schema) {
	o := Prop(s, "orchestration")
	Default(o, "unbounded_profiles", true)
	Default(o, "auto_create_profiles", true)
}

func planTools(sessions *session.Service, ex *execution.Service) []Tool {
	resolve := func(ctx context.Context, c *Call) (session.Session, error) { return sessions.Resolve(ctx, c.Scope()) }
	return []Tool{
		Typed(Tool{
			Name:  "vaultclaw_connector_execute_job",
			Title: "Execute a connector request as a job",
			Description: "Run a connector request as an asynchronous Vault job: resolve an unbounded profile for generic.http, " +
				"derive the module hash, validate, then execute. When a person must approve, returns MCP_APPROVAL_REQUIRED with a handle for vaultclaw_approval_wait.",
			Toolset:    ToolsetVault,
			Capability: CapVaultExecute,
			Hints:      Hints{OpenWorld: true},
		}, orchestrationDefaults, func(ctx context.Context, c *Call, in executeJobIn) (Result, error) {
			opts, err := orchestration.OptionsFrom(c.Args["orchestration"], "orchestration")
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			out, err := ex.ExecuteJob(ctx, c.Scope(), sess, in.Request, opts)
			if err != nil {
				return Result{}, err
			}
			return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
		}),
		Typed(Tool{
			Name:        "vaultclaw_plan_validate",
			Title:       "Validate a plan",
			Description: "Ask Vault to validate a connector execution plan without running it. module_hash is never injected into plan steps.",
			Toolset:     ToolsetVault,
			Capability:  CapVaultRead,
			Hints:       ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in planIn) (Result, error) {
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			out, err := ex.PlanValidate(ctx, sess, in.Plan)
			if err != nil {
				return Result{}, err
			}
			return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
		}),
		Typed(Tool{
			Name:  "vaultclaw_plan_execute",
			Title: "Execute a plan",
			Description: "Run a connector execution plan. generic.http steps get an unbounded profile first (strict: unresolved runtime bindings fail with " +
				"MCP_PLAN_PROFILE_PRECHECK_UNRESOLVED). When a person must approve, returns MCP_APPROVAL_REQUIRED with a PLAN_RUN handle for vaultclaw_approval_wait.",
			Toolset:    ToolsetVault,
			Capability: CapVaultExecute,
			Hints:      Hints{OpenWorld: true},
		}, func(s *jsonschema.Schema) {
			orchestrationDefaults(s)
			anyJSON(s, "plan_input")
		}, func(ctx context.Context, c *Call, in planExecuteIn) (Result, error) {
			opts, err := orchestration.OptionsFrom(c.Args["orchestration"], "orchestration")
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			_, hasInput := c.Args["plan_input"]
			out, err := ex.PlanExecute(ctx, c.Scope(), sess, execution.PlanExecuteInput{
				Plan: in.Plan, PlanInput: in.PlanInput, PlanInputSet: hasInput, Orchestration: opts,
				Analysis: in.Analysis, AnalysisAPIKeySecretID: strings.TrimSpace(in.AnalysisAPIKeySecretID), AnalysisModel: strings.TrimSpace(in.AnalysisModel),
			})
			if err != nil {
				return Result{}, err
			}
			return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
		}),
		Typed(Tool{
			Name:        "vaultclaw_plan_run_get",
			Title:       "Get a plan run",
			Description: "Fetch a plan run with its decision outcome and approval state.",
			Toolset:     ToolsetApprovals,
			Capability:  CapApprovalsView,
			Hints:       ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in planRunGetIn) (Result, error) {
			id, err := required("run_id", in.RunID)
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			r, err := ex.ApprovalAPI(sess).PlanRunGet(ctx, id)
			if err != nil {
				return Result{}, err
			}
			var data any
			if r.Body != nil {
				data = approval.RunView(r.Body)
			}
			return Result{Data: data, Meta: vaultMeta(r.RequestID, r.Status)}, nil
		}),
		Typed(Tool{
			Name:  "vaultclaw_unbounded_profile_resolve",
			Title: "Resolve an unbounded profile",
			Description: "Find the best unbounded profile for explicit secret-attachment requirements (deterministic score and tie-break), " +
				"auto-creating a minimal mcp.auto.<hash> profile when none matches and auto_create is true.",
			Toolset:    ToolsetVault,
			Capability: CapVaultExecute,
			Hints:      Hints{Idempotent: true, OpenWorld: true},
		}, func(s *jsonschema.Schema) {
			Default(s, "auto_create", true)
		}, func(ctx context.Context, c *Call, in resolveIn) (Result, error) {
			reqs, err := orchestration.ParseRequirements(c.Args["requirements"], "requirements")
			if err != nil {
				return Result{}, err
			}
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			res, err := orchestration.NewResolver(ex.ProfileAPI(sess)).Resolve(ctx, reqs, in.AutoCreate)
			if err != nil {
				return Result{}, err
			}
			return OK(res.Data())
		}),
		Typed(Tool{
			Name:  "vaultclaw_plan_unbounded_profile_preview",
			Title: "Preview plan profile resolution",
			Description: "Show which unbounded profile each generic.http step of a plan would use, and which bindings are only known at runtime, " +
				"without creating profiles or running the plan.",
			Toolset:    ToolsetVault,
			Capability: CapVaultRead,
			Hints:      ReadRemote,
		}, func(s *jsonschema.Schema) {
			anyJSON(s, "plan_input")
		}, func(ctx context.Context, c *Call, in previewIn) (Result, error) {
			sess, err := resolve(ctx, c)
			if err != nil {
				return Result{}, err
			}
			_, hasInput := c.Args["plan_input"]
			data, err := ex.PreviewPlan(ctx, sess, in.Plan, in.PlanInput, hasInput)
			if err != nil {
				return Result{}, err
			}
			return OK(data)
		}),
	}
}

package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Step resolution statuses.
const (
	StepResolved   = "RESOLVED"
	StepCreated    = "CREATED"
	StepUnresolved = "UNRESOLVED"
	StepFailed     = "FAILED"
)

// StepResolution is one entry of the plan preflight's resolutions.
type StepResolution struct {
	StepID         string        `json:"step_id"`
	Status         string        `json:"status"`
	ProfileID      string        `json:"profile_id,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	Requirements   []Requirement `json:"requirements,omitempty"`
	UnresolvedRefs []string      `json:"unresolved_refs,omitempty"`
}

// PlanOptions select strict (plan execute) or preview behaviour.
type PlanOptions struct {
	// Strict aborts at the first step that cannot be resolved.
	Strict bool
	// AutoCreate allows auto-creating profiles (false for the preview).
	AutoCreate bool
	// PlanInputSet reports whether plan_input was supplied at all.
	PlanInputSet bool
}

// DeepCopy round-trips v through JSON, which also normalises numbers and
// typed values (e.g. []Requirement) into generic JSON.
func DeepCopy(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// PreflightPlan resolves the unbounded profile of every generic.http step
// and returns a transformed deep copy of plan; Resolutions is nil when the
// plan has no steps.
func (r *Resolver) PreflightPlan(ctx context.Context, plan map[string]any, planInput any, opts PlanOptions) (map[string]any, []StepResolution, error) {
	cp, err := DeepCopy(plan)
	if err != nil {
		return nil, nil, apperr.Validation("plan", "plan is not valid JSON: %v", err)
	}
	out, _ := cp.(map[string]any)
	steps, _ := out["steps"].([]any)
	if len(steps) == 0 {
		return out, nil, nil
	}
	resolutions := []StepResolution{}
	for i, s := range steps {
		step, ok := s.(map[string]any)
		if !ok || !IsGeneric(str(step["connector_id"]), str(step["verb"])) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		res, resolved, err := r.preflightStep(ctx, step, i, planInput, opts)
		if err != nil {
			return nil, nil, err
		}
		if resolved != nil {
			step["request_base"] = resolved
			step["request_bindings"] = []any{}
		}
		resolutions = append(resolutions, res)
	}
	return out, resolutions, nil
}

// preflightStep returns the step's resolution and, when it is rewritten, its
// resolved request; in strict mode an unresolved step is an error.
func (r *Resolver) preflightStep(ctx context.Context, step map[string]any, index int, planInput any, opts PlanOptions) (StepResolution, map[string]any, error) {
	stepID := str(step["step_id"])
	field := fmt.Sprintf("plan.steps[%d]", index)
	res := StepResolution{StepID: stepID}
	fail := func(err error) (StepResolution, map[string]any, error) {
		if opts.Strict {
			if ae, ok := err.(*apperr.Error); ok {
				ae.With("step_id", stepID)
			}
			return res, nil, err
		}
		res.Status = StepFailed
		res.Reason = errorMessage(err)
		return res, nil, nil
	}

	base, unresolved, err := resolveStepRequest(step, field, planInput, opts.PlanInputSet)
	if err != nil {
		return fail(err)
	}
	if len(unresolved) > 0 {
		if opts.Strict {
			return res, nil, precheckUnresolved(stepID, unresolved)
		}
		res.Status = StepUnresolved
		res.Reason = "runtime bindings required for profile inference"
		res.UnresolvedRefs = unresolved
		return res, nil, nil
	}
	if id := str(base["profile_id"]); id != "" {
		res.Status, res.Reason, res.ProfileID = StepResolved, "request already includes profile_id", id
		return res, base, nil
	}
	reqs, err := DeriveRequirements(base, field+".request_base")
	if err != nil {
		return fail(err)
	}
	if len(reqs) == 0 {
		res.Status, res.Reason = StepResolved, "no secret_attachments requirements found"
		return res, base, nil
	}
	res.Requirements = reqs
	rs, err := r.Resolve(ctx, reqs, opts.AutoCreate)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return res, nil, err
		}
		return fail(err)
	}
	res.Status, res.ProfileID = StepResolved, rs.ProfileID
	if rs.Created {
		res.Status = StepCreated
	}
	base["profile_id"] = rs.ProfileID
	return res, base, nil
}

func errorMessage(err error) string {
	if ae, ok := err.(*apperr.Error); ok {
		return ae.Message
	}
	return err.Error()
}

func precheckUnresolved(stepID string, unresolved []string) error {
	seen := map[string]bool{}
	paths := []string{}
	for _, u := range unresolved {
		if _, after, ok := strings.Cut(u, "plan_input:"); ok {
			p := after
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	return apperr.New(apperr.CodePlanPrecheckUnresolved, "unable to infer unbounded profile requirements before runtime").
		With("step_id", stepID).
		With("unresolved_refs", unresolved).
		With("required_plan_input_paths", paths)
}

// resolveStepRequest applies request_bindings to a copy of request_base;
// runtime-only bindings are reported as "<path> -> <reason>" and skipped.
func resolveStepRequest(step map[string]any, field string, planInput any, planInputSet bool) (map[string]any, []string, error) {
	base := map[string]any{}
	if rb, ok := step["request_base"].(map[string]any); ok {
		cp, err := DeepCopy(rb)
		if err != nil {
			return nil, nil, apperr.Validation(field+".request_base", "request_base is not valid JSON: %v", err)
		}
		base = cp.(map[string]any)
	}
	raw, present := step["request_bindings"]
	if !present || raw == nil {
		return base, nil, nil
	}
	bindings, ok := raw.([]any)
	if !ok {
		return nil, nil, apperr.Validation(field+".request_bindings", "request_bindings must be an array")
	}
	var unresolved []string
	for j, b := range bindings {
		bf := fmt.Sprintf("%s.request_bindings[%d]", field, j)
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, nil, apperr.Validation(bf, "request_bindings[%d] must be object", j)
		}
		path, _ := bm["path"].(string)
		if strings.TrimSpace(path) == "" {
			return nil, nil, apperr.Validation(bf+".path", "request_bindings[%d] path is required", j)
		}
		ptr, err := ParsePointer(path)
		if err != nil || len(ptr) == 0 {
			msg := "must not be the empty pointer"
			if err != nil {
				msg = err.Error()
			}
			return nil, nil, apperr.Validation(bf+".path", "request_bindings[%d] path is invalid: %s", j, msg)
		}
		ref, ok := bm["ref"].(map[string]any)
		if !ok {
			return nil, nil, apperr.Validation(bf+".ref", "request_bindings[%d] ref is required", j)
		}
		val, reason, err := resolveRef(ref, bf+".ref", planInput, planInputSet)
		if err != nil {
			return nil, nil, err
		}
		if reason != "" {
			unresolved = append(unresolved, path+" -> "+reason)
			continue
		}
		cp, err := DeepCopy(val)
		if err != nil {
			return nil, nil, apperr.Validation(bf+".ref", "binding value is not valid JSON: %v", err)
		}
		nb, err := ptr.Set(base, cp)
		if err != nil {
			return nil, nil, apperr.Validation(bf+".path", "request_bindings[%d]: %v", j, err).WithCause(err)
		}
		base = nb.(map[string]any)
	}
	return base, unresolved, nil
}

// resolveRef returns the binding value, or a non-empty unresolved reason.
func resolveRef(ref map[string]any, field string, planInput any, planInputSet bool) (any, string, error) {
	source := str(ref["source"])
	value, hasValue := ref["value"]
	switch {
	case source == "":
		if hasValue {
			return value, "", nil
		}
		return nil, "ref:missing_source", nil
	case source == "literal" || source == "value" || source == "const":
		if hasValue {
			return value, "", nil
		}
		return nil, "ref:literal_missing_value", nil
	case source == "plan_input":
		p, _ := ref["path"].(string)
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, "ref:plan_input_missing_path", nil
		}
		ptr, err := ParsePointer(p)
		if err != nil {
			return nil, "", apperr.Validation(field+".path", "%v", err)
		}
		if !planInputSet {
			return nil, "plan_input:" + p, nil
		}
		v, ok := ptr.Lookup(planInput)
		if !ok {
			return nil, "plan_input:" + p, nil
		}
		return v, "", nil
	case strings.HasPrefix(source, "step") || source == "runtime":
		p, _ := ref["path"].(string)
		return nil, source + ":" + strings.TrimSpace(p), nil
	default:
		return nil, "ref:unsupported_source:" + source, nil
	}
}

package vaultsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// PlanType is the only plan type Vaultclaw accepts.
const PlanType = "connector.execution.plan.v1"

const maxStepExecutions = 100

type stepResult struct {
	StepID, ConnectorID, Verb, Status string
	Output                            map[string]any
	ErrCode, ErrMsg                   string
}

type run struct {
	ID, JobID     string
	State         string
	LastErrorCode string
	LastErrorMsg  string
	Plan          map[string]any
	PlanInput     any
	PlanHash      string
	Steps         []stepResult
	Outputs       map[string]any
	Current       string
	Approved      bool
	Executions    int
	CreatedAt     time.Time
	UpdatedAt     time.Time
	pendingCall   *call
}

func planHash(plan map[string]any) string {
	raw, _ := json.Marshal(plan)
	sum := sha256.Sum256(raw)
	return "plh_" + hex.EncodeToString(sum[:8])
}

func planSteps(plan map[string]any) (map[string]map[string]any, []string) {
	byID := map[string]map[string]any{}
	var order []string
	steps, _ := plan["steps"].([]any)
	for _, st := range steps {
		if m, ok := st.(map[string]any); ok {
			id := getStr(m, "step_id")
			if _, dup := byID[id]; !dup {
				byID[id] = m
				order = append(order, id)
			}
		}
	}
	return byID, order
}

// planFail is a plan refusal carrying one error in Vaultclaw's shape.
func planFail(code, path, msg, expected, actual string) *apiError {
	return errf(400, code, "%s", msg).with("errors", []any{map[string]any{"path": path, "code": code, "message": msg, "expected": expected, "actual": actual}})
}

// checkPlan validates a plan's structure (plan validate and execute): the
// plan itself, each step in order, then the links between steps.
func (s *Sim) checkPlan(plan map[string]any) *apiError {
	if plan == nil {
		return planFail("PLAN_INVALID", "/plan", "plan object is required", "object", "missing")
	}
	if t := getStr(plan, "type"); t != PlanType {
		return planFail("PLAN_INVALID", "/plan/type", "plan type must be "+PlanType, PlanType, t)
	}
	steps, ok := plan["steps"].([]any)
	if !ok || len(steps) == 0 {
		return planFail("PLAN_INVALID", "/plan/steps", "plan needs at least one step", "non-empty array", jsonscan.Type(plan["steps"]))
	}
	ids := map[string]bool{}
	for i, st := range steps {
		if err := s.checkStep(fmt.Sprintf("/plan/steps/%d", i), st, ids); err != nil {
			return err
		}
	}
	return checkPlanLinks(plan, steps)
}

// checkStep validates one step at path p; ids collects the step ids seen.
func (s *Sim) checkStep(p string, st any, ids map[string]bool) *apiError {
	m, ok := st.(map[string]any)
	if !ok {
		return planFail("PLAN_STEP_INVALID", p, "step must be an object", "object", jsonscan.Type(st))
	}
	id := getStr(m, "step_id")
	if id == "" || ids[id] {
		return planFail("PLAN_STEP_INVALID", p+"/step_id", "step_id must be non-empty and unique", "unique id", id)
	}
	ids[id] = true
	s.mu.Lock()
	conn, ok := s.connectors[getStr(m, "connector_id")]
	s.mu.Unlock()
	if !ok {
		return planFail("PLAN_STEP_INVALID", p+"/connector_id", "unknown connector", "generic.http|google|identity", getStr(m, "connector_id"))
	}
	if _, ok := conn.verb(getStr(m, "verb")); !ok {
		return planFail("PLAN_STEP_INVALID", p+"/verb", "verb is not defined by connector "+conn.ID, "known verb", getStr(m, "verb"))
	}
	if pv := getStr(m, "policy_version"); pv != "" && pv != conn.Version {
		return planFail("PLAN_POLICY_DRIFT", p+"/policy_version", "step policy_version does not match the connector policy", conn.Version, pv)
	}
	if rb, present := m["request_base"]; present && rb != nil {
		if _, ok := rb.(map[string]any); !ok {
			return planFail("PLAN_STEP_INVALID", p+"/request_base", "request_base must be an object", "object", jsonscan.Type(rb))
		}
	}
	binds, _ := m["request_bindings"].([]any)
	for j, b := range binds {
		if err := checkBinding(fmt.Sprintf("%s/request_bindings/%d", p, j), b); err != nil {
			return err
		}
	}
	return nil
}

// checkBinding validates one request binding at path bp: a JSON pointer
// target and a ref of a known source.
func checkBinding(bp string, b any) *apiError {
	bm, ok := b.(map[string]any)
	if !ok || !strings.HasPrefix(getStr(bm, "path"), "/") {
		return planFail("PLAN_BINDING_INVALID", bp+"/path", "binding path must be a JSON pointer", "/...", getStr(bm, "path"))
	}
	ref := getMap(bm, "ref")
	if ref == nil {
		return planFail("PLAN_BINDING_INVALID", bp+"/ref", "binding ref is required", "object", "missing")
	}
	switch src := getStr(ref, "source"); src {
	case "plan_input":
		if !strings.HasPrefix(getStr(ref, "path"), "/") && getStr(ref, "path") != "" {
			return planFail("PLAN_BINDING_INVALID", bp+"/ref/path", "plan_input path must be a JSON pointer", "/...", getStr(ref, "path"))
		}
	case "step_output":
		if getStr(ref, "step_id") == "" {
			return planFail("PLAN_BINDING_INVALID", bp+"/ref/step_id", "step_output ref needs step_id", "step id", "")
		}
	case "literal", "value", "const", "":
		if _, ok := ref["value"]; !ok {
			return planFail("PLAN_BINDING_INVALID", bp+"/ref/value", "literal ref needs value", "value", "missing")
		}
	default:
		return planFail("PLAN_BINDING_INVALID", bp+"/ref/source", "unsupported ref source", "plan_input|step_output|literal", src)
	}
	return nil
}

// checkPlanLinks checks that every step a plan names exists.
func checkPlanLinks(plan map[string]any, steps []any) *apiError {
	byID, _ := planSteps(plan)
	for i, st := range steps {
		m := st.(map[string]any)
		p := fmt.Sprintf("/plan/steps/%d", i)
		if n := getStr(m, "default_success_next_step_id"); n != "" && byID[n] == nil {
			return planFail("PLAN_INVALID", p+"/default_success_next_step_id", "next step does not exist", "step id", n)
		}
		branches, _ := m["success_branches"].([]any)
		for j, b := range branches {
			bm, _ := b.(map[string]any)
			if n := getStr(bm, "next_step_id"); byID[n] == nil {
				return planFail("PLAN_INVALID", fmt.Sprintf("%s/success_branches/%d/next_step_id", p, j), "next step does not exist", "step id", n)
			}
		}
		binds, _ := m["request_bindings"].([]any)
		for j, b := range binds {
			ref := getMap(b.(map[string]any), "ref")
			if getStr(ref, "source") == "step_output" && byID[getStr(ref, "step_id")] == nil {
				return planFail("PLAN_BINDING_INVALID", fmt.Sprintf("%s/request_bindings/%d/ref/step_id", p, j), "step_output ref names an unknown step", "step id", getStr(ref, "step_id"))
			}
		}
	}
	if start := getStr(plan, "start_step_id"); start != "" && byID[start] == nil {
		return planFail("PLAN_INVALID", "/plan/start_step_id", "start step does not exist", "step id", start)
	}
	return nil
}

// E6
func (s *Sim) handlePlanValidate(c *call) (int, any, *apiError) {
	plan := getMap(c.body, "plan")
	if err := s.checkPlan(plan); err != nil {
		return 0, nil, err
	}
	_, order := planSteps(plan)
	return 200, map[string]any{"valid": true, "plan_hash": planHash(plan), "step_count": len(order), "start_step_id": startStep(plan, order)}, nil
}

func startStep(plan map[string]any, order []string) string {
	if s := getStr(plan, "start_step_id"); s != "" {
		return s
	}
	return order[0]
}

// E7
func (s *Sim) handlePlanExecute(c *call) (int, any, *apiError) {
	plan := getMap(c.body, "plan")
	if err := s.checkPlan(plan); err != nil {
		return 0, nil, err
	}
	_, order := planSteps(plan)
	s.mu.Lock()
	now := s.now().UTC()
	r := &run{ID: s.newID("run_"), State: StateRunning, Plan: copyMap(plan), PlanInput: deepCopy(c.body["plan_input"]),
		PlanHash: planHash(plan), Outputs: map[string]any{}, Current: startStep(plan, order), CreatedAt: now, UpdatedAt: now, pendingCall: c}
	j := s.newJobLocked("PLAN_RUN", "plan", PlanType, c.agentID, copyMap(c.body))
	j.RunID = r.ID
	r.JobID = j.ID
	s.runs[r.ID] = r
	s.mu.Unlock()
	s.advance(c.r.Context(), r)
	s.mu.Lock()
	defer s.mu.Unlock()
	status := 200
	if r.State == StatePendingApproval {
		status = 202
	}
	return status, s.runBody(r, true), nil
}

// E8
func (s *Sim) handleRunGet(c *call) (int, any, *apiError) {
	id := strings.TrimPrefix(c.r.URL.Path, "/v0/connectors/plans/runs/")
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return 0, nil, errf(404, "PLAN_RUN_NOT_FOUND", "plan run %s not found", id).with("run_id", id)
	}
	return 200, s.runBody(r, false), nil
}

func (s *Sim) runBody(r *run, flat bool) map[string]any {
	j := s.jobs[r.JobID]
	steps := make([]any, len(r.Steps))
	for i, st := range r.Steps {
		m := map[string]any{"step_id": st.StepID, "connector_id": st.ConnectorID, "verb": st.Verb, "status": st.Status}
		if st.Output != nil {
			m["output"] = st.Output
		}
		if st.ErrCode != "" {
			m["error"] = map[string]any{"code": st.ErrCode, "message": st.ErrMsg}
		}
		steps[i] = m
	}
	rv := map[string]any{"run_id": r.ID, "job_id": r.JobID, "state": r.State, "last_error_code": r.LastErrorCode,
		"plan_hash": r.PlanHash, "current_step_id": r.Current, "steps": steps, "outputs": r.Outputs,
		"created_at": r.CreatedAt.Format(time.RFC3339Nano), "updated_at": r.UpdatedAt.Format(time.RFC3339Nano)}
	if r.LastErrorMsg != "" {
		rv["last_error_message"] = r.LastErrorMsg
	}
	if j != nil && j.Pending != nil {
		rv["challenge_id"] = j.Pending.ChallengeID
	}
	out := map[string]any{"run": rv}
	if j != nil {
		out["job"] = s.jobJSON(j)
		if j.Pending != nil && j.Status == StatePending {
			out["pending_approval"] = s.pendingApprovalJSON(j.Pending)
		}
	}
	if flat {
		out["run_id"], out["job_id"] = r.ID, r.JobID
	}
	return out
}

// advance runs plan steps from r.Current until the run ends or pauses for
// approval. It must be called without s.mu held.
func (s *Sim) advance(ctx context.Context, r *run) {
	s.mu.Lock()
	byID, _ := planSteps(r.Plan)
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if r.State != StateRunning {
			s.mu.Unlock()
			return
		}
		step := byID[r.Current]
		r.Executions++
		if r.Executions > maxStepExecutions {
			s.failRunLocked(r, "PLAN_TRANSITION_AMBIGUOUS", "plan exceeded the step limit (cycle?)")
			s.mu.Unlock()
			return
		}
		req, aerr := s.resolveStepLocked(r, step)
		if aerr != nil {
			s.recordStepLocked(r, step, nil, aerr)
			s.failRunLocked(r, aerr.code, aerr.message)
			s.mu.Unlock()
			return
		}
		conn := s.connectors[getStr(step, "connector_id")]
		verb, _ := conn.verb(getStr(step, "verb"))
		switch s.decideLocked(conn.ID, verb.Name) {
		case ActionDeny:
			s.recordStepLocked(r, step, nil, errf(403, CodeRuleDenied, "an approval rule denies %s", verb.Name))
			r.State, r.LastErrorCode, r.UpdatedAt = StateDenied, CodeRuleDenied, s.now().UTC()
			if j := s.jobs[r.JobID]; j != nil {
				j.Status, j.ErrCode, j.ErrMsg = StateDenied, CodeRuleDenied, "approval rule denied "+verb.Name
			}
			s.mu.Unlock()
			return
		case ActionRequire:
			if !r.Approved {
				j := s.jobs[r.JobID]
				j.ConnectorID, j.Verb = conn.ID, verb.Name
				p := s.newPendingLocked(r.pendingCall, j, r.ID, "PLAN_RUN")
				p.ConnectorID, p.Verb = conn.ID, verb.Name
				r.State, r.LastErrorCode, r.UpdatedAt = StatePendingApproval, CodePlanApproval, s.now().UTC()
				s.mu.Unlock()
				return
			}
		}
		s.mu.Unlock()
		ck, verr := s.checkExecute(req, false)
		var out map[string]any
		if verr == nil {
			out, verr = s.runVerb(ctx, ck)
		}
		s.mu.Lock()
		s.recordStepLocked(r, step, out, verr)
		if verr != nil {
			s.failRunLocked(r, verr.code, verr.message)
			s.mu.Unlock()
			return
		}
		r.Outputs[getStr(step, "step_id")] = out
		next, nerr := s.nextStepLocked(r, step)
		if nerr != nil {
			s.failRunLocked(r, nerr.code, nerr.message)
			s.mu.Unlock()
			return
		}
		if next == "" {
			r.State, r.LastErrorCode, r.UpdatedAt = StateSucceeded, "", s.now().UTC()
			if j := s.jobs[r.JobID]; j != nil {
				j.Status, j.ErrCode, j.ErrMsg, j.UpdatedAt = StateSucceeded, "", "", s.now().UTC()
				j.Result = map[string]any{"run_id": r.ID, "outputs": r.Outputs}
			}
			s.mu.Unlock()
			return
		}
		r.Current = next
		s.mu.Unlock()
	}
}

func (s *Sim) recordStepLocked(r *run, step map[string]any, out map[string]any, err *apiError) {
	sr := stepResult{StepID: getStr(step, "step_id"), ConnectorID: getStr(step, "connector_id"), Verb: getStr(step, "verb"), Status: StateSucceeded, Output: out}
	if err != nil {
		sr.Status, sr.ErrCode, sr.ErrMsg = StateFailed, err.code, err.message
	}
	r.Steps = append(r.Steps, sr)
}

func (s *Sim) failRunLocked(r *run, code, msg string) {
	r.State, r.LastErrorCode, r.LastErrorMsg, r.UpdatedAt = StateFailed, code, msg, s.now().UTC()
	if j := s.jobs[r.JobID]; j != nil {
		j.Status, j.ErrCode, j.ErrMsg, j.UpdatedAt = StateFailed, code, msg, s.now().UTC()
	}
}

// resolveStepLocked builds the step's execute request: request_base with
// bindings applied and {{...}} templates rendered.
func (s *Sim) resolveStepLocked(r *run, step map[string]any) (map[string]any, *apiError) {
	base := copyMap(getMap(step, "request_base"))
	binds, _ := step["request_bindings"].([]any)
	for i, b := range binds {
		bm := b.(map[string]any)
		v, err := s.resolveRef(r, getMap(bm, "ref"))
		if err != nil {
			return nil, errf(409, "PLAN_BINDING_SOURCE_MISSING", "step %s binding %d (%s): %s", getStr(step, "step_id"), i, getStr(bm, "path"), err.Error()).
				with("step_id", getStr(step, "step_id")).with("path", getStr(bm, "path"))
		}
		if err := pointerSet(base, getStr(bm, "path"), deepCopy(v)); err != nil {
			return nil, errf(400, "PLAN_BINDING_INVALID", "step %s binding %d: %s", getStr(step, "step_id"), i, err.Error())
		}
	}
	rendered, err := s.render(r, base)
	if err != nil {
		return nil, errf(409, "PLAN_BINDING_SOURCE_MISSING", "step %s: %s", getStr(step, "step_id"), err.Error()).with("step_id", getStr(step, "step_id"))
	}
	req := map[string]any{"connector_id": getStr(step, "connector_id"), "verb": getStr(step, "verb"), "request": rendered}
	if pv := getStr(step, "policy_version"); pv != "" {
		req["policy_version"] = pv
	}
	if ast := getMap(step, "query_ast_base"); ast != nil {
		req["query_ast_v1"] = ast
	}
	return req, nil
}

func (s *Sim) resolveRef(r *run, ref map[string]any) (any, error) {
	switch src := getStr(ref, "source"); src {
	case "plan_input":
		return pointerGet(r.PlanInput, getStr(ref, "path"))
	case "step_output":
		out, ok := r.Outputs[getStr(ref, "step_id")]
		if !ok {
			return nil, fmt.Errorf("step %s has no output", getStr(ref, "step_id"))
		}
		return pointerGet(out, getStr(ref, "path"))
	default:
		return ref["value"], nil
	}
}

var tmplRE = regexp.MustCompile(`\{\{\s*(step_output|plan_input):([^}]*?)\s*\}\}`)

// render replaces {{step_output:<step_id>:<pointer>}} and
// {{plan_input:<pointer>}} in every string of v.
func (s *Sim) render(r *run, v any) (map[string]any, error) {
	var firstErr error
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			return tmplRE.ReplaceAllStringFunc(t, func(m string) string {
				parts := tmplRE.FindStringSubmatch(m)
				var val any
				var err error
				if parts[1] == "plan_input" {
					val, err = pointerGet(r.PlanInput, strings.TrimSpace(parts[2]))
				} else {
					sid, ptr, _ := strings.Cut(strings.TrimSpace(parts[2]), ":")
					val, err = s.resolveRef(r, map[string]any{"source": "step_output", "step_id": sid, "path": ptr})
				}
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("template %s: %w", m, err)
					}
					return m
				}
				if sv, ok := val.(string); ok {
					return sv
				}
				raw, _ := json.Marshal(val)
				return string(raw)
			})
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	out := walk(v).(map[string]any)
	return out, firstErr
}

func (s *Sim) nextStepLocked(r *run, step map[string]any) (string, *apiError) {
	branches, _ := step["success_branches"].([]any)
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		if s.evalPredicate(r, bm["when"]) {
			return getStr(bm, "next_step_id"), nil
		}
	}
	return getStr(step, "default_success_next_step_id"), nil
}

// evalPredicate supports and/or/not over exists/eq/ne/truthy leaves whose
// ref is resolved like a binding ref.
func (s *Sim) evalPredicate(r *run, p any) bool {
	m, ok := p.(map[string]any)
	if !ok {
		return p == true
	}
	args, _ := m["args"].([]any)
	switch strings.ToLower(getStr(m, "op")) {
	case "and":
		for _, a := range args {
			if !s.evalPredicate(r, a) {
				return false
			}
		}
		return true
	case "or":
		for _, a := range args {
			if s.evalPredicate(r, a) {
				return true
			}
		}
		return false
	case "not":
		return len(args) > 0 && !s.evalPredicate(r, args[0])
	case "exists":
		v, err := s.resolveRef(r, getMap(m, "ref"))
		return err == nil && v != nil && v != ""
	case "eq", "ne":
		v, err := s.resolveRef(r, getMap(m, "ref"))
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(m["value"])
		eq := err == nil && string(a) == string(b)
		return eq == (strings.ToLower(getStr(m, "op")) == "eq")
	case "truthy":
		v, err := s.resolveRef(r, getMap(m, "ref"))
		return err == nil && v != nil && v != false && v != "" && v != 0.0
	}
	return false
}

// JSON pointers (RFC 6901, arrays included).

func unescapePtr(seg string) string {
	return strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
}

func pointerGet(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("pointer %q must start with /", ptr)
	}
	cur := doc
	for raw := range strings.SplitSeq(ptr[1:], "/") {
		seg := unescapePtr(raw)
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[seg]
			if !ok {
				return nil, fmt.Errorf("%s not found", ptr)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("%s not found", ptr)
			}
			cur = t[i]
		default:
			return nil, fmt.Errorf("%s not found", ptr)
		}
	}
	return cur, nil
}

func pointerSet(doc map[string]any, ptr string, v any) error {
	if !strings.HasPrefix(ptr, "/") {
		return fmt.Errorf("pointer %q must start with /", ptr)
	}
	segs := strings.Split(ptr[1:], "/")
	var cur any = doc
	for i, raw := range segs {
		seg := unescapePtr(raw)
		last := i == len(segs)-1
		switch t := cur.(type) {
		case map[string]any:
			if last {
				t[seg] = v
				return nil
			}
			next, ok := t[seg]
			if !ok || next == nil {
				next = map[string]any{}
				t[seg] = next
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(t) {
				return fmt.Errorf("pointer conflict at %s", seg)
			}
			if last {
				t[idx] = v
				return nil
			}
			cur = t[idx]
		default:
			return fmt.Errorf("pointer conflict at %s", seg)
		}
	}
	return nil
}

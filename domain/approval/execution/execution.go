// Package execution composes the Vault flows that can end in an approval
// handoff (execute-job, plan execute) and the wait; every handoff is stored
// as a durable handle before it is returned.
package execution

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/orchestration"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/vault"
)

// Service runs the flows. All fields but Clock are required.
type Service struct {
	Vault      *vault.Client
	ModuleHash *vault.ModuleHash
	Handles    *approval.Store
	// Clock drives waits (approval.RealClock when nil).
	Clock approval.Clock
	// Polls, when set, shares the polls of every wait and task check on
	// one job or run with the same Vault session (approval.Polls).
	Polls *approval.Polls
}

// identity keys shared polls: a digest of the session's target and token, so
// only waiters with the same credentials share a reply.
func identity(sess session.Session) string {
	h := sha256.New()
	for _, part := range []string{sess.BaseURL, sess.UnixSocket, sess.Token} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// waiter is the approval waiter of sess.
func (s *Service) waiter(sess session.Session, progress approval.Progress) approval.Waiter {
	w := approval.Waiter{API: s.ApprovalAPI(sess), Clock: s.Clock, Progress: progress, Polls: s.Polls}
	if s.Polls != nil {
		w.Identity = identity(sess)
	}
	return w
}

// Outcome is a successful flow result: the tool's data and the meta of the
// Vault call that produced it.
type Outcome struct {
	Data       map[string]any
	RequestID  string
	HTTPStatus int
}

// profileAPI binds the client to a session for orchestration.
type profileAPI struct {
	c *vault.Client
	s session.Session
}

func (p profileAPI) ProfilesList(ctx context.Context, q url.Values) (map[string]any, error) {
	r, err := p.c.ProfilesList(ctx, p.s.Endpoint(), q)
	return r.Object(), err
}

func (p profileAPI) ProfileGet(ctx context.Context, id string) (map[string]any, error) {
	r, err := p.c.ProfileGet(ctx, p.s.Endpoint(), id)
	return r.Object(), err
}

// ProfileUpsert sends the typed profile so the body keeps the documented
// field order of the predecessor's upsert.
func (p profileAPI) ProfileUpsert(ctx context.Context, profile any, key string) (map[string]any, error) {
	r, err := p.c.Do(ctx, p.s.Endpoint(), vault.Request{Method: http.MethodPost, Path: vault.PathProfileUpsert, Body: map[string]any{"profile": profile}, IdempotencyKey: key})
	return r.Object(), err
}

// ProfileAPI returns the orchestration view of the client for sess.
func (s *Service) ProfileAPI(sess session.Session) orchestration.ProfileAPI {
	return profileAPI{c: s.Vault, s: sess}
}

type approvalAPI struct {
	c *vault.Client
	s session.Session
}

func reply(r *vault.Response, err error) (approval.Reply, error) {
	if err != nil || r == nil {
		return approval.Reply{}, err
	}
	return approval.Reply{Status: r.Status, RequestID: r.RequestID, Body: r.Object()}, nil
}

func (a approvalAPI) JobGet(ctx context.Context, id string) (approval.Reply, error) {
	return reply(a.c.JobGet(ctx, a.s.Endpoint(), id))
}

func (a approvalAPI) PlanRunGet(ctx context.Context, id string) (approval.Reply, error) {
	return reply(a.c.PlanRunGet(ctx, a.s.Endpoint(), id))
}

func (a approvalAPI) PendingApprovals(ctx context.Context, q url.Values) (approval.Reply, error) {
	return reply(a.c.PendingApprovals(ctx, a.s.Endpoint(), q))
}

// ApprovalAPI returns the approval view of the client for sess.
func (s *Service) ApprovalAPI(sess session.Session) approval.API {
	return approvalAPI{c: s.Vault, s: sess}
}

// handoff stores the durable handle and returns MCP_APPROVAL_REQUIRED; the
// error carries the handle even when storing it failed.
func (s *Service) handoff(ctx context.Context, scope string, sess session.Session, h *approval.Handoff, source string) error {
	if h.Continuation.Tool == "" {
		h.Continuation.Tool = source
	}
	approval.ResolveIDs(ctx, s.ApprovalAPI(sess), h)
	e := h.Err()
	if s.Handles != nil && (h.JobID != "" || h.RunID != "") {
		if _, err := s.Handles.Save(scope, h, source); err != nil {
			e.Err.With("handle_stored", false)
		}
	}
	return e
}

// HandoffFromError turns a pending-approval error into a stored handoff (D3);
// other errors are returned unchanged.
func (s *Service) HandoffFromError(ctx context.Context, scope string, sess session.Session, err error, source string) error {
	return s.handoffFromError(ctx, scope, sess, err, approval.Continuation{Tool: source})
}

func (s *Service) handoffFromError(ctx context.Context, scope string, sess session.Session, err error, cont approval.Continuation) error {
	if h, ok := approval.FromError(err); ok {
		h.Continuation = cont
		return s.handoff(ctx, scope, sess, h, cont.Tool)
	}
	return err
}

// Validate runs module-hash preflight and one validate call. Data is
// {validation, request, module_hash}; request is a rewritten copy.
func (s *Service) Validate(ctx context.Context, sess session.Session, request map[string]any) (Outcome, error) {
	req := cloneJSON(request)
	var resp *vault.Response
	mh, err := s.ModuleHash.Run(ctx, sess.Endpoint(), req, func(ctx context.Context, req map[string]any) error {
		var err error
		resp, err = s.Vault.Validate(ctx, sess.Endpoint(), req)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{
		Data:       map[string]any{"validation": resp.Object(), "request": req, "module_hash": mh},
		RequestID:  resp.RequestID,
		HTTPStatus: resp.Status,
	}, nil
}

// Execute runs preflight, validate and execute synchronously; a pending
// approval becomes a stored handoff. key is the idempotency key ("" for a
// fresh one).
func (s *Service) Execute(ctx context.Context, scope string, sess session.Session, request map[string]any, key string) (Outcome, error) {
	req := cloneJSON(request)
	var resp *vault.Response
	keys := newActionKeys(key)
	_, err := s.ModuleHash.Run(ctx, sess.Endpoint(), req, func(ctx context.Context, req map[string]any) error {
		if _, err := s.Vault.Validate(ctx, sess.Endpoint(), req); err != nil {
			return err
		}
		var err error
		resp, err = s.Vault.Execute(ctx, sess.Endpoint(), req, keys.next())
		return err
	})
	if err != nil {
		return Outcome{}, s.handoffFromError(ctx, scope, sess, err, approval.Continuation{Tool: approval.ToolConnectorExecute, Request: req})
	}
	return Outcome{Data: resp.Object(), RequestID: resp.RequestID, HTTPStatus: resp.Status}, nil
}

// ResolveProfile returns the best profile for reqs, auto-created when none
// matches and autoCreate is set.
func (s *Service) ResolveProfile(ctx context.Context, sess session.Session, reqs []orchestration.Requirement, autoCreate bool) (map[string]any, error) {
	res, err := orchestration.NewResolver(s.ProfileAPI(sess)).Resolve(ctx, reqs, autoCreate)
	if err != nil {
		return nil, err
	}
	return res.Data(), nil
}

// cloneJSON deep-copies a decoded JSON object so preflight rewrites never
// touch the caller's arguments.
func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

// copyObject deep-copies a JSON object so callers' arguments are never
// mutated.
func copyObject(m map[string]any, field string) (map[string]any, error) {
	cp, err := orchestration.DeepCopy(m)
	if err != nil {
		return nil, apperr.Validation(field, "%s is not valid JSON: %v", field, err)
	}
	out, _ := cp.(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// ExecuteJob runs orchestration, module-hash preflight, validate (E3),
// execute-job (E5) and the handoff; request is not modified.
func (s *Service) ExecuteJob(ctx context.Context, scope string, sess session.Session, request map[string]any, opts orchestration.Options, key string) (Outcome, error) {
	req, err := copyObject(request, "request")
	if err != nil {
		return Outcome{}, err
	}
	preflight, err := orchestration.NewResolver(s.ProfileAPI(sess)).PrepareJobRequest(ctx, req, opts)
	if err != nil {
		return Outcome{}, err
	}
	var validation any
	var resp *vault.Response
	keys := newActionKeys(key)
	mh, err := s.ModuleHash.Run(ctx, sess.Endpoint(), req, func(ctx context.Context, req map[string]any) error {
		v, err := s.Vault.Validate(ctx, sess.Endpoint(), req)
		if err != nil {
			return err
		}
		validation = v.Body
		resp, err = s.Vault.ExecuteJob(ctx, sess.Endpoint(), req, keys.next())
		return err
	})
	preflight["module_hash"] = mh
	preflight["validation"] = validation
	cont := approval.Continuation{Tool: approval.ToolConnectorExecuteJob, Preflight: preflight, Request: req}
	if err != nil {
		return Outcome{}, s.handoffFromError(ctx, scope, sess, err, cont)
	}
	r, _ := reply(resp, nil)
	if h, ok := approval.DetectJob(r); ok {
		h.Continuation = cont
		return Outcome{}, s.handoff(ctx, scope, sess, h, cont.Tool)
	}
	return Outcome{
		Data:       map[string]any{"response": resp.Body, "preflight": preflight, "request": req},
		RequestID:  resp.RequestID,
		HTTPStatus: resp.Status,
	}, nil
}

// PlanExecuteInput are the arguments of plan execute.
type PlanExecuteInput struct {
	Plan map[string]any
	// PlanInput is sent when PlanInputSet, even when nil.
	PlanInput    any
	PlanInputSet bool
	// Orchestration: the passport workflow passes UnboundedProfiles false.
	Orchestration orchestration.Options
	// Undocumented pass-through arguments.
	Analysis               *bool
	AnalysisAPIKeySecretID string
	AnalysisModel          string
	// Source names the caller in the durable handle (default
	// "vaultclaw_plan_execute").
	Source string
	// BeforeSend, when set, sees the plan as it would be sent; an error stops
	// the call before anything reaches Vault.
	BeforeSend func(ctx context.Context, rendered map[string]any) error
	// IdempotencyKey is the agent's key ("" for a fresh one).
	IdempotencyKey string
}

// PlanExecute runs strict profile preflight, plan defaults, plans/execute
// (E7) and the handoff (stored under scope).
func (s *Service) PlanExecute(ctx context.Context, scope string, sess session.Session, in PlanExecuteInput) (Outcome, error) {
	if in.BeforeSend != nil {
		rendered, err := copyObject(in.Plan, "plan")
		if err != nil {
			return Outcome{}, err
		}
		vault.PlanModuleHashPreflight(rendered)
		if err := in.BeforeSend(ctx, planBody(rendered, in)); err != nil {
			return Outcome{}, err
		}
	}
	var plan map[string]any
	preflight := map[string]any{"orchestrated": in.Orchestration.UnboundedProfiles}
	if in.Orchestration.UnboundedProfiles {
		out, res, err := orchestration.NewResolver(s.ProfileAPI(sess)).PreflightPlan(ctx, in.Plan, in.PlanInput,
			orchestration.PlanOptions{Strict: true, AutoCreate: in.Orchestration.AutoCreate, PlanInputSet: in.PlanInputSet})
		if err != nil {
			return Outcome{}, err
		}
		plan = out
		preflight["resolutions"] = res
	} else {
		var err error
		if plan, err = copyObject(in.Plan, "plan"); err != nil {
			return Outcome{}, err
		}
	}
	preflight["module_hash"] = vault.PlanModuleHashPreflight(plan)
	body := planBody(plan, in)
	source := in.Source
	if source == "" {
		source = "vaultclaw_plan_execute"
	}
	resp, err := s.Vault.PlanExecute(ctx, sess.Endpoint(), body, newActionKeys(in.IdempotencyKey).next())
	cont := approval.Continuation{Tool: source, Preflight: preflight, Plan: plan}
	if err != nil {
		return Outcome{}, s.handoffFromError(ctx, scope, sess, err, cont)
	}
	r, _ := reply(resp, nil)
	if h, ok := approval.DetectPlan(r); ok {
		h.Continuation = cont
		return Outcome{}, s.handoff(ctx, scope, sess, h, source)
	}
	return Outcome{
		Data:       map[string]any{"response": resp.Body, "preflight": preflight, "plan": plan},
		RequestID:  resp.RequestID,
		HTTPStatus: resp.Status,
	}, nil
}

// planBody is the plans/execute request for plan.
func planBody(plan map[string]any, in PlanExecuteInput) map[string]any {
	body := map[string]any{"plan": plan}
	if in.PlanInputSet {
		body["plan_input"] = in.PlanInput
	}
	if in.Analysis != nil {
		body["analysis"] = *in.Analysis
	}
	if in.AnalysisAPIKeySecretID != "" {
		body["analysis_api_key_secret_id"] = in.AnalysisAPIKeySecretID
	}
	if in.AnalysisModel != "" {
		body["analysis_model"] = in.AnalysisModel
	}
	return body
}

// PlanValidate runs vaultclaw_plan_validate: plan defaults (no module hash)
// and E6 with body {plan}.
func (s *Service) PlanValidate(ctx context.Context, sess session.Session, plan map[string]any) (Outcome, error) {
	p, err := copyObject(plan, "plan")
	if err != nil {
		return Outcome{}, err
	}
	vault.PlanModuleHashPreflight(p)
	resp, err := s.Vault.PlanValidate(ctx, sess.Endpoint(), p)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Data: resp.Object(), RequestID: resp.RequestID, HTTPStatus: resp.Status}, nil
}

// PreviewPlan runs the non-strict preflight without auto-create.
func (s *Service) PreviewPlan(ctx context.Context, sess session.Session, plan map[string]any, planInput any, planInputSet bool) (map[string]any, error) {
	out, res, err := orchestration.NewResolver(s.ProfileAPI(sess)).PreflightPlan(ctx, plan, planInput, orchestration.PlanOptions{PlanInputSet: planInputSet})
	if err != nil {
		return nil, err
	}
	return map[string]any{"resolutions": res, "transformed_plan": out}, nil
}

// Wait waits on h and records what it saw in the durable handle, whether
// the wait ended, timed out or was cancelled.
func (s *Service) Wait(ctx context.Context, scope string, sess session.Session, h approval.Handle, opts approval.WaitOptions, progress approval.Progress) (map[string]any, error) {
	res, err := s.Await(ctx, scope, sess, h, opts, progress)
	if err != nil {
		return nil, err
	}
	return res.Data(), nil
}

// Await is Wait returning the last state seen: terminal on success; on
// MCP_WAIT_TIMEOUT or cancellation, the latest one.
func (s *Service) Await(ctx context.Context, scope string, sess session.Session, h approval.Handle, opts approval.WaitOptions, progress approval.Progress) (approval.WaitResult, error) {
	res, err := s.waiter(sess, progress).Wait(ctx, h, opts)
	if s.Handles != nil && res.Polls > 0 {
		_, _ = s.Handles.Observe(scope, res)
	}
	return res, err
}

// Check polls h once (or takes a newer shared poll's state) and records it
// in the durable handle.
func (s *Service) Check(ctx context.Context, scope string, sess session.Session, h approval.Handle, cur *approval.Cursor) (approval.WaitResult, error) {
	res, err := s.waiter(sess, nil).Check(ctx, h, cur)
	if s.Handles != nil && err == nil {
		_, _ = s.Handles.Observe(scope, res)
	}
	return res, err
}

// Finish is the answer a handed-off call gives once Vault has decided, the
// one the call would have given had the decision come before it returned:
// a denied or expired approval is MCP_APPROVAL_DENIED; otherwise the tool's
// success data built from the decided job or run (execute: Vault's execute
// body, or the error the job failed with; execute-job and plan execute:
// {response, preflight, request|plan}, with Vault's job or run reply as
// the response). res must be terminal. The passport workflow finishes in
// its own package.
func (s *Service) Finish(c approval.Continuation, res approval.WaitResult) (Outcome, error) {
	if res.Outcome == approval.OutcomeDeny {
		return Outcome{}, approval.DeniedError(res)
	}
	out := Outcome{RequestID: res.RequestID, HTTPStatus: res.HTTPStatus}
	switch c.Tool {
	case approval.ToolConnectorExecute:
		return finishExecute(res)
	case approval.ToolConnectorExecuteJob:
		out.Data = map[string]any{"response": res.Body, "preflight": c.Preflight, "request": c.Request}
	case approval.ToolPlanExecute:
		out.Data = map[string]any{"response": res.Body, "preflight": c.Preflight, "plan": c.Plan}
	default:
		return Outcome{}, apperr.Internal("finish approval", fmt.Errorf("no way to finish a %q call", c.Tool))
	}
	return out, nil
}

// finishExecute rebuilds the synchronous execute answer from the job Vault
// ran once approved: its execute body on success, its error otherwise.
func finishExecute(res approval.WaitResult) (Outcome, error) {
	job := res.Job
	status, _ := job["status"].(string)
	if strings.EqualFold(status, "SUCCEEDED") {
		body := map[string]any{"status": strings.ToUpper(status)}
		for _, k := range []string{"job_id", "connector_id", "verb", "result"} {
			if v, ok := job[k]; ok {
				body[k] = v
			}
		}
		return Outcome{Data: body, RequestID: res.RequestID, HTTPStatus: res.HTTPStatus}, nil
	}
	je, _ := job["error"].(map[string]any)
	code, _ := je["code"].(string)
	msg, _ := je["message"].(string)
	if code == "" {
		code = "JOB_" + strings.ToUpper(status)
	}
	if msg == "" {
		msg = fmt.Sprintf("the approved job ended %s", strings.ToUpper(status))
	}
	details, _ := je["details"].(map[string]any)
	return Outcome{}, vault.MapError(vault.APIError{Status: res.HTTPStatus, Code: code, Message: msg, Details: details, RequestID: res.RequestID})
}

// actionKeys are one action's Idempotency-Keys (D17): the agent's key (or a
// fresh one) first; the module-hash retry sends a different body, so it
// gets a key derived from the first, the same on every retry of the call.
type actionKeys struct {
	base string
	n    int
}

func newActionKeys(key string) *actionKeys {
	if key = strings.TrimSpace(key); key == "" {
		key = vault.NewID()
	}
	return &actionKeys{base: key}
}

func (k *actionKeys) next() string {
	k.n++
	if k.n == 1 {
		return k.base
	}
	return fmt.Sprintf("%s.retry%d", k.base, k.n-1)
}

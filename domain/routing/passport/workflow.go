package passport

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/approval/orchestration"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/vault"
)

// Sessions resolves the Vault session of a scope.
type Sessions interface {
	Resolve(ctx context.Context, scope string) (session.Session, error)
}

// Service runs the workflow. Sessions, Vault, ModuleHash and Exec are
// required.
type Service struct {
	Sessions   Sessions
	Vault      *vault.Client
	ModuleHash *vault.ModuleHash
	Exec       *execution.Service
	// RunWait bounds how long a plan run still RUNNING after submission is
	// polled before the workflow reports it as in progress (default 10 s).
	RunWait time.Duration
	// PollInterval between run polls (default 250 ms).
	PollInterval time.Duration
}

// Input are the arguments of vaultclaw_passport_email_workflow.
type Input struct {
	RequestText        string
	RecipientEmail     string
	Subject            string
	BodyStyle          string
	PassportDocumentID string
	ManualFields       map[string]any
	// Execute defaults to true.
	Execute *bool
	// RunID resumes a submitted run (after an approval or while running).
	RunID string
	// BeforeSend sees the plan execute request before it is sent (the
	// gateway's pre-execution rules); an error stops the workflow.
	BeforeSend func(ctx context.Context, rendered map[string]any) error
}

// Result is a successful outcome with the meta of the Vault call behind it.
type Result struct {
	Data       map[string]any
	RequestID  string
	HTTPStatus int
}

// Statuses of a successful result.
const (
	StatusReady   = "READY_TO_SEND"
	StatusSent    = "SENT"
	StatusRunning = "RUNNING"
)

// MaxRequestBytes bounds request_text (the same bound as the resolver's).
const MaxRequestBytes = 16 << 10

var styles = map[string]bool{"": true, "formal": true, "casual": true, "concise": true, "detailed": true}

type request struct {
	recipient, subject, style, docID string
	manual                           map[string]string
}

func (r request) resumeArgs() map[string]any {
	return map[string]any{"recipient_email": r.recipient, "subject": r.subject, "body_style": r.style}
}

// Run executes the workflow for scope.
func (s *Service) Run(ctx context.Context, scope string, in Input) (Result, error) {
	if len(in.RequestText) > MaxRequestBytes {
		return Result{}, apperr.Validation("request_text", "request_text is longer than %d bytes", MaxRequestBytes)
	}
	req := request{recipient: strings.TrimSpace(in.RecipientEmail)}
	if req.recipient == "" {
		req.recipient = reEmailAnywhere.FindString(in.RequestText)
	}
	// The whole value must be one address (the predecessor accepted any
	// text containing one).
	if !reEmailExact.MatchString(req.recipient) {
		return Result{}, apperr.New(apperr.CodeRecipientRequired, "a recipient e-mail address is required").
			With("next_action", "ASK_USER_FOR_RECIPIENT_EMAIL")
	}
	req.style = strings.ToLower(strings.TrimSpace(in.BodyStyle))
	if req.style == "" {
		req.style = detectStyle(in.RequestText)
	}
	if !styles[req.style] {
		return Result{}, apperr.Validation("body_style", "body_style must be one of formal, casual, concise, detailed")
	}
	req.subject = strings.TrimSpace(in.Subject)
	if req.subject == "" {
		req.subject = parseSubject(in.RequestText)
	}
	if req.subject == "" {
		req.subject = DefaultSubject
	}
	var err error
	if req.manual, err = manualFields(in.ManualFields); err != nil {
		return Result{}, err
	}
	sess, err := s.Sessions.Resolve(ctx, scope)
	if err != nil {
		return Result{}, err
	}
	if id := strings.TrimSpace(in.RunID); id != "" {
		return s.resume(ctx, scope, sess, req, id)
	}
	if req.docID, err = s.documentID(ctx, sess, req, strings.TrimSpace(in.PassportDocumentID)); err != nil {
		return Result{}, err
	}
	execute := in.Execute == nil || *in.Execute
	if !execute {
		// No side effects: nothing is read or extracted before the user
		// confirms; the plan reads the profile itself.
		return Result{Data: s.data(req, req.manual, StatusReady)}, nil
	}
	fields, err := s.resolveFields(ctx, scope, sess, req)
	if err != nil {
		return Result{}, err
	}
	data := s.data(req, fields, "")
	summary := data["pre_send_summary"]
	out, err := s.Exec.PlanExecute(ctx, scope, sess, execution.PlanExecuteInput{
		Plan: data["plan"].(map[string]any), PlanInput: data["plan_input"], PlanInputSet: true,
		Orchestration: orchestration.Options{UnboundedProfiles: false, AutoCreate: true}, Source: ToolName,
		BeforeSend: in.BeforeSend,
	})
	if err != nil {
		err = sendFailure(err, summary, req)
		if h := approval.HandoffOf(err); h != nil && h.Continuation.Tool == ToolName {
			h.Continuation.Data = data
		}
		return Result{}, err
	}
	return s.finish(ctx, scope, sess, req, data, out.Data, out.RequestID, out.HTTPStatus)
}

func manualFields(in map[string]any) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range slotKeys() {
		out[k] = ""
	}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if _, ok := out[k]; !ok {
			return nil, apperr.Validation("manual_fields."+k, "manual_fields.%s is not a passport field (use %s)", k, strings.Join(slotKeys(), ", "))
		}
		if s, ok := in[k].(string); ok {
			out[k] = strings.TrimSpace(s)
		}
	}
	return out, nil
}

func uploadRequired(req request, vaultCode string) *apperr.Error {
	e := apperr.New(apperr.CodeDocumentUploadRequired, "no passport document is on file for subject self")
	e.VaultCode = vaultCode
	return e.With("action", map[string]any{
		"type":                 "UPLOAD_DOCUMENT",
		"title":                "Upload Passport",
		"message":              "Upload a document of type identity.passport for subject self, then retry this workflow.",
		"document_requirement": map[string]any{"type_id": DocumentTypeID, "subject_id": DocumentSubject},
		"resume_arguments":     req.resumeArgs(),
	})
}

func (s *Service) documentID(ctx context.Context, sess session.Session, req request, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	resp, err := s.Vault.DocTypesLatest(ctx, sess.Endpoint(), DocumentTypeID, DocumentSubject)
	if err != nil {
		if vault.ErrorVaultCode(err) == "DOCUMENT_SLOT_UNRESOLVED" {
			return "", uploadRequired(req, "DOCUMENT_SLOT_UNRESOLVED").WithCause(err)
		}
		ae := apperr.As(err)
		e := apperr.New(apperr.CodeDocumentResolutionFailed, "could not look up the passport document: %s", ae.Message).WithCause(err)
		e.Retryable, e.VaultCode = ae.Retryable, ae.VaultCode
		return "", e.With("upstream_error", upstream(ae))
	}
	body := resp.Object()
	id, _ := body["document_id"].(string)
	if strings.TrimSpace(id) == "" {
		item, _ := body["item"].(map[string]any)
		id, _ = item["document_id"].(string)
	}
	if strings.TrimSpace(id) == "" {
		return "", uploadRequired(req, "")
	}
	return strings.TrimSpace(id), nil
}

func upstream(ae *apperr.Error) map[string]any {
	return map[string]any{"code": ae.Code, "category": ae.Category, "message": ae.Message, "vault_code": ae.VaultCode, "retryable": ae.Retryable}
}

// data is the success payload shared by READY_TO_SEND, SENT and RUNNING.
func (s *Service) data(req request, fields map[string]string, status string) map[string]any {
	plan, body, bodyAlt := buildPlan(req.style, req.manual)
	summaryFields := make([]any, 0, len(Slots))
	resolved := map[string]any{}
	for _, sl := range Slots {
		summaryFields = append(summaryFields, map[string]any{"slot": sl.Key, "label": sl.Label, "value": fields[sl.Key]})
		resolved[sl.Key] = fields[sl.Key]
	}
	slots := make([]any, 0, len(Slots))
	for _, k := range slotKeys() {
		slots = append(slots, k)
	}
	d := map[string]any{
		"pre_send_summary": map[string]any{
			"recipient": req.recipient, "subject": req.subject, "fields": summaryFields,
			"attachment": map[string]any{"type_id": DocumentTypeID},
			"note":       "A passport document of type identity.passport will be attached.",
		},
		"resolved_fields":   resolved,
		"composed_text":     body,
		"composed_text_alt": bodyAlt,
		"plan":              plan,
		"plan_input":        planInput(req.docID, req.recipient, req.subject, req.manual),
		"document_type_id":  DocumentTypeID,
		"document_subject":  DocumentSubject,
		"document_id":       req.docID,
		"required_slot_set": slots,
	}
	if status != "" {
		d["status"] = status
	}
	return d
}

// identity runs one identity verb synchronously (E4) with the module-hash
// preflight, returning the response body.
func (s *Service) identity(ctx context.Context, sess session.Session, verb string, payload map[string]any) (map[string]any, error) {
	req := map[string]any{"connector_id": "identity", "verb": verb, "policy_version": "1", "request": payload}
	var resp *vault.Response
	_, err := s.ModuleHash.Run(ctx, sess.Endpoint(), req, func(ctx context.Context, req map[string]any) error {
		var err error
		resp, err = s.Vault.Execute(ctx, sess.Endpoint(), req, "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.Object(), nil
}

// slotValues collects the first non-blank string under each slot's key,
// breadth first in sorted key order (deterministic).
func slotValues(body map[string]any) map[string]string {
	out := map[string]string{}
	queue := []map[string]any{body}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch v := m[k].(type) {
			case string:
				if _, isSlot := out[k]; !isSlot && labelOf(k) != k && strings.TrimSpace(v) != "" {
					out[k] = strings.TrimSpace(v)
				}
			case map[string]any:
				queue = append(queue, v)
			case []any:
				for _, e := range v {
					if em, ok := e.(map[string]any); ok {
						queue = append(queue, em)
					}
				}
			}
		}
	}
	return out
}

func (s *Service) readProfile(ctx context.Context, scope string, sess session.Session, req request) (map[string]string, error) {
	body, err := s.identity(ctx, sess, profileRead, identityBase(map[string]any{"slots": anySlots()}))
	if err != nil {
		if herr := s.Exec.HandoffFromError(ctx, scope, sess, err, ToolName); apperr.Is(herr, apperr.CodeApprovalRequired) {
			return nil, herr
		}
		ae := apperr.As(err)
		e := apperr.New(apperr.CodePassportProfileReadFailed, "could not read the passport fields from the identity profile: %s", ae.Message).WithCause(err)
		e.Retryable, e.VaultCode = ae.Retryable, ae.VaultCode
		return nil, e.With("upstream_error", upstream(ae)).With("resume_arguments", req.resumeArgs())
	}
	return slotValues(body), nil
}

func anySlots() []any {
	out := []any{}
	for _, k := range slotKeys() {
		out = append(out, k)
	}
	return out
}

// resolveFields reads the profile and runs extraction when a field is
// missing or differs from the user's; precedence: manual > extracted > read.
func (s *Service) resolveFields(ctx context.Context, scope string, sess session.Session, req request) (map[string]string, error) {
	before, err := s.readProfile(ctx, scope, sess, req)
	if err != nil {
		return nil, err
	}
	need := false
	for _, k := range slotKeys() {
		if before[k] == "" && req.manual[k] == "" || req.manual[k] != "" && req.manual[k] != before[k] {
			need = true
		}
	}
	after := map[string]string{}
	if need {
		extracted := map[string]any{}
		for k, v := range req.manual {
			if v != "" {
				extracted[k] = v
			}
		}
		_, err := s.identity(ctx, sess, extractionRun, identityBase(map[string]any{"slots": anySlots(),
			"provider": "aws.textract.v1", "mode": "ANALYZE_AND_SAVE", "document_id": req.docID, "extracted_fields": extracted}))
		// CONFLICT means the extraction was already persisted.
		if err != nil && vault.ErrorVaultCode(err) != "CONFLICT" {
			if herr := s.Exec.HandoffFromError(ctx, scope, sess, err, ToolName); apperr.Is(herr, apperr.CodeApprovalRequired) {
				return nil, herr
			}
			ae := apperr.As(err)
			e := apperr.New(apperr.CodePassportExtractionFailed, "could not extract the passport fields from document %s: %s", req.docID, ae.Message).WithCause(err)
			e.Retryable, e.VaultCode = ae.Retryable, ae.VaultCode
			return nil, e.With("upstream_error", upstream(ae)).With("document_id", req.docID).With("resume_arguments", req.resumeArgs())
		}
		if after, err = s.readProfile(ctx, scope, sess, req); err != nil {
			return nil, err
		}
	}
	merged := map[string]string{}
	var missing []any
	for _, k := range slotKeys() {
		switch {
		case req.manual[k] != "":
			merged[k] = req.manual[k]
		case after[k] != "":
			merged[k] = after[k]
		default:
			merged[k] = before[k]
		}
	}
	keys := slotKeys()
	sort.Strings(keys)
	for _, k := range keys {
		if merged[k] == "" {
			missing = append(missing, map[string]any{"key": k, "label": labelOf(k)})
		}
	}
	if len(missing) > 0 {
		resume := req.resumeArgs()
		resume["passport_document_id"] = req.docID
		resolved := map[string]any{}
		for k, v := range merged {
			resolved[k] = v
		}
		return nil, apperr.New(apperr.CodeManualFieldsRequired, "%d passport field(s) could not be read from the document; provide them as manual_fields", len(missing)).
			With("action", map[string]any{"type": "COLLECT_PASSPORT_FIELDS", "title": "Provide Missing Passport Fields",
				"missing_fields": missing, "resume_arguments": resume}).
			With("resolved_fields", resolved)
	}
	return merged, nil
}

func sendFailure(err error, summary any, req request) error {
	if apperr.Is(err, apperr.CodeApprovalRequired) {
		// err keeps its typed approval for the renderer; its details are
		// the envelope's.
		ae := apperr.As(err)
		ae.With("pre_send_summary", summary)
		if a := approval.ApprovalOf(err); a != nil && a.RunID != "" {
			resume := req.resumeArgs()
			resume["run_id"] = a.RunID
			ae.With("resume_arguments", resume)
			if h := approval.HandoffOf(err); h != nil {
				// Once approved, the run is finished by resuming it.
				h.Continuation = approval.Continuation{Tool: ToolName, ResumeArguments: maps.Clone(resume)}
			}
		}
		return err
	}
	ae := apperr.As(err)
	e := apperr.New(apperr.CodeGmailDraftSendFailed, "I couldn't create and send the Gmail draft. Please retry.").WithCause(err)
	e.Retryable, e.VaultCode = ae.Retryable, ae.VaultCode
	return e.With("pre_send_summary", summary).With("upstream_error", upstream(ae))
}

// runState reads the run state (or job status) of a plans/execute or run
// get body.
func runState(body map[string]any) (state, runID, jobID, code string) {
	run, _ := body["run"].(map[string]any)
	job, _ := body["job"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	state, runID, jobID, code = str(run, "state"), str(run, "run_id"), str(run, "job_id"), str(run, "last_error_code")
	if state == "" {
		state = str(job, "status")
	}
	if state == "" {
		state = str(body, "state")
	}
	if runID == "" {
		runID = str(body, "run_id")
	}
	if jobID == "" {
		jobID = str(body, "job_id")
	}
	if jobID == "" {
		jobID = str(job, "job_id")
	}
	if code == "" {
		code = str(job, "error_code")
	}
	return strings.ToUpper(state), runID, jobID, code
}

// finish reports SENT only once an accepted run succeeded; a run still
// going is polled briefly, then reported RUNNING with resume arguments.
func (s *Service) finish(ctx context.Context, scope string, sess session.Session, req request, data, execData map[string]any, reqID string, status int) (Result, error) {
	body, _ := execData["response"].(map[string]any)
	state, runID, jobID, code := runState(body)
	wait := s.RunWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	poll := s.PollInterval
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	for !approval.IsTerminal(state) && state != "PENDING_APPROVAL" && runID != "" && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return Result{}, apperr.New(apperr.CodeGmailDraftSendFailed, "the request was cancelled while the Gmail draft run was in progress").
				With("run_id", runID).With("pre_send_summary", data["pre_send_summary"])
		case <-time.After(poll):
		}
		resp, err := s.Vault.PlanRunGet(ctx, sess.Endpoint(), runID)
		if err != nil {
			break
		}
		body = resp.Object()
		reqID, status = resp.RequestID, resp.Status
		execData = map[string]any{"response": body, "preflight": execData["preflight"], "plan": execData["plan"]}
		state, _, jobID, code = runState(body)
	}
	return s.report(ctx, scope, sess, req, data, execData, body, state, runID, jobID, code, reqID, status)
}

func (s *Service) report(ctx context.Context, scope string, sess session.Session, req request, data, execData, body map[string]any,
	state, runID, jobID, code, reqID string, status int) (Result, error) {
	summary := data["pre_send_summary"]
	switch {
	case state == "SUCCEEDED":
		data["status"] = StatusSent
		data["execution"] = execData
		return Result{Data: data, RequestID: reqID, HTTPStatus: status}, nil
	case state == "PENDING_APPROVAL" || approval.RunOutcome(asMap(body["run"]), asMap(body["job"])) == approval.OutcomePending && asMap(body["pending_approval"]) != nil:
		h, ok := approval.DetectPlan(approval.Reply{Status: status, RequestID: reqID, Body: body})
		if ok {
			approval.ResolveIDs(ctx, s.Exec.ApprovalAPI(sess), h)
			return Result{}, sendFailure(h.Err(), summary, req)
		}
	case approval.IsTerminal(state):
		e := apperr.New(apperr.CodeGmailDraftSendFailed, "I couldn't create and send the Gmail draft: the plan run ended %s. Please retry.", state)
		e.VaultCode = code
		return Result{}, e.With("pre_send_summary", summary).With("run_status", state).With("run_id", runID).
			With("job_id", jobID).With("last_error_code", code)
	}
	resume := req.resumeArgs()
	resume["run_id"] = runID
	data["status"] = StatusRunning
	data["execution"] = execData
	data["run"] = map[string]any{"run_id": runID, "job_id": jobID, "state": state}
	data["next_action"] = map[string]any{"tool": ToolName, "arguments": resume,
		"message": fmt.Sprintf("The draft run %s is still %s; call again with run_id to check.", runID, strings.ToLower(state))}
	return Result{Data: data, RequestID: reqID, HTTPStatus: status}, nil
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// resume checks a submitted run (after an approval, or while running).
func (s *Service) resume(ctx context.Context, scope string, sess session.Session, req request, runID string) (Result, error) {
	resp, err := s.Vault.PlanRunGet(ctx, sess.Endpoint(), runID)
	if err != nil {
		return Result{}, sendFailure(err, nil, req)
	}
	data := map[string]any{"run_id": runID, "pre_send_summary": map[string]any{"recipient": req.recipient, "subject": req.subject,
		"attachment": map[string]any{"type_id": DocumentTypeID}}, "document_type_id": DocumentTypeID, "document_subject": DocumentSubject}
	execData := map[string]any{"response": resp.Object()}
	return s.finish(ctx, scope, sess, req, data, execData, resp.RequestID, resp.Status)
}

// Finish answers once Vault decided the run's approval: MCP_APPROVAL_DENIED
// when denied or expired, else the result of resuming with c's arguments.
func (s *Service) Finish(ctx context.Context, scope string, c approval.Continuation, res approval.WaitResult) (Result, error) {
	if res.Outcome == approval.OutcomeDeny {
		return Result{}, approval.DeniedError(res)
	}
	arg := func(k string) string { v, _ := c.ResumeArguments[k].(string); return v }
	r, err := s.Run(ctx, scope, Input{RunID: arg("run_id"), RecipientEmail: arg("recipient_email"), Subject: arg("subject"), BodyStyle: arg("body_style")})
	if err != nil || c.Data == nil || r.Data["status"] != StatusSent {
		return r, err
	}
	// SENT: what the call would have answered had it not waited, the
	// composed message with the execution that sent it.
	out := maps.Clone(c.Data)
	out["status"], out["execution"] = StatusSent, r.Data["execution"]
	r.Data = out
	return r, nil
}

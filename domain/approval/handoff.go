package approval

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Reply is a successful Vault response as this package needs it.
type Reply struct {
	Status    int
	RequestID string
	// Body is the decoded JSON object, or nil.
	Body map[string]any
}

// API is the slice of the Vaultclaw client approvals need, bound to a
// session by the caller. Errors are normalised *apperr.Error values.
type API interface {
	// JobGet is E9 GET /v0/jobs/{job_id}.
	JobGet(ctx context.Context, jobID string) (Reply, error)
	// PlanRunGet is E8 GET /v0/connectors/plans/runs/{run_id}.
	PlanRunGet(ctx context.Context, runID string) (Reply, error)
	// PendingApprovals is E10 GET /v0/connectors/approvals/pending.
	PendingApprovals(ctx context.Context, q url.Values) (Reply, error)
}

// Handle identifies what to wait on: the handle argument of
// vaultclaw_approval_wait.
type Handle struct {
	Kind        string `json:"kind"`
	JobID       string `json:"job_id"`
	RunID       string `json:"run_id"`
	ChallengeID string `json:"challenge_id"`
	PendingID   string `json:"pending_id"`
}

// Full has all five keys, empty strings included (next_action form).
func (h Handle) Full() map[string]any {
	return map[string]any{"kind": h.Kind, "job_id": h.JobID, "run_id": h.RunID, "challenge_id": h.ChallengeID, "pending_id": h.PendingID}
}

// Compact omits empty keys (wait result form).
func (h Handle) Compact() map[string]any {
	out := map[string]any{"kind": h.Kind}
	for k, v := range map[string]string{"job_id": h.JobID, "run_id": h.RunID, "challenge_id": h.ChallengeID, "pending_id": h.PendingID} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// Key identifies the handle in the durable store: the id the wait polls.
func (h Handle) Key() string {
	if h.Kind == KindPlanRun {
		return KindPlanRun + ":" + h.RunID
	}
	return KindJob + ":" + h.JobID
}

// NormalizeHandle trims the handle of a wait request, upper-cases its kind
// and checks that the id its kind waits on is present.
func NormalizeHandle(in Handle) (Handle, error) {
	h := Handle{Kind: strings.ToUpper(strings.TrimSpace(in.Kind)), JobID: strings.TrimSpace(in.JobID), RunID: strings.TrimSpace(in.RunID),
		ChallengeID: strings.TrimSpace(in.ChallengeID), PendingID: strings.TrimSpace(in.PendingID)}
	switch h.Kind {
	case KindJob:
		if h.JobID == "" {
			return h, apperr.Validation("handle.job_id", "handle.job_id is required for JOB wait")
		}
	case KindPlanRun:
		if h.RunID == "" {
			return h, apperr.Validation("handle.run_id", "handle.run_id is required for PLAN_RUN wait")
		}
	default:
		return h, apperr.Validation("handle.kind", "handle.kind must be JOB or PLAN_RUN").With("allowed", []string{KindJob, KindPlanRun})
	}
	return h, nil
}

// Handoff is a detected pending approval.
type Handoff struct {
	Handle
	ExpiresAtUnixMS      int64
	PendingApproval      map[string]any
	RemoteAttestationURL string
	// VaultCode is the approval code Vault reported (details.vault.vault_code).
	VaultCode  string
	RequestID  string
	HTTPStatus int
	// Response is the full Vault body (or the vault_error of an HTTP error).
	Response any
	// FromHTTPError marks a handoff recovered from a >= 400 approval error.
	FromHTTPError bool
	// Continuation finishes the handed-off call once Vault decides; the
	// envelope never shows it.
	Continuation Continuation
	// cause is the original error of an HTTP-error handoff.
	cause *apperr.Error
}

func (h *Handoff) fillFromPending(pa map[string]any) {
	h.PendingApproval = pa
	if h.PendingID == "" {
		h.PendingID = str(pa["pending_id"])
	}
	if h.ChallengeID == "" {
		h.ChallengeID = str(obj(pa["challenge"])["challenge_id"])
	}
	if h.ChallengeID == "" {
		h.ChallengeID = str(pa["challenge_id"])
	}
	h.RemoteAttestationURL = str(pa["remote_attestation_url"])
}

// DetectJob recognises a pending approval in an execute-job (E5) reply.
func DetectJob(r Reply) (*Handoff, bool) {
	job := obj(r.Body["job"])
	if r.Status >= 400 || job == nil || upper(job["status"]) != "PENDING" {
		return nil, false
	}
	code := errorCode(job)
	pa := obj(job["pending_approval"])
	if !IsApprovalRequiredCode(code) && len(pa) == 0 {
		return nil, false
	}
	h := &Handoff{Handle: Handle{Kind: KindJob, JobID: str(job["job_id"])}, ExpiresAtUnixMS: int64Of(job["pending_expires_at_unix_ms"]),
		VaultCode: code, RequestID: r.RequestID, HTTPStatus: r.Status, Response: r.Body}
	if len(pa) > 0 {
		h.fillFromPending(pa)
	}
	return h, true
}

// DetectPlan recognises a pending approval in a plans/execute (E7) reply,
// shape A (with a run object) or shape B (flat).
func DetectPlan(r Reply) (*Handoff, bool) {
	if r.Status >= 400 || r.Body == nil {
		return nil, false
	}
	job := obj(r.Body["job"])
	pa := obj(r.Body["pending_approval"])
	if len(pa) == 0 {
		pa = obj(job["pending_approval"])
	}
	jobPending := upper(job["status"]) == "PENDING"
	jobCode := errorCode(job)
	h := &Handoff{Handle: Handle{Kind: KindPlanRun}, ExpiresAtUnixMS: int64Of(job["pending_expires_at_unix_ms"]),
		RequestID: r.RequestID, HTTPStatus: r.Status, Response: r.Body}
	if run := obj(r.Body["run"]); run != nil {
		h.RunID = str(run["run_id"])
		if h.RunID == "" {
			h.RunID = str(r.Body["run_id"])
		}
		if h.RunID == "" {
			return nil, false
		}
		runPending := upper(run["state"]) == "PENDING_APPROVAL"
		code := str(run["last_error_code"])
		if code == "" {
			code = jobCode
		}
		required := runPending || IsApprovalRequiredCode(code) ||
			(len(pa) > 0 && (jobPending || runPending)) ||
			(jobPending && IsApprovalRequiredCode(jobCode))
		if !required {
			return nil, false
		}
		h.JobID = str(run["job_id"])
		if h.JobID == "" {
			h.JobID = str(job["job_id"])
		}
		h.VaultCode = code
		if len(pa) > 0 {
			h.fillFromPending(pa)
		}
		if h.ChallengeID == "" {
			h.ChallengeID = str(run["challenge_id"])
		}
		return h, true
	}
	h.RunID = str(r.Body["run_id"])
	if h.RunID == "" || job == nil || !jobPending || (!IsApprovalRequiredCode(jobCode) && len(pa) == 0) {
		return nil, false
	}
	h.JobID = str(job["job_id"])
	h.VaultCode = jobCode
	if len(pa) > 0 {
		h.fillFromPending(pa)
	}
	return h, true
}

// FromError recovers a handoff from a Vault error whose details carry
// pending-approval information (D3).
func FromError(err error) (*Handoff, bool) {
	ae, ok := err.(*apperr.Error)
	if !ok || ae == nil || ae.Code != apperr.CodeApprovalRequired {
		return nil, false
	}
	ve := obj(ae.Details["vault_error"])
	vd := obj(ve["details"])
	job := obj(vd["job"])
	run := obj(vd["run"])
	pa := obj(vd["pending_approval"])
	if len(pa) == 0 {
		pa = obj(job["pending_approval"])
	}
	h := &Handoff{FromHTTPError: true, cause: ae, VaultCode: ae.VaultCode, RequestID: str(ae.Details["request_id"]), Response: ve}
	if s, ok := ae.Details["vault_http_status"].(int); ok {
		h.HTTPStatus = s
	}
	h.RunID = firstNonEmpty(str(run["run_id"]), str(vd["run_id"]))
	h.JobID = firstNonEmpty(str(pa["job_id"]), str(job["job_id"]), str(run["job_id"]), str(vd["job_id"]))
	if len(pa) > 0 {
		h.fillFromPending(pa)
	}
	h.PendingID = firstNonEmpty(h.PendingID, str(vd["pending_id"]))
	h.ChallengeID = firstNonEmpty(h.ChallengeID, str(vd["challenge_id"]), str(run["challenge_id"]))
	h.ExpiresAtUnixMS = int64Of(job["pending_expires_at_unix_ms"])
	if h.ExpiresAtUnixMS == 0 {
		h.ExpiresAtUnixMS = int64Of(vd["pending_expires_at_unix_ms"])
	}
	if h.ExpiresAtUnixMS == 0 {
		h.ExpiresAtUnixMS = int64Of(pa["expires_at_unix_ms"])
	}
	h.Kind = KindJob
	if h.RunID != "" {
		h.Kind = KindPlanRun
	}
	if len(pa) == 0 && h.JobID == "" && h.RunID == "" && h.PendingID == "" && h.ChallengeID == "" {
		return nil, false
	}
	return h, true
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// PendingLimit is the page size of the resolver's pending-list lookup.
const PendingLimit = 200

// AllPendingStates are the seven pending-approval states.
var AllPendingStates = []string{"WAITING", "READY", "RUNNING", "SUCCEEDED", "DENIED", "FAILED", "EXPIRED"}

// ResolveIDs fills the pending id (and a missing job id) from the pending
// list, best effort (D3): a failure leaves h as it was.
func ResolveIDs(ctx context.Context, api API, h *Handoff) {
	if h.PendingID != "" && h.JobID != "" || h.ChallengeID == "" {
		return
	}
	if h.PendingID != "" && h.Kind == KindPlanRun {
		return
	}
	if h.JobID == "" && !h.FromHTTPError {
		return
	}
	q := url.Values{"challenge_id": {h.ChallengeID}, "limit": {strconv.Itoa(PendingLimit)}, "states": {strings.Join(AllPendingStates, ",")}}
	r, err := api.PendingApprovals(ctx, q)
	if err != nil {
		return
	}
	var rows []map[string]any
	for _, it := range Rows(r.Body) {
		switch {
		case h.JobID != "":
			if !strings.EqualFold(str(it["job_id"]), h.JobID) {
				continue
			}
		case h.PendingID != "":
			if !strings.EqualFold(str(it["pending_id"]), h.PendingID) {
				continue
			}
		}
		rows = append(rows, it)
	}
	SortRows(rows)
	if len(rows) == 0 {
		return
	}
	if h.PendingID == "" {
		h.PendingID = str(rows[0]["pending_id"])
	}
	if h.JobID == "" {
		h.JobID = str(rows[0]["job_id"])
	}
}

// Rows returns the object rows of a pending-list body's items.
func Rows(body map[string]any) []map[string]any {
	items, _ := body["items"].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// SortRows orders rows by created_seq descending, then pending_id ascending.
func SortRows(rows []map[string]any) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := int64Of(rows[i]["created_seq"]), int64Of(rows[j]["created_seq"])
		if a != b {
			return a > b
		}
		return str(rows[i]["pending_id"]) < str(rows[j]["pending_id"])
	})
}

// ApprovalMessage is the message of the structured handoff error.
const ApprovalMessage = "approval decision required before execution can continue"

// Approval is details.approval of MCP_APPROVAL_REQUIRED. Fields are in the
// order of their JSON names, matching the sorted-map encoding.
type Approval struct {
	ChallengeID            string         `json:"challenge_id"`
	DecisionOutcome        string         `json:"decision_outcome"`
	JobID                  string         `json:"job_id"`
	Kind                   string         `json:"kind"`
	NextAction             NextAction     `json:"next_action"`
	PendingApproval        map[string]any `json:"pending_approval"`
	PendingExpiresAtUnixMS int64          `json:"pending_expires_at_unix_ms"`
	PendingID              string         `json:"pending_id"`
	PendingIDResolved      bool           `json:"pending_id_resolved"`
	// The attestation link is present only when Vault sent one.
	RemoteAttestationLinkMarkdown string `json:"remote_attestation_link_markdown,omitempty"`
	RemoteAttestationURL          string `json:"remote_attestation_url,omitempty"`
	RunID                         string `json:"run_id"`
	Status                        string `json:"status"`

	// handoff is what the approval was built from (never serialised).
	handoff *Handoff
}

// Handoff is the handoff a is the client view of (nil for an Approval not
// built by Handoff.Approval).
func (a *Approval) Handoff() *Handoff {
	if a == nil {
		return nil
	}
	return a.handoff
}

// NextAction is the wait call that resumes a handoff.
type NextAction struct {
	Arguments WaitArguments `json:"arguments"`
	Tool      string        `json:"tool"`
}

// WaitArguments are the arguments of the resuming wait call.
type WaitArguments struct {
	Handle FullHandle `json:"handle"`
}

// FullHandle is a Handle with all five keys, empty strings included, in the
// order of their JSON names (the form Full returns as a map).
type FullHandle struct {
	ChallengeID string `json:"challenge_id"`
	JobID       string `json:"job_id"`
	Kind        string `json:"kind"`
	PendingID   string `json:"pending_id"`
	RunID       string `json:"run_id"`
}

// WaitTool is the tool that waits on a handle.
const WaitTool = "vaultclaw_approval_wait"

// Approval is the handoff as clients see it in details.approval.
func (h *Handoff) Approval() *Approval {
	a := &Approval{
		Status:                 "PENDING_APPROVAL",
		Kind:                   h.Kind,
		JobID:                  h.JobID,
		RunID:                  h.RunID,
		ChallengeID:            h.ChallengeID,
		PendingID:              h.PendingID,
		PendingIDResolved:      h.PendingID != "",
		PendingExpiresAtUnixMS: h.ExpiresAtUnixMS,
		PendingApproval:        h.PendingApproval,
		DecisionOutcome:        OutcomePending,
		NextAction: NextAction{Tool: WaitTool, Arguments: WaitArguments{Handle: FullHandle{
			Kind: h.Kind, JobID: h.JobID, RunID: h.RunID, ChallengeID: h.ChallengeID, PendingID: h.PendingID}}},
		handoff: h,
	}
	if h.RemoteAttestationURL != "" {
		a.RemoteAttestationURL = h.RemoteAttestationURL
		a.RemoteAttestationLinkMarkdown = "[" + h.RemoteAttestationURL + "](" + h.RemoteAttestationURL + ")"
	}
	return a
}

// AttestationURL is where the user approves: the handoff's own link, else
// the one inside pending_approval.
func (a *Approval) AttestationURL() string {
	if a.RemoteAttestationURL != "" {
		return a.RemoteAttestationURL
	}
	s, _ := a.PendingApproval["remote_attestation_url"].(string)
	return s
}

// RequiredError is a handoff's MCP_APPROVAL_REQUIRED error: it unwraps to
// the *apperr.Error the envelope shows and keeps the typed Approval and
// Handoff (ApprovalOf, HandoffOf).
type RequiredError struct {
	Approval *Approval
	Err      *apperr.Error
	Handoff  *Handoff
}

func (e *RequiredError) Error() string { return e.Err.Error() }

func (e *RequiredError) Unwrap() error { return e.Err }

// ApprovalOf returns the approval an MCP_APPROVAL_REQUIRED error carries, or
// nil.
func ApprovalOf(err error) *Approval {
	if re, ok := errors.AsType[*RequiredError](err); ok {
		return re.Approval
	}
	return nil
}

// HandoffOf returns the handoff an MCP_APPROVAL_REQUIRED error carries, or
// nil.
func HandoffOf(err error) *Handoff {
	if re, ok := errors.AsType[*RequiredError](err); ok {
		return re.Handoff
	}
	return nil
}

// Err is the MCP_APPROVAL_REQUIRED error carrying the handoff.
func (h *Handoff) Err() *RequiredError {
	a := h.Approval()
	e := apperr.New(apperr.CodeApprovalRequired, ApprovalMessage)
	e.Details["approval"] = a
	e.Details["request_id"] = h.RequestID
	e.Details["vault_http_status"] = h.HTTPStatus
	e.Details["vault"] = map[string]any{
		"request_id":        h.RequestID,
		"vault_http_status": h.HTTPStatus,
		"vault_code":        h.VaultCode,
		"response":          h.Response,
	}
	if h.FromHTTPError && h.cause != nil {
		// Keep the normalised Vault error as clients of the predecessor read it.
		e.VaultCode = h.cause.VaultCode
		e.Details["vault_error"] = h.cause.Details["vault_error"]
		e.Cause = h.cause
	}
	return &RequiredError{Approval: a, Err: e, Handoff: h}
}

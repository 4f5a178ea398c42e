package vaultsim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Job and run states.
const (
	StatePending         = "PENDING"
	StateRunning         = "RUNNING"
	StateSucceeded       = "SUCCEEDED"
	StateFailed          = "FAILED"
	StateDenied          = "DENIED"
	StateExpired         = "EXPIRED"
	StatePendingApproval = "PENDING_APPROVAL" // run state
	StateWaiting         = "WAITING"          // pending-approval row state
)

// Approval codes.
const (
	CodeDecisionRequired = "CONNECTOR_APPROVAL_DECISION_REQUIRED"
	CodePlanApproval     = "PLAN_APPROVAL_REQUIRED"
	CodeRuleDenied       = "CONNECTOR_APPROVAL_RULE_DENIED"
	CodePlanDenied       = "PLAN_APPROVAL_DENIED"
	CodeExpired          = "APPROVAL_DECISION_EXPIRED"
)

// Approval rule actions.
const (
	ActionRequire = "require"
	ActionDeny    = "deny"
	ActionAllow   = "allow"
)

// ApprovalRule decides whether a verb needs a human decision. The first
// matching rule wins; no match means allow.
type ApprovalRule struct {
	// ConnectorID matches exactly; "" matches any connector.
	ConnectorID string `json:"connector_id,omitempty"`
	// Verb matches the canonical verb name exactly, or as a prefix when it
	// ends with "*"; "" matches any verb.
	Verb   string `json:"verb,omitempty"`
	Action string `json:"action"`
}

func (r ApprovalRule) matches(connector, verb string) bool {
	if r.ConnectorID != "" && r.ConnectorID != connector {
		return false
	}
	switch {
	case r.Verb == "":
		return true
	case strings.HasSuffix(r.Verb, "*"):
		return strings.HasPrefix(verb, strings.TrimSuffix(r.Verb, "*"))
	}
	return r.Verb == verb
}

// DefaultApprovalRules: every Gmail send and drafts.send needs approval.
func DefaultApprovalRules() []ApprovalRule {
	return []ApprovalRule{
		{ConnectorID: "google", Verb: "google.gmail.send.v1", Action: ActionRequire},
		{ConnectorID: "google", Verb: "google.gmail.drafts.send", Action: ActionRequire},
	}
}

// SetApprovalRules replaces the rules (none: everything is allowed).
func (s *Sim) SetApprovalRules(rules ...ApprovalRule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append([]ApprovalRule(nil), rules...)
}

// SetApprovalRule adds r in front of the existing rules, so it wins.
func (s *Sim) SetApprovalRule(r ApprovalRule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append([]ApprovalRule{r}, s.rules...)
}

// ApprovalRules returns the current rules.
func (s *Sim) ApprovalRules() []ApprovalRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ApprovalRule(nil), s.rules...)
}

func (s *Sim) decideLocked(connector, verb string) string {
	for _, r := range s.rules {
		if r.matches(connector, verb) {
			return r.Action
		}
	}
	return ActionAllow
}

type job struct {
	ID, Kind, RunID            string
	ConnectorID, Verb, AgentID string
	Status                     string
	Request                    map[string]any
	Result                     any
	ErrCode, ErrMsg            string
	Pending                    *pending
	CreatedSeq                 int64
	CreatedAt, UpdatedAt       time.Time
	checked                    *checked
}

type pending struct {
	ID, ChallengeID, JobID, RunID string
	Kind                          string
	ConnectorID, Verb, AgentID    string
	State, LastErrorCode          string
	CreatedSeq                    int64
	CreatedAt, ExpiresAt          time.Time
	AttestationURL                string
}

func (s *Sim) newJobLocked(kind, connector, verb, agent string, req map[string]any) *job {
	now := s.now().UTC()
	j := &job{ID: s.newID("job_"), Kind: kind, ConnectorID: connector, Verb: verb, AgentID: agent, Status: StateRunning,
		Request: req, CreatedSeq: s.nextSeq(), CreatedAt: now, UpdatedAt: now}
	s.jobs[j.ID] = j
	return j
}

func (s *Sim) newPendingLocked(c *call, j *job, runID, kind string) *pending {
	now := s.now().UTC()
	p := &pending{ID: s.newID("apj_"), ChallengeID: s.newID("ach_"), JobID: j.ID, RunID: runID, Kind: kind,
		ConnectorID: j.ConnectorID, Verb: j.Verb, AgentID: j.AgentID, State: StateWaiting,
		CreatedSeq: s.nextSeq(), CreatedAt: now, ExpiresAt: now.Add(s.opts.ApprovalTTL)}
	p.AttestationURL = "http://" + c.host + AdminPrefix + "approvals/" + p.ID
	s.pendings[p.ID] = p
	if s.opts.OnPending != nil {
		s.notify = append(s.notify, p.view())
	}
	j.Pending = p
	j.Status = StatePending
	j.ErrCode = CodeDecisionRequired
	if kind == "PLAN_RUN" {
		j.ErrCode = CodePlanApproval
	}
	j.ErrMsg = "approval required"
	return p
}

func (s *Sim) pendingApprovalJSON(p *pending) map[string]any {
	out := map[string]any{
		"challenge":              map[string]any{"challenge_id": p.ChallengeID, "expires_at_unix_ms": unixMS(p.ExpiresAt)},
		"remote_attestation_url": p.AttestationURL,
		"expires_at_unix_ms":     unixMS(p.ExpiresAt),
		"connector_id":           p.ConnectorID,
		"verb":                   p.Verb,
	}
	if s.opts.IncludePendingIDInJob {
		out["pending_id"] = p.ID
	}
	return out
}

func (s *Sim) jobJSON(j *job) map[string]any {
	out := map[string]any{"job_id": j.ID, "status": j.Status, "connector_id": j.ConnectorID, "verb": j.Verb,
		"created_at": j.CreatedAt.Format(time.RFC3339Nano), "updated_at": j.UpdatedAt.Format(time.RFC3339Nano)}
	if j.RunID != "" {
		out["run_id"] = j.RunID
	}
	if j.Result != nil {
		out["result"] = j.Result
	}
	if j.ErrCode != "" {
		out["error"] = map[string]any{"code": j.ErrCode, "message": j.ErrMsg}
	}
	if j.Pending != nil && j.Status == StatePending {
		out["pending_approval"] = s.pendingApprovalJSON(j.Pending)
		out["pending_expires_at_unix_ms"] = unixMS(j.Pending.ExpiresAt)
	}
	return out
}

func pendingRow(p *pending) map[string]any {
	row := map[string]any{"pending_id": p.ID, "job_id": p.JobID, "challenge_id": p.ChallengeID, "state": p.State,
		"last_error_code": p.LastErrorCode, "created_seq": p.CreatedSeq, "connector_id": p.ConnectorID, "verb": p.Verb,
		"agent_id": p.AgentID, "kind": p.Kind, "created_at_unix_ms": unixMS(p.CreatedAt), "expires_at_unix_ms": unixMS(p.ExpiresAt),
		"pending_approval": map[string]any{"pending_id": p.ID, "challenge": map[string]any{"challenge_id": p.ChallengeID}, "remote_attestation_url": p.AttestationURL}}
	if p.RunID != "" {
		row["run_id"] = p.RunID
	}
	return row
}

// expireLocked moves undecided approvals past their expiry to EXPIRED.
func (s *Sim) expireLocked() {
	now := s.now()
	for _, p := range s.pendings {
		if p.State != StateWaiting || now.Before(p.ExpiresAt) {
			continue
		}
		p.State, p.LastErrorCode = StateExpired, CodeExpired
		if j := s.jobs[p.JobID]; j != nil {
			j.Status, j.ErrCode, j.ErrMsg, j.UpdatedAt = StateExpired, CodeExpired, "approval decision expired", now.UTC()
		}
		if r := s.runs[p.RunID]; r != nil {
			r.State, r.LastErrorCode, r.UpdatedAt = StateExpired, CodeExpired, now.UTC()
		}
	}
}

func (s *Sim) finishJob(j *job, out map[string]any, aerr *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.UpdatedAt = s.now().UTC()
	if aerr != nil {
		j.Status, j.ErrCode, j.ErrMsg = StateFailed, aerr.code, aerr.message
		if j.Pending != nil {
			j.Pending.State, j.Pending.LastErrorCode = StateFailed, aerr.code
		}
		return
	}
	j.Status, j.Result, j.ErrCode, j.ErrMsg = StateSucceeded, out, "", ""
	if j.Pending != nil {
		j.Pending.State = StateSucceeded
	}
}

// E3
func (s *Sim) handleValidate(c *call) (int, any, *apiError) {
	ck, err := s.checkExecute(c.body, true)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	action := s.decideLocked(ck.conn.ID, ck.verb.Name)
	hash := ck.conn.policyHash
	s.mu.Unlock()
	return 200, map[string]any{"validated": true, "connector_id": ck.conn.ID, "verb": ck.verb.Name, "policy_hash": hash,
		"approval_required": action == ActionRequire, "approval_action": action}, nil
}

// E4: synchronous execute. Approval arrives as a 409 carrying the pending
// approval; once approved, the created job runs.
func (s *Sim) handleExecute(c *call) (int, any, *apiError) {
	ck, err := s.checkExecute(c.body, true)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	action := s.decideLocked(ck.conn.ID, ck.verb.Name)
	if action == ActionDeny {
		s.mu.Unlock()
		return 0, nil, errf(403, CodeRuleDenied, "an approval rule denies %s", ck.verb.Name)
	}
	j := s.newJobLocked("JOB", ck.conn.ID, ck.verb.Name, c.agentID, copyMap(c.body))
	j.checked = ck
	if action == ActionRequire {
		p := s.newPendingLocked(c, j, "", "JOB")
		pa := s.pendingApprovalJSON(p)
		pa["pending_id"] = p.ID
		s.mu.Unlock()
		return 0, nil, errf(409, CodeDecisionRequired, "approval required before %s can run", ck.verb.Name).
			with("pending_approval", pa).with("job_id", j.ID).with("pending_expires_at_unix_ms", unixMS(p.ExpiresAt))
	}
	s.mu.Unlock()
	out, aerr := s.runVerb(c.r.Context(), ck)
	s.finishJob(j, out, aerr)
	if aerr != nil {
		return 0, nil, aerr
	}
	return 200, map[string]any{"status": StateSucceeded, "job_id": j.ID, "connector_id": ck.conn.ID, "verb": ck.verb.Name, "result": out}, nil
}

// E5: asynchronous job.
func (s *Sim) handleExecuteJob(c *call) (int, any, *apiError) {
	ck, err := s.checkExecute(c.body, true)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	action := s.decideLocked(ck.conn.ID, ck.verb.Name)
	if action == ActionDeny {
		s.mu.Unlock()
		return 0, nil, errf(403, CodeRuleDenied, "an approval rule denies %s", ck.verb.Name)
	}
	j := s.newJobLocked("JOB", ck.conn.ID, ck.verb.Name, c.agentID, copyMap(c.body))
	j.checked = ck
	if action == ActionRequire {
		s.newPendingLocked(c, j, "", "JOB")
		body := map[string]any{"job": s.jobJSON(j)}
		s.mu.Unlock()
		return 202, body, nil
	}
	s.mu.Unlock()
	out, aerr := s.runVerb(c.r.Context(), ck)
	s.finishJob(j, out, aerr)
	s.mu.Lock()
	defer s.mu.Unlock()
	return 200, map[string]any{"job": s.jobJSON(j)}, nil
}

// E9
func (s *Sim) handleJobGet(c *call) (int, any, *apiError) {
	id := strings.TrimPrefix(c.r.URL.Path, "/v0/jobs/")
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return 0, nil, errf(404, "JOB_NOT_FOUND", "job %s not found", id).with("job_id", id)
	}
	return 200, map[string]any{"job": s.jobJSON(j)}, nil
}

var pendingStates = []string{StateWaiting, "READY", StateRunning, StateSucceeded, StateDenied, StateFailed, StateExpired}

// E10
func (s *Sim) handlePending(c *call) (int, any, *apiError) {
	q := c.r.URL.Query()
	states := map[string]bool{}
	if raw := strings.TrimSpace(q.Get("states")); raw != "" {
		for st := range strings.SplitSeq(raw, ",") {
			st = strings.ToUpper(strings.TrimSpace(st))
			if st == "" {
				continue
			}
			if !slices.Contains(pendingStates, st) {
				return 0, nil, invalid("invalid query", []FieldError{{Path: "/states", Code: FieldEnumMismatch, Message: "unknown state " + st, Expected: strings.Join(pendingStates, "|"), Actual: st}})
			}
			states[st] = true
		}
	}
	limit := 50
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 500 {
			return 0, nil, invalid("invalid query", []FieldError{{Path: "/limit", Code: FieldOutOfRange, Message: "limit must be an integer between 1 and 500", Expected: "1..500", Actual: raw}})
		}
		limit = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []*pending
	for _, p := range s.pendings {
		if len(states) > 0 && !states[p.State] {
			continue
		}
		if v := q.Get("connector_id"); v != "" && v != p.ConnectorID {
			continue
		}
		if v := q.Get("verb"); v != "" && v != p.Verb {
			continue
		}
		if v := q.Get("agent_id"); v != "" && v != p.AgentID {
			continue
		}
		if v := q.Get("challenge_id"); v != "" && v != p.ChallengeID {
			continue
		}
		rows = append(rows, p)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].CreatedSeq > rows[j].CreatedSeq })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	items := make([]any, len(rows))
	for i, p := range rows {
		items[i] = pendingRow(p)
	}
	return 200, map[string]any{"items": items}, nil
}

// PendingApproval is the Go view of a pending approval.
type PendingApproval struct {
	PendingID     string    `json:"pending_id"`
	ChallengeID   string    `json:"challenge_id"`
	JobID         string    `json:"job_id"`
	RunID         string    `json:"run_id,omitempty"`
	Kind          string    `json:"kind"`
	ConnectorID   string    `json:"connector_id"`
	Verb          string    `json:"verb"`
	State         string    `json:"state"`
	LastErrorCode string    `json:"last_error_code,omitempty"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// PendingApprovals lists approvals, newest first.
func (s *Sim) PendingApprovals() []PendingApproval {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	var out []PendingApproval
	for _, p := range s.pendings {
		out = append(out, p.view())
	}
	sort.Slice(out, func(i, j int) bool {
		return s.pendings[out[i].PendingID].CreatedSeq > s.pendings[out[j].PendingID].CreatedSeq
	})
	return out
}

func (p *pending) view() PendingApproval {
	return PendingApproval{PendingID: p.ID, ChallengeID: p.ChallengeID, JobID: p.JobID, RunID: p.RunID, Kind: p.Kind,
		ConnectorID: p.ConnectorID, Verb: p.Verb, State: p.State, LastErrorCode: p.LastErrorCode, ExpiresAt: p.ExpiresAt}
}

// ErrNotWaiting is returned when deciding an approval that is not waiting.
type ErrNotWaiting struct{ PendingID, State string }

func (e *ErrNotWaiting) Error() string {
	if e.State == "" {
		return fmt.Sprintf("pending approval %s not found", e.PendingID)
	}
	return fmt.Sprintf("pending approval %s is %s, not WAITING", e.PendingID, e.State)
}

// Approve grants a waiting approval and runs what it held back: the job's
// request, or the rest of the plan run. It returns when that work is done.
func (s *Sim) Approve(pendingID string) error {
	s.mu.Lock()
	s.expireLocked()
	p, ok := s.pendings[pendingID]
	if !ok || p.State != StateWaiting {
		st := ""
		if ok {
			st = p.State
		}
		s.mu.Unlock()
		return &ErrNotWaiting{PendingID: pendingID, State: st}
	}
	p.State = StateRunning
	j := s.jobs[p.JobID]
	j.Status, j.ErrCode, j.ErrMsg, j.UpdatedAt = StateRunning, "", "", s.now().UTC()
	r := s.runs[p.RunID]
	if r != nil {
		r.Approved, r.State = true, StateRunning
	}
	s.mu.Unlock()
	if r != nil {
		s.advance(context.Background(), r)
		s.mu.Lock()
		switch r.State {
		case StateSucceeded, StateFailed, StateDenied:
			p.State = r.State
			p.LastErrorCode = r.LastErrorCode
		}
		s.mu.Unlock()
		return nil
	}
	out, aerr := s.runVerb(context.Background(), j.checked)
	s.finishJob(j, out, aerr)
	return nil
}

// Deny refuses a waiting approval.
func (s *Sim) Deny(pendingID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	p, ok := s.pendings[pendingID]
	if !ok || p.State != StateWaiting {
		st := ""
		if ok {
			st = p.State
		}
		return &ErrNotWaiting{PendingID: pendingID, State: st}
	}
	code := CodeRuleDenied
	if p.Kind == "PLAN_RUN" {
		code = CodePlanDenied
	}
	now := s.now().UTC()
	p.State, p.LastErrorCode = StateDenied, code
	if j := s.jobs[p.JobID]; j != nil {
		j.Status, j.ErrCode, j.ErrMsg, j.UpdatedAt = StateDenied, code, "approval denied", now
	}
	if r := s.runs[p.RunID]; r != nil {
		r.State, r.LastErrorCode, r.UpdatedAt = StateDenied, code, now
	}
	return nil
}

func msDuration(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

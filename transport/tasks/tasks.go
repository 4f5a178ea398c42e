// Package tasks implements the MCP Tasks extension
// (io.modelcontextprotocol/tasks) for calls that wait on a person's
// approval: when a request declares the extension, a vaultclaw_connector_
// execute, _execute_job, plan_execute or passport_email_workflow call that
// hands off answers with a task instead of MCP_APPROVAL_REQUIRED; tasks/get
// reports it working until Vault decides, then completed with the tool
// result the call would have given; tasks/cancel stops following it (the
// decision stays with the person, in Vaultclaw).
//
// It plugs into go-sdk through its extension and custom-method hooks: the
// capability is advertised with ServerCapabilities.AddExtension, tasks/* are
// registered with AddReceivingCustomMethod, and one receiving middleware
// turns a handoff into a task. It works the same on every transport the
// server is served over. Tasks are stored with domain/approval/task before
// the answer is sent and are followed by a poller in this process, which
// resumes them after a restart.
//
// Files: tasks.go (the extension, the tools/call hook and the tasks/*
// methods), runner.go (following a task until Vault decides), wire.go (the
// extension's message shapes).
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sessions resolves the Vault session a task polls with.
type Sessions interface {
	Resolve(ctx context.Context, scope string) (session.Session, error)
}

// Checker polls an approval once, or takes a state newer than cur saw from
// a poll of the same job shared with other waiters (the execution service,
// which also records what it saw on the durable handle).
type Checker interface {
	Check(ctx context.Context, scope string, sess session.Session, h approval.Handle, cur *approval.Cursor) (approval.WaitResult, error)
}

// Finisher is the envelope a handed-off call answers once Vault has
// decided (terminal res).
type Finisher func(ctx context.Context, scope string, c approval.Continuation, res approval.WaitResult) envelope.Envelope

// Gate is the policy layer as tasks need it (the gateway).
type Gate interface {
	// Allowed re-checks on every tasks/* request that the caller may still
	// use the task's tool; its error is the JSON-RPC answer.
	Allowed(p caller.Principal, tool string) error
	// Record writes the receipt of e and returns the _meta entries that
	// reference it.
	Record(e task.Event) map[string]any
}

// Options configure the extension. Store, Keys, Sessions, Checker and
// Finish are required.
type Options struct {
	Store *task.Store
	// Keys is the server keyring: it seals an attached launch's
	// environment session in its tasks and keys their owner binding.
	Keys     *keyring.Keyring
	Handles  *approval.Store
	Sessions Sessions
	Checker  Checker
	Finish   Finisher
	Gate     Gate
	// PollInterval is how often a young task polls Vault (older ones poll
	// less often, see PollDelay) and the pollIntervalMs clients are told
	// (default 2 s).
	PollInterval time.Duration
	// MaxWorking bounds the tasks one caller has working at once in this
	// process (default DefaultMaxWorking); a call that could make one more
	// is refused with the retryable MCP_RATE_LIMITED before it runs.
	MaxWorking int
	Logger     *slog.Logger
	// Claim and Release, when set, let one replica of several sharing a
	// store follow a task (store.Fleet): a task is followed only where
	// Claim succeeds, and Rescan (default FleetRescan) looks for working
	// tasks nobody follows any more (their replica died).
	Claim   func(ref string) bool
	Release func(ref string)
	Rescan  time.Duration
	// Follow, when set, calls its argument whenever another replica may
	// have changed a task (a watch of the shared store's tasks bucket,
	// until ctx ends): listeners here then hear of tasks followed there.
	Follow func(ctx context.Context, changed func())
}

// FleetRescan is how often a replica looks for orphaned working tasks.
const FleetRescan = 5 * time.Second

// DefaultPollInterval is the default of Options.PollInterval.
const DefaultPollInterval = 2 * time.Second

// DefaultMaxWorking is the default of Options.MaxWorking.
const DefaultMaxWorking = 32

// Extension is the Tasks extension of one process, shared by every server
// it builds. Safe for concurrent use.
type Extension struct {
	o      Options
	logger *slog.Logger
	envKey []byte

	mu   sync.Mutex
	runs map[string]*run // task ref -> its poller
	// working counts, per caller, the tasks followed here and the calls
	// that may become one (reservations), for Options.MaxWorking.
	working map[string]int
	wg      sync.WaitGroup
	closed  bool
	// rescanStop ends the look for orphaned tasks (with Claim).
	rescanStop chan struct{}
	// sent is the UpdatedAt of the last state published per listened
	// task, so changes seen through Follow are published once.
	sent         map[string]time.Time
	followCancel context.CancelFunc
	subs         map[string]map[chan task.Task]struct{} // task ref -> listeners
}

// New validates o.
func New(o Options) (*Extension, error) {
	if o.Store == nil || o.Keys == nil || o.Sessions == nil || o.Checker == nil || o.Finish == nil {
		return nil, errors.New("tasks: store, keys, sessions, checker and finisher are required")
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxWorking <= 0 {
		o.MaxWorking = DefaultMaxWorking
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Extension{o: o, logger: o.Logger, envKey: EnvKey(o.Keys), runs: map[string]*run{}, working: map[string]int{},
		subs: map[string]map[chan task.Task]struct{}{}}, nil
}

// SetGate sets the policy layer (the gateway, built after the extension);
// call it before serving.
func (x *Extension) SetGate(g Gate) { x.o.Gate = g }

// Eligible reports the tools whose handoffs may become tasks.
func Eligible(tool string) bool {
	switch tool {
	case approval.ToolConnectorExecute, approval.ToolConnectorExecuteJob, approval.ToolPlanExecute, approval.ToolPassportWorkflow:
		return true
	}
	return false
}

// Advertise adds the extension to a server's capabilities (server/discover
// and initialize).
func Advertise(c *mcp.ServerCapabilities) { c.AddExtension(ExtensionID, nil) }

// Install registers tasks/get, tasks/update and tasks/cancel on s.
func (x *Extension) Install(s *mcp.Server) error {
	if err := mcp.AddReceivingCustomMethod(s, MethodGet, x.get); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s, MethodUpdate, x.update); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(s, MethodCancel, x.cancel)
}

// Declared reports whether req declares the extension: in its per-request
// client capabilities (_meta), else in the session's (initialize).
func Declared(req mcp.Request) bool {
	c, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	})
	if !ok {
		return false
	}
	caps := c.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[ExtensionID]
	return ok
}

// Middleware is the receiving middleware: it turns the handoff of an
// eligible tools/call that declared the extension into a task, and checks
// tasks/* requests (declared capability, Mcp-Name header) before their
// handlers run. It goes right after the principal is resolved, outside
// the metrics and the gateway, which see the tool call as it ran.
func (x *Extension) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			ctr, ok := req.(*mcp.CallToolRequest)
			if !ok || ctr.Params == nil || !Eligible(ctr.Params.Name) || !Declared(req) {
				return next(ctx, method, req)
			}
			return x.call(ctx, method, ctr, next)
		case MethodGet, MethodUpdate, MethodCancel:
			if !Declared(req) {
				return nil, errMissingCapability()
			}
			if err := checkNameHeader(req); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// checkNameHeader refuses a Streamable HTTP tasks/* request whose Mcp-Name
// header (which routes it to the instance holding the task) names another
// task.
func checkNameHeader(req mcp.Request) error {
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	h := ex.Header.Get("Mcp-Name")
	if h == "" {
		return nil
	}
	if p, ok := req.GetParams().(*GetParams); ok && p != nil && p.TaskID != h {
		return errHeaderMismatch(h)
	}
	if p, ok := req.GetParams().(*UpdateParams); ok && p != nil && p.TaskID != h {
		return errHeaderMismatch(h)
	}
	return nil
}

// call runs the tool; a handoff that can be finished from Vault's decision
// becomes a stored task. If the task cannot be stored the handoff envelope
// goes out as it is: the handle is never lost (D3).
func (x *Extension) call(ctx context.Context, method string, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	release, refused := x.reserve(caller.From(ctx).ID, req.Params.Name)
	if refused != nil {
		// The gateway still checks capability and rate first, and writes
		// the receipt of the refusal; the tool does not run.
		return next(tools.WithRefusal(ctx, refused), method, req)
	}
	defer release()
	ctx, out := tools.TrackOutcome(ctx)
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	ctr, ok := res.(*mcp.CallToolResult)
	if !ok || ctr == nil || !out.Recorded || out.Code != apperr.CodeApprovalRequired {
		return res, nil
	}
	h := out.Approval.Handoff()
	if h == nil || (h.JobID == "" && h.RunID == "") || !h.Continuation.Resumable() {
		return res, nil
	}
	p, owner := x.ownerOf(ctx)
	env, err := x.sealEnv(ctx)
	if err != nil {
		x.logger.Error("environment session not sealed; answering with the handoff", "error", err.Error())
		return res, nil
	}
	t := task.Task{
		Owner:                   owner,
		Env:                     env,
		Transport:               p.Transport,
		Tool:                    req.Params.Name,
		Handle:                  h.Handle,
		Continuation:            h.Continuation,
		AttestationURL:          out.Approval.AttestationURL(),
		ApprovalExpiresAtUnixMS: h.ExpiresAtUnixMS,
		PollIntervalMS:          x.o.PollInterval.Milliseconds(),
		StatusMessage:           waitingMessage(h, out.Approval.AttestationURL()),
	}
	t.CallID, _ = ctr.Meta["accords/call_id"].(string)
	if raw, err := json.Marshal(out.Approval); err == nil {
		t.Approval = raw
	}
	id, t, err := x.o.Store.Create(t)
	if err != nil {
		x.logger.Error("task not stored; answering with the handoff", "tool", t.Tool, "error", err.Error())
		return res, nil
	}
	x.link(t)
	x.start(t)
	cr := &CreateResult{ResultType: resultTypeTask, Wire: x.wire(id, t)}
	// The receipt of the call, and the handoff as the polling path knows
	// it (its handle resumes with vaultclaw_approval_wait if need be).
	meta := mcp.Meta{}
	maps.Copy(meta, ctr.Meta)
	meta["accords/approval"] = t.Approval
	cr.Meta = meta
	return cr, nil
}

// ReasonWorkingTasks is details.reason of a call refused because its
// caller already has Options.MaxWorking tasks working.
const ReasonWorkingTasks = "working_tasks"

// reserve holds a place for one more working task of callerID, for the
// length of a call that may create one; release gives it back (a task the
// call created is counted by then as followed). At the bound, the refusal
// to answer with instead: the retryable MCP_RATE_LIMITED, before the tool
// runs, so nothing reaches Vault. Every task a caller has working here
// polls Vault until a person decides, so the bound is what keeps a caller
// from making this process poll without end.
func (x *Extension) reserve(callerID, tool string) (release func(), refused *apperr.Error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := x.working[callerID]
	if n >= x.o.MaxWorking {
		ms := x.o.PollInterval.Milliseconds()
		e := apperr.New(apperr.CodeRateLimited, "%s refused: this caller already has %d tasks waiting for a person's decision in Vaultclaw, "+
			"the most it may have at once; retry in %d ms, or once one of them is decided or cancelled (tasks/cancel)", tool, n, ms)
		e.Retryable = true
		return nil, e.With("retry_after_ms", ms).With("tool", tool).With("reason", ReasonWorkingTasks).
			With("working_tasks", n).With("max_working_tasks", x.o.MaxWorking)
	}
	x.working[callerID] = n + 1
	var once sync.Once
	return func() {
		once.Do(func() {
			x.mu.Lock()
			x.unworkLocked(callerID)
			x.mu.Unlock()
		})
	}, nil
}

// unworkLocked gives back one place of callerID.
func (x *Extension) unworkLocked(callerID string) {
	if x.working[callerID]--; x.working[callerID] <= 0 {
		delete(x.working, callerID)
	}
}

// Working reports how many tasks callerID has working here, reservations
// of calls in progress included (tests, metrics).
func (x *Extension) Working(callerID string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.working[callerID]
}

// waitingMessage says what awaits approval, and where.
func waitingMessage(h *approval.Handoff, url string) string {
	what := describe(h)
	msg := "Waiting for a person to approve " + what + " in Vaultclaw"
	if url != "" {
		msg += ": " + url
	}
	return msg + ". The decision is made there; this task completes with the result once it is."
}

// describe names the action that awaits approval: its connector verb when
// known, and the job or plan run.
func describe(h *approval.Handoff) string {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return strings.TrimSpace(s) }
	verb := str(h.PendingApproval, "verb")
	if verb == "" {
		verb = str(h.Continuation.Request, "verb")
	}
	var parts []string
	if verb != "" {
		parts = append(parts, verb)
	}
	switch {
	case h.Kind == approval.KindPlanRun:
		parts = append(parts, "(plan run "+h.RunID+")")
	case h.JobID != "":
		parts = append(parts, "(job "+h.JobID+")")
	}
	if len(parts) == 0 {
		return h.Continuation.Tool
	}
	return strings.Join(parts, " ")
}

// wire is the task as clients see it.
func (x *Extension) wire(id string, t task.Task) Wire {
	ttl := x.o.Store.TTLMS(t)
	w := Wire{
		TaskID: id, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.UpdatedAt.UTC().Format(time.RFC3339Nano),
		TTLMS: &ttl,
	}
	if !t.Terminal() {
		w.PollIntervalMS = t.PollIntervalMS
	}
	switch t.Status {
	case task.StatusCompleted:
		w.Result = t.Result
	case task.StatusFailed:
		w.Error = t.Error
	}
	return w
}

// owned loads the task id names if the request's caller owns it and may
// still use its tool.
func (x *Extension) owned(ctx context.Context, method, id string) (task.Task, error) {
	p, owner := x.ownerOf(ctx)
	t, err := x.o.Store.Get(id, owner)
	if errors.Is(err, task.ErrNotFound) {
		return task.Task{}, errTaskNotFound(method)
	}
	if err != nil {
		x.logger.Error("task lookup failed", "error", err.Error())
		return task.Task{}, fmt.Errorf("task store: %w", err)
	}
	if x.o.Gate != nil {
		if err := x.o.Gate.Allowed(p, t.Tool); err != nil {
			return task.Task{}, err
		}
	}
	return t, nil
}

func (x *Extension) get(ctx context.Context, _ *mcp.ServerSession, p *GetParams) (*GetResult, error) {
	if p == nil {
		return nil, errTaskNotFound(MethodGet)
	}
	t, err := x.owned(ctx, MethodGet, p.TaskID)
	if err != nil {
		return nil, err
	}
	return &GetResult{ResultType: resultTypeComplete, Wire: x.wire(p.TaskID, t)}, nil
}

// update acknowledges input responses. These tasks never ask for input
// (the decision is made in Vaultclaw), so every response is for a key that
// is not outstanding and is ignored, as the extension prescribes.
func (x *Extension) update(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*AckResult, error) {
	if p == nil {
		return nil, errTaskNotFound(MethodUpdate)
	}
	if _, err := x.owned(ctx, MethodUpdate, p.TaskID); err != nil {
		return nil, err
	}
	return &AckResult{ResultType: resultTypeComplete}, nil
}

// CancelledMessage is the status message of a cancelled task.
const CancelledMessage = "Cancelled: accords-mcp no longer follows this approval. The approval itself is untouched in Vaultclaw " +
	"(approving or denying stays with the person); vaultclaw_approval_wait with the handle in _meta can still follow it."

// cancel stops following the task. It never decides the approval.
func (x *Extension) cancel(ctx context.Context, _ *mcp.ServerSession, p *GetParams) (*AckResult, error) {
	if p == nil {
		return nil, errTaskNotFound(MethodCancel)
	}
	t, err := x.owned(ctx, MethodCancel, p.TaskID)
	if err != nil {
		return nil, err
	}
	t, err = x.o.Store.Update(t.Ref, func(t *task.Task) error {
		t.Status, t.StatusMessage = task.StatusCancelled, CancelledMessage
		return nil
	})
	switch {
	case errors.Is(err, task.ErrTerminal):
		// Finished before the cancel: cancellation is cooperative.
		return &AckResult{ResultType: resultTypeComplete}, nil
	case err != nil:
		return nil, fmt.Errorf("task store: %w", err)
	}
	x.stop(t.Ref, nil)
	x.link(t)
	x.record(t, task.StatusCancelled, nil)
	x.publish(t)
	return &AckResult{ResultType: resultTypeComplete}, nil
}

// link mirrors the task's state on its durable handle.
func (x *Extension) link(t task.Task) {
	if x.o.Handles == nil {
		return
	}
	if err := x.o.Handles.LinkTask(t.Owner.Scope, t.Handle, approval.TaskLink{Status: t.Status, StatusMessage: t.StatusMessage, UpdatedAt: t.UpdatedAt}); err != nil {
		x.logger.Warn("task state not mirrored on its handle", "error", err.Error())
	}
}

// record writes the receipt of a finished task and returns its _meta.
func (x *Extension) record(t task.Task, outcome string, env json.RawMessage) map[string]any {
	if x.o.Gate == nil {
		return nil
	}
	return x.o.Gate.Record(task.Event{Kind: t.Status, Owner: t.Owner, Transport: t.Transport, Tool: t.Tool, TaskRef: t.Ref,
		ParentCallID: t.CallID, Outcome: outcome, Envelope: env, Duration: t.UpdatedAt.Sub(t.CreatedAt)})
}

// Capabilities advertises the extension (transport.Extension).
func (x *Extension) Capabilities(c *mcp.ServerCapabilities) { Advertise(c) }

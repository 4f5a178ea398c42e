// Package urlelicit sends the person an approval is waiting on to Vault's
// attestation page through URL-mode elicitation, for clients that declare
// it, and finishes the call once Vault has decided.
//
// On 2026-07-28 the tool answers input_required with one URL elicitation
// and a sealed requestState (AES-256-GCM, key derived from the server
// keyring, bound to the caller, tenant, tool, argument digest and the
// approval's expiry); the client's retry carries the state back, the tool
// does not run again, and the call waits for the decision. On earlier
// versions the server sends elicitation/create in url mode on the session
// and waits in the same call. The decision itself is never asked for in
// the client: it is made in Vaultclaw. A client that declines, a transport
// that cannot carry the request (stateless HTTP before 2026-07-28) or a
// decision that does not come in time gets the ordinary handoff
// (MCP_APPROVAL_REQUIRED with its handle).
package urlelicit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/platform/lifecycle"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputKey names the elicitation in inputRequests.
const InputKey = "vaultclaw_approval"

// perRequestVersion is the first protocol version that has multi-round-trip
// results (inputRequests and requestState); go-sdk exports no name for it.
// Versions are dates, so they order as strings.
const perRequestVersion = "2026-07-28"

// Sessions resolves the Vault session of a scope.
type Sessions interface {
	Resolve(ctx context.Context, scope string) (session.Session, error)
}

// Awaiter waits for Vault's decision (the execution service).
type Awaiter interface {
	Await(ctx context.Context, scope string, sess session.Session, h approval.Handle, opts approval.WaitOptions, progress approval.Progress) (approval.WaitResult, error)
}

// Options configure the elicitor. Keys, Sessions, Awaiter and Finish are
// required.
type Options struct {
	// Keys is the server keyring; the request-state key is derived from it.
	Keys     *keyring.Keyring
	Sessions Sessions
	Awaiter  Awaiter
	Finish   tasks.Finisher
	// Wait bounds the wait for the decision after the client comes back
	// (default: the polling wait's defaults, 10 minutes polling every
	// 1.5 s), and never runs past the approval's expiry.
	Wait   approval.WaitOptions
	Now    func() time.Time
	Logger *slog.Logger
}

// Elicitor wraps the handlers of the tools that hand off.
type Elicitor struct {
	o    Options
	keys *keyring.Keyring
	// envKey keys the binding to an attached launch's environment session.
	envKey []byte
	// stop ends every elicitation and wait in flight (Stop): a server
	// shutting down, or a client whose input ended, cannot answer them.
	mu         sync.Mutex
	stop       context.Context
	stopCancel context.CancelFunc
}

// MaxAnswerWait bounds how long a client may take to answer elicitation/
// create (the person deciding whether to open the page).
const MaxAnswerWait = 10 * time.Minute

// Stop answers every elicitation and wait in flight with the handoff, at
// once; later calls elicit again. The server calls it when it shuts down
// or its stdio input ends, so a call never outlives the connection that
// could answer it.
func (e *Elicitor) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopCancel()
	e.stop, e.stopCancel = context.WithCancel(context.Background())
}

// New validates o.
func New(o Options) (*Elicitor, error) {
	if o.Keys == nil || o.Sessions == nil || o.Awaiter == nil || o.Finish == nil {
		return nil, errors.New("urlelicit: keys, sessions, awaiter and finisher are required")
	}
	k, err := keyring.New(o.Keys.Derive("accords-mcp mcp request state v1"))
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Wait = o.Wait.Normalize()
	e := &Elicitor{o: o, keys: k, envKey: tasks.EnvKey(o.Keys)}
	e.stop, e.stopCancel = context.WithCancel(context.Background())
	return e, nil
}

// Wrap is transport.Builder.WrapTool: the tools that may hand off get the
// URL elicitation path, the others are left as they are.
func (e *Elicitor) Wrap(t tools.Tool, h mcp.ToolHandler) mcp.ToolHandler {
	if !tasks.Eligible(t.Name) {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req != nil && req.Params != nil && req.Params.RequestState != "" {
			return e.resume(ctx, req), nil
		}
		ctx, out := tools.TrackOutcome(ctx)
		res, err := h(ctx, req)
		if err != nil || !out.Recorded || out.Code != apperr.CodeApprovalRequired || tasks.Declared(req) {
			return res, err
		}
		hf := out.Approval.Handoff()
		url := out.Approval.AttestationURL()
		if hf == nil || url == "" || (hf.JobID == "" && hf.RunID == "") || !hf.Continuation.Resumable() || !urlCapable(req) {
			return res, nil
		}
		st := state{V: 1, Exp: e.expiry(hf).UnixMilli(), Key: InputKey, ElicitationID: elicitationID(hf), Handle: hf.Handle,
			ExpiresAtUnixMS: hf.ExpiresAtUnixMS, PendingApproval: hf.PendingApproval, URL: url, RequestID: hf.RequestID,
			HTTPStatus: hf.HTTPStatus, VaultCode: hf.VaultCode, Continuation: hf.Continuation}
		if req.ProtocolVersion() >= perRequestVersion {
			sealed, err := e.seal(st, e.bindingOf(ctx, req))
			if err != nil {
				e.o.Logger.Error("request state not sealed; answering with the handoff", "error", err.Error())
				return res, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{InputKey: &mcp.ElicitParams{Mode: "url", Message: message(hf), URL: url, ElicitationID: st.ElicitationID}},
				RequestState:  sealed,
			}, nil
		}
		return e.legacy(ctx, req, st, res), nil
	}
}

// urlCapable reports a client that declared URL-mode elicitation (per
// request on 2026-07-28, at initialize before).
func urlCapable(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// message tells the person where the decision is made.
func message(h *approval.Handoff) string {
	what := "this action"
	if v, _ := h.PendingApproval["verb"].(string); v != "" {
		what = v
	} else if v, _ := h.Continuation.Request["verb"].(string); v != "" {
		what = v
	}
	return fmt.Sprintf("Approval needed in Vaultclaw for %s. Open the page to approve or deny it there; the decision is made in Vaultclaw, not here.", what)
}

func elicitationID(h *approval.Handoff) string {
	if h.PendingID != "" {
		return "vaultclaw-" + h.PendingID
	}
	return "vaultclaw-" + strings.ToLower(strings.ReplaceAll(h.Key(), ":", "-"))
}

// expiry is when a request state stops being accepted: the approval's own
// expiry, else the end of the longest wait.
func (e *Elicitor) expiry(h *approval.Handoff) time.Time {
	if h.ExpiresAtUnixMS > 0 {
		return time.UnixMilli(h.ExpiresAtUnixMS)
	}
	return e.o.Now().Add(time.Duration(approval.MaxTimeoutMS) * time.Millisecond)
}

// legacy sends elicitation/create in url mode on the session and, once the
// client has shown the page, waits for the decision in the same call.
func (e *Elicitor) legacy(ctx context.Context, req *mcp.CallToolRequest, st state, handoff *mcp.CallToolResult) *mcp.CallToolResult {
	if req.Session == nil {
		return handoff
	}
	hf := st.handoff()
	ectx, cancel := e.bounded(ctx, min(time.Until(time.UnixMilli(st.Exp)), MaxAnswerWait))
	res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Mode: "url", Message: message(hf), URL: st.URL, ElicitationID: st.ElicitationID})
	cancel()
	if err != nil {
		// Stateless HTTP cannot carry a server request; the client may
		// also refuse it. The handoff still holds.
		e.o.Logger.Debug("url elicitation not delivered; answering with the handoff", "error", err.Error())
		return handoff
	}
	if res.Action != "accept" {
		return handoff
	}
	out, decided := e.await(ctx, req, st)
	if decided {
		_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: st.ElicitationID})
	}
	return out
}

// resume is the retry of a 2026-07-28 client: the tool does not run again;
// the sealed state says what to wait on.
func (e *Elicitor) resume(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	st, err := e.open(req.Params.RequestState, e.bindingOf(ctx, req))
	if err != nil {
		return tools.Fail(ctx, apperr.Validation("requestState", "%s; call the tool again without requestState", err.Error()))
	}
	if r, ok := req.Params.InputResponses[st.Key].(*mcp.ElicitResult); !ok || r.Action != "accept" {
		// Declined or dismissed: the approval still waits in Vaultclaw.
		return tools.Fail(ctx, st.handoff().Err())
	}
	out, _ := e.await(ctx, req, st)
	return out
}

// await waits for Vault's decision (with progress notifications when the
// request has a token) and answers with the finished call, or with the
// handoff when no decision came in time.
func (e *Elicitor) await(ctx context.Context, req *mcp.CallToolRequest, st state) (*mcp.CallToolResult, bool) {
	scope := caller.From(ctx).Scope
	sess, err := e.o.Sessions.Resolve(ctx, scope)
	if err != nil {
		return tools.Fail(ctx, err), false
	}
	opts := e.o.Wait
	if left := time.Until(time.UnixMilli(st.Exp)) + time.Second; left < time.Duration(opts.TimeoutMS)*time.Millisecond {
		opts.TimeoutMS = max(int(left.Milliseconds()), approval.MinTimeoutMS)
	}
	wctx, cancel := e.bounded(ctx, time.Duration(opts.TimeoutMS)*time.Millisecond+approval.PollGrace)
	defer cancel()
	res, err := e.o.Awaiter.Await(wctx, scope, sess, st.Handle, opts, progress(req))
	switch {
	case apperr.Is(err, apperr.CodeWaitTimeout), err != nil && wctx.Err() != nil && ctx.Err() == nil:
		// No decision in time, or the server stops: the handoff holds.
		return tools.Fail(ctx, st.handoff().Err()), false
	case err != nil:
		return tools.Fail(ctx, err), false
	}
	return tools.Deliver(ctx, e.o.Finish(ctx, scope, st.Continuation, res)), true
}

// bounded is ctx limited to d and ended by Stop or the server's drain.
func (e *Elicitor) bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, undrain := lifecycle.Interruptible(ctx)
	ctx, cancel := context.WithTimeout(ctx, max(d, time.Second))
	e.mu.Lock()
	stop := context.AfterFunc(e.stop, cancel)
	e.mu.Unlock()
	return ctx, func() { stop(); cancel(); undrain() }
}

func progress(req *mcp.CallToolRequest) approval.Progress {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	return func(ctx context.Context, p, total float64, msg string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: total, Message: msg})
	}
}

// state is what the request state carries: what to wait on and how to
// finish, and how long it is valid.
type state struct {
	V               int                   `json:"v"`
	Exp             int64                 `json:"exp"`
	Key             string                `json:"key"`
	ElicitationID   string                `json:"elicitation_id"`
	Handle          approval.Handle       `json:"handle"`
	ExpiresAtUnixMS int64                 `json:"expires_at_unix_ms"`
	PendingApproval map[string]any        `json:"pending_approval,omitempty"`
	URL             string                `json:"url"`
	RequestID       string                `json:"request_id,omitempty"`
	HTTPStatus      int                   `json:"http_status,omitempty"`
	VaultCode       string                `json:"vault_code,omitempty"`
	Continuation    approval.Continuation `json:"continuation"`
}

// handoff rebuilds the handoff the state was made from.
func (s state) handoff() *approval.Handoff {
	pa := s.PendingApproval
	if pa == nil {
		pa = map[string]any{"remote_attestation_url": s.URL}
	}
	return &approval.Handoff{Handle: s.Handle, ExpiresAtUnixMS: s.ExpiresAtUnixMS, PendingApproval: pa, RemoteAttestationURL: s.URL,
		RequestID: s.RequestID, HTTPStatus: s.HTTPStatus, VaultCode: s.VaultCode, Continuation: s.Continuation}
}

// binding is what a request state is bound to: it opens only for the same
// caller, tenant, launch environment (attached launches), tool and
// arguments.
type binding struct {
	caller, scope, env, tool, args string
}

func (e *Elicitor) bindingOf(ctx context.Context, req *mcp.CallToolRequest) binding {
	p := caller.From(ctx)
	b := binding{caller: p.ID, scope: p.Scope, env: tasks.EnvDigest(e.envKey, ctx)}
	if req.Params != nil {
		b.tool, b.args = req.Params.Name, argsDigest(req.Params.Arguments)
	}
	return b
}

// argsDigest is the SHA-256 of the arguments in canonical form (keys
// sorted), so key order and spacing do not matter.
func argsDigest(raw json.RawMessage) string {
	var v any
	canon := []byte(raw)
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func (b binding) aad() []byte {
	return []byte("accords-mcp request state v1\x00" + b.caller + "\x00" + b.scope + "\x00" + b.env + "\x00" + b.tool + "\x00" + b.args)
}

const statePrefix = "rs1."

// MaxStateBytes bounds a request state read from a client.
const MaxStateBytes = 1 << 20

func (e *Elicitor) seal(st state, b binding) (string, error) {
	pt, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return statePrefix + base64.RawURLEncoding.EncodeToString(e.keys.Seal(pt, b.aad())), nil
}

func (e *Elicitor) open(s string, b binding) (state, error) {
	if len(s) > MaxStateBytes || !strings.HasPrefix(s, statePrefix) {
		return state{}, errors.New("requestState was not issued by this server")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, statePrefix))
	if err != nil {
		return state{}, errors.New("requestState was not issued by this server")
	}
	pt, err := e.keys.Open(raw, b.aad())
	if err != nil {
		return state{}, errors.New("requestState does not belong to this caller, tenant, tool and arguments")
	}
	var st state
	if err := json.Unmarshal(pt, &st); err != nil || st.V != 1 {
		return state{}, errors.New("requestState was not issued by this server")
	}
	if e.o.Now().UnixMilli() > st.Exp {
		return state{}, errors.New("requestState has expired")
	}
	return st, nil
}

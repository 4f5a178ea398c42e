package approval

import (
	"context"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/lifecycle"
)

// Wait bounds of vaultclaw_approval_wait: a missing or non-positive value
// takes the default, others are clamped to [Min, Max].
const (
	DefaultTimeoutMS = 600000
	MinTimeoutMS     = 1000
	MaxTimeoutMS     = 3600000
	DefaultPollMS    = 1500
	MinPollMS        = 250
	MaxPollMS        = 10000
)

// WaitOptions are the wait's timeout and poll interval in milliseconds.
type WaitOptions struct {
	TimeoutMS      int `json:"timeout_ms"`
	PollIntervalMS int `json:"poll_interval_ms"`
}

func clamp(v, def, lo, hi int) int {
	switch {
	case v <= 0:
		return def
	case v < lo:
		return lo
	case v > hi:
		return hi
	}
	return v
}

// Normalize applies defaults (missing or <= 0) and clamps.
func (o WaitOptions) Normalize() WaitOptions {
	return WaitOptions{
		TimeoutMS:      clamp(o.TimeoutMS, DefaultTimeoutMS, MinTimeoutMS, MaxTimeoutMS),
		PollIntervalMS: clamp(o.PollIntervalMS, DefaultPollMS, MinPollMS, MaxPollMS),
	}
}

// Clock is time as the wait sees it; tests inject a fake.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() in that case.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// Progress receives one report per poll.
type Progress func(ctx context.Context, progress, total float64, message string)

// WaitResult is the last observed state of a wait, terminal or not.
type WaitResult struct {
	Handle   Handle
	Done     bool
	State    string
	Outcome  string
	Expired  bool
	Job, Run map[string]any
	Polls    int
	// Body, RequestID and HTTPStatus are the last successful poll's reply.
	Body       map[string]any
	RequestID  string
	HTTPStatus int
}

// Data is the success data of vaultclaw_approval_wait.
func (r WaitResult) Data() map[string]any {
	var job, run any
	if r.Job != nil {
		job = r.Job
	}
	if r.Run != nil {
		run = r.Run
	}
	return map[string]any{
		"done":             true,
		"terminal_status":  r.State,
		"decision_outcome": r.Outcome,
		"expired":          r.Expired,
		"handle":           r.Handle.Compact(),
		"job":              job,
		"run":              run,
	}
}

// RetryHint tells the caller how to resume after a timeout.
const RetryHint = "Call vaultclaw_approval_wait again with the same handle."

// Waiter polls Vault until a handle reaches a terminal state.
type Waiter struct {
	API      API
	Clock    Clock
	Progress Progress
	// Polls, when set, shares polls with other waiters on the same job and
	// identity; nil polls for this waiter alone.
	Polls    *Polls
	Identity string
}

// PollGrace bounds how long a poll may run past the wait's deadline when
// Vault hangs.
const PollGrace = time.Second

// Wait polls h's job or run until it is terminal or the deadline passes
// (D3): at least one poll, sleeps never past the deadline, a poll still
// running PollGrace after it is MCP_WAIT_TIMEOUT, a cancelled ctx stops
// promptly. The result holds the latest state even on error.
func (w Waiter) Wait(ctx context.Context, h Handle, opts WaitOptions) (WaitResult, error) {
	// A wait can stop anywhere: on shutdown it answers at once (see
	// interrupted) instead of holding the server for its grace period.
	ctx, stop := lifecycle.Interruptible(ctx)
	defer stop()
	clock := w.Clock
	if clock == nil {
		clock = RealClock
	}
	opts = opts.Normalize()
	start := clock.Now()
	timeout := time.Duration(opts.TimeoutMS) * time.Millisecond
	deadline := start.Add(timeout)
	interval := time.Duration(opts.PollIntervalMS) * time.Millisecond
	res := WaitResult{Handle: h}
	cur := &Cursor{MaxAge: interval}
	for {
		if err := ctx.Err(); err != nil {
			return res, interrupted(ctx, res, opts)
		}
		pollCtx, cancel := context.WithTimeout(ctx, deadline.Sub(clock.Now())+PollGrace)
		err := w.poll(pollCtx, &res, cur)
		cutOff := pollCtx.Err() != nil
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return res, interrupted(ctx, res, opts)
			}
			if cutOff {
				return res, timeoutErr(res, opts)
			}
			return res, err
		}
		now := clock.Now()
		if w.Progress != nil {
			elapsed := min(now.Sub(start), timeout)
			w.Progress(ctx, float64(elapsed.Milliseconds()), float64(opts.TimeoutMS),
				fmt.Sprintf("poll %d: %s %s, decision %s", res.Polls, h.Kind, res.State, res.Outcome))
		}
		if IsTerminal(res.State) {
			res.Done = true
			if res.Outcome == OutcomePending {
				res.Outcome = OutcomeUnknown
			}
			return res, nil
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 {
			return res, timeoutErr(res, opts)
		}
		if err := clock.Sleep(ctx, min(interval, remaining)); err != nil {
			return res, interrupted(ctx, res, opts)
		}
	}
}

// interrupted answers a wait whose context ended: on shutdown the retryable
// MCP_WAIT_TIMEOUT with its handle (reason server_shutting_down); otherwise
// the client left and the answer goes nowhere.
func interrupted(ctx context.Context, res WaitResult, opts WaitOptions) error {
	if lifecycle.ShuttingDown(ctx) {
		e := timeoutErr(res, opts)
		e.Message = "the server is shutting down; the approval is still pending"
		e.With("reason", "server_shutting_down")
		return e
	}
	cause := context.Cause(ctx)
	return apperr.New(apperr.CodeInternal, "wait cancelled: %v", cause).With("reason", "cancelled").WithCause(cause)
}

func timeoutErr(res WaitResult, opts WaitOptions) *apperr.Error {
	var job, run any
	if res.Job != nil {
		job = res.Job
	}
	if res.Run != nil {
		run = res.Run
	}
	e := apperr.New(apperr.CodeWaitTimeout, "timed out while waiting for approval resolution").
		With("handle", res.Handle.Compact()).
		With("latest", map[string]any{"job": job, "run": run}).
		With("retry_hint", RetryHint).
		With("wait_options", map[string]any{"timeout_ms": opts.TimeoutMS, "poll_interval_ms": opts.PollIntervalMS})
	e.Retryable = true
	return e
}

// Check polls h once and sets Done when the state is terminal; cur is the
// caller's place among shared polls (nil: poll Vault regardless).
func (w Waiter) Check(ctx context.Context, h Handle, cur *Cursor) (WaitResult, error) {
	res := WaitResult{Handle: h}
	if err := w.poll(ctx, &res, cur); err != nil {
		return res, err
	}
	if IsTerminal(res.State) {
		res.Done = true
		if res.Outcome == OutcomePending {
			res.Outcome = OutcomeUnknown
		}
	}
	return res, nil
}

// get reads the job or run of h from Vault, through the shared polls when
// there are any.
func (w Waiter) get(ctx context.Context, h Handle, cur *Cursor) (Reply, error) {
	fetch := func(ctx context.Context) (Reply, error) { return w.API.JobGet(ctx, h.JobID) }
	key := PollKey{Identity: w.Identity, Kind: KindJob, ID: h.JobID}
	if h.Kind == KindPlanRun {
		fetch = func(ctx context.Context) (Reply, error) { return w.API.PlanRunGet(ctx, h.RunID) }
		key = PollKey{Identity: w.Identity, Kind: KindPlanRun, ID: h.RunID}
	}
	if w.Polls == nil || cur == nil {
		return fetch(ctx)
	}
	return w.Polls.Poll(ctx, key, cur, fetch)
}

func (w Waiter) poll(ctx context.Context, res *WaitResult, cur *Cursor) error {
	res.Polls++
	r, err := w.get(ctx, res.Handle, cur)
	switch res.Handle.Kind {
	case KindPlanRun:
		if err != nil {
			return err
		}
		run := obj(r.Body["run"])
		if run == nil {
			return apperr.New(apperr.CodeInternal, "plan run response missing run object").
				With("request_id", r.RequestID).With("vault_http_status", r.Status)
		}
		res.Run, res.Job = run, obj(r.Body["job"])
		res.Body, res.RequestID, res.HTTPStatus = r.Body, r.RequestID, r.Status
		res.State = upper(run["state"])
		res.Outcome = RunOutcome(run, res.Job)
	default:
		if err != nil {
			return err
		}
		job := obj(r.Body["job"])
		if job == nil {
			return apperr.New(apperr.CodeInternal, "job response missing job object").
				With("request_id", r.RequestID).With("vault_http_status", r.Status)
		}
		res.Job, res.Run = job, nil
		res.Body, res.RequestID, res.HTTPStatus = r.Body, r.RequestID, r.Status
		res.State = upper(job["status"])
		res.Outcome = JobOutcome(job)
	}
	res.Expired = res.State == "EXPIRED"
	return nil
}

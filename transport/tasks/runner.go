package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRetryDelay bounds the back-off after Vault failures.
const MaxRetryDelay = 30 * time.Second

// MaxPollDelay bounds how far apart an old task's polls grow.
const MaxPollDelay = 30 * time.Second

// PollDelay is the time between a task's polls at age: the poll interval
// while the task is young, then a twentieth of its age (a person who has
// not decided within ten minutes is not deciding within the next two
// seconds either), at most MaxPollDelay. A task waiting its whole approval
// window (15 minutes in the simulator) thus polls about 80 times instead
// of 450 at 2 s.
func PollDelay(interval, age time.Duration) time.Duration {
	return min(max(interval, age/20), max(interval, MaxPollDelay))
}

// run is one followed task: how to stop it, and whose it is.
type run struct {
	cancel context.CancelFunc
	caller string
}

// Start follows every task still waiting: at start-up, so tasks survive a
// restart.
func (x *Extension) Start() error {
	if err := x.resume(); err != nil {
		return err
	}
	if x.o.Follow != nil {
		x.mu.Lock()
		if x.followCancel == nil && !x.closed {
			ctx, cancel := context.WithCancel(context.Background())
			x.followCancel = cancel
			x.o.Follow(ctx, x.republish)
		}
		x.mu.Unlock()
	}
	if x.o.Claim != nil {
		x.mu.Lock()
		start := x.rescanStop == nil && !x.closed
		if start {
			x.rescanStop = make(chan struct{})
		}
		stop := x.rescanStop
		x.mu.Unlock()
		if start {
			every := x.o.Rescan
			if every <= 0 {
				every = FleetRescan
			}
			x.wg.Go(func() {
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if err := x.resume(); err != nil {
							x.logger.Warn("looking for tasks no replica follows failed", "error", err.Error())
						}
					}
				}
			})
		}
	}
	return nil
}

// resume follows every working task not followed yet (and, with several
// replicas, not claimed by another).
func (x *Extension) resume() error {
	ts, err := x.o.Store.Working()
	if err != nil {
		return err
	}
	for _, t := range ts {
		x.start(t)
	}
	return nil
}

// Close stops following tasks and waits for the pollers to return. Tasks
// stay working in the store and are picked up at the next Start.
func (x *Extension) Close() {
	x.mu.Lock()
	x.closed = true
	if x.followCancel != nil {
		x.followCancel()
		x.followCancel = nil
	}
	if x.rescanStop != nil {
		close(x.rescanStop)
		x.rescanStop = nil
	}
	for _, r := range x.runs {
		r.cancel()
	}
	x.mu.Unlock()
	x.wg.Wait()
}

// Following reports how many tasks are being followed (tests, metrics).
func (x *Extension) Following() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.runs)
}

func (x *Extension) start(t task.Task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.runs[t.Ref]; x.closed || ok {
		return
	}
	if x.o.Claim != nil && !x.o.Claim(t.Ref) {
		return // another replica follows it
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, caller: t.Owner.Caller}
	x.runs[t.Ref] = r
	// Counted against its caller's bound while it is followed (tasks
	// resumed at start too).
	x.working[t.Owner.Caller]++
	x.wg.Go(func() {
		defer x.stop(t.Ref, r)
		x.follow(ctx, t)
	})
}

// stop ends the poller r of ref (nil: whichever follows ref), if it
// still runs, and gives up its claim (under the lock, so that a poller
// started for ref meanwhile keeps the claim it makes).
func (x *Extension) stop(ref string, r *run) {
	x.mu.Lock()
	defer x.mu.Unlock()
	cur, ok := x.runs[ref]
	if !ok || (r != nil && cur != r) {
		return // already stopped; ref may be followed by a later poller
	}
	cur.cancel()
	delete(x.runs, ref)
	x.unworkLocked(cur.caller)
	if x.o.Release != nil {
		x.o.Release(ref)
	}
}

// Reclaim claims again the tasks this replica follows, after its fleet
// membership lapsed (a stalled etcd let its lease expire, and its claims
// with it) and was restored: a task another replica claimed meanwhile is
// left to that replica; then it takes on the working tasks nobody
// follows, those created during the lapse included. Without Claim (one
// process) it does nothing.
func (x *Extension) Reclaim() {
	if x.o.Claim == nil {
		return
	}
	x.mu.Lock()
	held := make(map[string]*run, len(x.runs))
	maps.Copy(held, x.runs)
	x.mu.Unlock()
	for ref, r := range held {
		if !x.o.Claim(ref) {
			x.logger.Info("a task this replica followed is followed by another replica now", "task", ref)
			x.stop(ref, r)
		}
	}
	if err := x.resume(); err != nil {
		x.logger.Warn("looking for tasks no replica follows failed", "error", err.Error())
	}
}

// follow polls Vault until the approval is decided, then finishes the
// call: every interval while the task is young, less often as it ages
// (PollDelay), sharing each poll with whatever else waits on the same job
// (approval.Polls). Vault failures that may pass (network, 5xx, rate
// limits) are retried with back-off; any other failure finishes the task
// with that error, as the polling wait would have answered. A cancelled
// ctx (cancel, shutdown) returns without touching the task.
func (x *Extension) follow(ctx context.Context, t task.Task) {
	interval := time.Duration(t.PollIntervalMS) * time.Millisecond
	if interval <= 0 {
		interval = x.o.PollInterval
	}
	ctx, err := x.withEnv(ctx, t)
	if err != nil {
		x.complete(ctx, t, envelope.Failure(apperr.Internal("resume task", err)), approval.WaitResult{Handle: t.Handle})
		return
	}
	aged := func() time.Duration { return PollDelay(interval, time.Since(t.CreatedAt)) }
	delay, failures, lastState := aged(), 0, ""
	cur := &approval.Cursor{}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		cur.MaxAge = delay
		res, err := x.poll(ctx, t, cur)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && apperr.As(err).Retryable:
			failures++
			delay = max(min(interval<<min(failures, 5), MaxRetryDelay), aged())
			if failures == 1 {
				x.note(t.Ref, fmt.Sprintf("%s Vault did not answer (%s); retrying.", waitingPrefix(t), apperr.As(err).Code), err.Error())
			}
		case err != nil:
			x.complete(ctx, t, envelope.Failure(err), res)
			return
		case res.Done:
			// The claim is checked once more before the call is finished:
			// after a lapse of this replica's membership another replica
			// may have claimed the task, and only one may finish it.
			if x.o.Claim != nil && !x.o.Claim(t.Ref) {
				return
			}
			env := x.o.Finish(ctx, t.Owner.Scope, t.Continuation, res)
			if ctx.Err() != nil {
				return
			}
			x.complete(ctx, t, env, res)
			return
		default:
			if failures > 0 || (lastState != "" && res.State != lastState) {
				x.note(t.Ref, progressMessage(t, res), "")
			}
			failures, delay, lastState = 0, aged(), res.State
		}
		timer.Reset(delay)
	}
}

func (x *Extension) poll(ctx context.Context, t task.Task, cur *approval.Cursor) (approval.WaitResult, error) {
	sess, err := x.o.Sessions.Resolve(ctx, t.Owner.Scope)
	if err != nil {
		return approval.WaitResult{Handle: t.Handle}, err
	}
	return x.o.Checker.Check(ctx, t.Owner.Scope, sess, t.Handle, cur)
}

// waitingPrefix is the first sentence of a working task's message.
func waitingPrefix(t task.Task) string {
	msg, _, _ := strings.Cut(t.StatusMessage, ". ")
	return strings.TrimSuffix(msg, ".") + "."
}

// progressMessage reports a change Vault shows before the decision is
// final (approved and running, for example).
func progressMessage(t task.Task, res approval.WaitResult) string {
	if res.Outcome == approval.OutcomePending && res.State != "RUNNING" {
		return t.StatusMessage
	}
	return fmt.Sprintf("Vault reports %s %s; waiting for it to finish.", strings.ToLower(res.Handle.Kind), res.State)
}

// note updates a working task's message (only when it changes).
func (x *Extension) note(ref, msg, pollErr string) {
	t, err := x.o.Store.Update(ref, func(t *task.Task) error {
		if t.StatusMessage == msg && t.PollError == pollErr {
			return errUnchanged
		}
		t.StatusMessage, t.PollError = msg, pollErr
		return nil
	})
	if err == nil {
		x.link(t)
		x.publish(t)
	}
}

var errUnchanged = errors.New("unchanged")

// complete stores the call's final result, writes the receipt and tells
// listeners. A task cancelled meanwhile stays cancelled.
func (x *Extension) complete(_ context.Context, t task.Task, env envelope.Envelope, res approval.WaitResult) {
	if cur, ok, err := x.o.Store.Load(t.Ref); err != nil || !ok || cur.Terminal() {
		return
	}
	raw, err := json.Marshal(env)
	if err != nil {
		env = envelope.Failure(apperr.Internal("encode task result", err))
		raw, _ = json.Marshal(env)
	}
	outcome := "ok"
	if !env.OK && env.Error != nil {
		outcome = env.Error.Code
	}
	t.Status = task.StatusCompleted
	meta := x.record(t, outcome, raw)
	result := tools.Render(env)
	if len(meta) > 0 {
		result.Meta = mcp.Meta(meta)
	}
	body, err := json.Marshal(result)
	if err != nil {
		x.logger.Error("task result not encoded", "tool", t.Tool, "error", err.Error())
		return
	}
	done, err := x.o.Store.Update(t.Ref, func(t *task.Task) error {
		t.Status, t.Result, t.PollError = task.StatusCompleted, body, ""
		t.StatusMessage = doneMessage(env, res)
		t.Polls += max(res.Polls, 1)
		return nil
	})
	if err != nil {
		if !errors.Is(err, task.ErrTerminal) {
			x.logger.Error("task result not stored", "tool", t.Tool, "error", err.Error())
		}
		return
	}
	x.link(done)
	x.publish(done)
}

// doneMessage summarises how the call ended.
func doneMessage(env envelope.Envelope, res approval.WaitResult) string {
	switch {
	case env.OK && res.Outcome == approval.OutcomeAllow:
		return "Approved in Vaultclaw; the call ran and its result is in result."
	case env.OK:
		return fmt.Sprintf("Decided in Vaultclaw (%s %s); the call's result is in result.", strings.ToLower(res.Handle.Kind), res.State)
	case env.Error != nil && env.Error.Code == apperr.CodeApprovalDenied && res.Expired:
		return "The approval expired in Vaultclaw before anyone decided; nothing was executed."
	case env.Error != nil && env.Error.Code == apperr.CodeApprovalDenied:
		return "Denied in Vaultclaw; nothing was executed."
	case env.Error != nil:
		return fmt.Sprintf("Finished with %s: %s", env.Error.Code, env.Error.Message)
	}
	return "Finished."
}

// subscribe returns a channel that receives every change of the tasks in
// refs, and the function that ends the subscription.
func (x *Extension) subscribe(refs []string) (<-chan task.Task, func()) {
	ch := make(chan task.Task, 16)
	x.mu.Lock()
	for _, r := range refs {
		if x.subs[r] == nil {
			x.subs[r] = map[chan task.Task]struct{}{}
		}
		x.subs[r][ch] = struct{}{}
	}
	x.mu.Unlock()
	return ch, func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		for _, r := range refs {
			delete(x.subs[r], ch)
			if len(x.subs[r]) == 0 {
				delete(x.subs, r)
				delete(x.sent, r)
			}
		}
	}
}

// republish reads the tasks this replica's listeners follow and publishes
// the ones another replica changed.
func (x *Extension) republish() {
	x.mu.Lock()
	refs := make([]string, 0, len(x.subs))
	for r := range x.subs {
		refs = append(refs, r)
	}
	x.mu.Unlock()
	for _, r := range refs {
		if t, ok, err := x.o.Store.Load(r); err == nil && ok {
			x.publish(t)
		}
	}
}

// publish hands t to its listeners; a listener that is not keeping up
// misses intermediate states, never the final one, which it can also poll.
// A state already published (same UpdatedAt) is not sent again.
func (x *Extension) publish(t task.Task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.subs[t.Ref]) == 0 {
		delete(x.sent, t.Ref)
		return
	}
	if last, ok := x.sent[t.Ref]; ok && last.Equal(t.UpdatedAt) {
		return
	}
	if x.sent == nil {
		x.sent = map[string]time.Time{}
	}
	x.sent[t.Ref] = t.UpdatedAt
	for ch := range x.subs[t.Ref] {
		select {
		case ch <- t:
		default:
		}
	}
}

package gateway

import (
	"fmt"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/caller"
)

// Refusal summaries. Calls the gateway refuses before they reach a rule
// or a tool (capability, read-only, toolsets, audit health, rate limit)
// cost the caller nothing, so a caller could otherwise write receipts as
// fast as it can post: a batch of 8,000 refused calls was 8,000 receipts.
// Per caller, session, tenant, tool and refusal code, the first
// RefusalsEach refusals of a window get receipts of their own; the rest of
// that window are counted into one summary receipt (type mcp_refusals,
// `count`), written when the window ends, when the next refusal of that
// key comes after it, or when the gateway closes. A summarised call's
// result carries the summary's call id.

// Defaults of the refusal summaries.
const (
	DefaultRefusalWindow = time.Minute
	DefaultRefusalsEach  = 10
	// maxRefusalWindows bounds the open windows (callers, sessions and
	// tenants are bounded by the policy and the anonymous tenant bound;
	// this bounds the map whatever they are). Past it refusals get
	// receipts of their own.
	maxRefusalWindows = 16384
	// unknownToolsLabel is the tool of a summary of calls naming unknown
	// tools (which share one rate-limit bucket, whatever the name).
	unknownToolsLabel = "unknown tools"
)

type refusalKey struct {
	caller, transport, session, scope, tool, code string
}

type refusalWindow struct {
	start      time.Time // the window's first refusal
	each       int       // refusals receipted one by one
	count      uint64    // refusals counted into the summary
	first      time.Time // of the counted ones
	last       time.Time
	callID     string
	capability string
}

type refusals struct {
	window time.Duration
	each   int
	now    func() time.Time
	write  func(audit.Receipt)

	mu      sync.Mutex
	open    map[refusalKey]*refusalWindow
	closed  bool
	running bool
	stop    chan struct{}
	done    chan struct{}
}

func newRefusals(window time.Duration, each int, now func() time.Time, write func(audit.Receipt)) *refusals {
	if window == 0 {
		window = DefaultRefusalWindow
	}
	if each <= 0 {
		each = DefaultRefusalsEach
	}
	return &refusals{window: window, each: each, now: now, write: write, open: map[refusalKey]*refusalWindow{}}
}

// count decides whether the refusal of key gets a receipt of its own
// (summarised false) or is counted into the summary whose call id it
// returns.
func (r *refusals) count(k refusalKey, capability string) (callID string, summarised bool) {
	if r.window < 0 {
		return "", false
	}
	now := r.now()
	var due []audit.Receipt
	defer func() {
		for _, rec := range due {
			r.write(rec)
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", false
	}
	w := r.open[k]
	if w != nil && now.Sub(w.start) >= r.window {
		if w.count > 0 {
			due = append(due, r.summary(k, w))
		}
		delete(r.open, k)
		w = nil
	}
	if w == nil {
		if len(r.open) >= maxRefusalWindows {
			due = append(due, r.expireLocked(now, false)...)
			if len(r.open) >= maxRefusalWindows {
				return "", false
			}
		}
		r.open[k] = &refusalWindow{start: now, each: 1, capability: capability}
		return "", false
	}
	if w.each < r.each {
		w.each++
		return "", false
	}
	if w.count == 0 {
		w.first, w.callID = now, newCallID()
	}
	w.count++
	w.last = now
	if !r.running {
		r.running = true
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.flusher(r.stop, r.done)
	}
	return w.callID, true
}

// summary is the receipt of w's counted refusals.
func (r *refusals) summary(k refusalKey, w *refusalWindow) audit.Receipt {
	return audit.Receipt{
		Type: audit.TypeRefusals, CallID: w.callID, Timestamp: w.last.UTC().Format(time.RFC3339Nano),
		Caller: k.caller, Transport: k.transport, Session: k.session, Scope: k.scope, Tool: k.tool,
		CapabilityUsed: w.capability, Outcome: k.code, Count: w.count,
		Note: fmt.Sprintf("%d more calls refused with %s from %s to %s, after the %d of this window receipted one by one",
			w.count, k.code, w.first.UTC().Format(time.RFC3339Nano), w.last.UTC().Format(time.RFC3339Nano), w.each),
	}
}

// expireLocked takes out the windows that ended (all of them with every),
// returning the summaries to write.
func (r *refusals) expireLocked(now time.Time, every bool) []audit.Receipt {
	var due []audit.Receipt
	for k, w := range r.open {
		if !every && now.Sub(w.start) < r.window {
			continue
		}
		if w.count > 0 {
			due = append(due, r.summary(k, w))
		}
		delete(r.open, k)
	}
	return due
}

// pendingLocked reports whether a window holds counted refusals.
func (r *refusals) pendingLocked() bool {
	for _, w := range r.open {
		if w.count > 0 {
			return true
		}
	}
	return false
}

// flusher writes the summaries of windows as they end; it runs while some
// window holds counted refusals.
func (r *refusals) flusher(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(min(r.window/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		due := r.expireLocked(r.now(), false)
		idle := !r.pendingLocked()
		if idle {
			r.running = false
		}
		r.mu.Unlock()
		for _, rec := range due {
			r.write(rec)
		}
		if idle {
			return
		}
	}
}

// Flush writes every pending summary now (windows start afresh).
func (r *refusals) Flush() {
	r.mu.Lock()
	due := r.expireLocked(r.now(), true)
	r.mu.Unlock()
	for _, rec := range due {
		r.write(rec)
	}
}

// close writes the pending summaries and stops the flusher; later
// refusals get receipts of their own.
func (r *refusals) close() {
	r.mu.Lock()
	r.closed = true
	due := r.expireLocked(r.now(), true)
	stop, done, running := r.stop, r.done, r.running
	r.running = false
	r.mu.Unlock()
	if running {
		close(stop)
		<-done
	}
	for _, rec := range due {
		r.write(rec)
	}
}

// refusalKeyOf is the summary key of a refusal of tool with code.
func refusalKeyOf(p caller.Principal, tool, code string) refusalKey {
	return refusalKey{caller: p.ID, transport: p.Transport, session: p.Session, scope: p.Scope, tool: tool, code: code}
}

package approval

import (
	"context"
	"sync"
	"time"
)

// Polls shares the Vault polls of one job or run among its waiters (the task
// and any wait calls): a waiter joins a poll in flight, takes a newer state
// another waiter brought, or polls itself, so N waiters cost one request per
// interval. Polls are shared only between waiters with the same Vault
// identity, only successful replies are kept, and a failed poll reaches only
// the waiters that joined it. Safe for concurrent use.
type Polls struct {
	mu      sync.Mutex
	entries map[PollKey]*polled
	// gen numbers polls across all keys, so a cursor's generation stays
	// comparable after its entry was swept and made again.
	gen     uint64
	sweepAt int
}

// PollKey names one job or plan run as one Vault identity sees it.
type PollKey struct {
	// Identity is an opaque digest of the Vault session (never a token).
	Identity string
	Kind     string
	ID       string
}

// Cursor is one waiter's place among the polls of its job: the generation
// of the last state it saw. The zero Cursor has seen none.
type Cursor struct {
	seen uint64
	// MaxAge is how old another waiter's state may be to serve as this
	// waiter's first; 0 lets only a poll in flight serve it.
	MaxAge time.Duration
}

// polled is the latest successful poll of one key, and the poll in flight.
type polled struct {
	gen    uint64 // 0: no successful poll kept
	at     time.Time
	reply  Reply
	flight *flight
}

// flight is one Vault request that several waiters may be waiting on.
type flight struct {
	gen     uint64
	at      time.Time
	done    chan struct{}
	reply   Reply
	err     error
	waiters int
	cancel  context.CancelFunc
}

// keepPolled is how long an entry outlives its last poll: past the longest
// poll interval (30 s), no waiter can still take its state.
const keepPolled = time.Minute

// minSweepAt is the entry count that triggers the first sweep.
const minSweepAt = 256

// NewPolls returns an empty set of shared polls.
func NewPolls() *Polls {
	return &Polls{entries: map[PollKey]*polled{}, sweepAt: minSweepAt}
}

// Poll returns a state of key newer than cur saw: from the poll in flight,
// another waiter's latest, or fetch, which runs detached from ctx until
// every waiter has left. Each caller gets its own copy of the body.
func (p *Polls) Poll(ctx context.Context, key PollKey, cur *Cursor, fetch func(context.Context) (Reply, error)) (Reply, error) {
	now := time.Now()
	p.mu.Lock()
	e := p.entries[key]
	if e == nil {
		if len(p.entries) >= p.sweepAt {
			p.sweepLocked(now)
		}
		e = &polled{}
		p.entries[key] = e
	}
	f := e.flight
	switch {
	case f != nil:
		f.waiters++
	case e.gen > cur.seen && (cur.seen != 0 || now.Sub(e.at) <= cur.MaxAge):
		cur.seen = e.gen
		r := e.reply
		p.mu.Unlock()
		return cloneReply(r), nil
	default:
		p.gen++
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{gen: p.gen, at: now, done: make(chan struct{}), waiters: 1, cancel: cancel}
		e.flight = f
		go p.run(fctx, key, e, f, fetch)
	}
	p.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		p.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
		}
		p.mu.Unlock()
		return Reply{}, ctx.Err()
	}
	cur.seen = f.gen
	if f.err != nil {
		return Reply{}, f.err
	}
	return cloneReply(f.reply), nil
}

// run performs one flight and keeps its reply for later waiters unless it
// failed.
func (p *Polls) run(ctx context.Context, key PollKey, e *polled, f *flight, fetch func(context.Context) (Reply, error)) {
	r, err := fetch(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	f.reply, f.err = r, err
	if err == nil && f.gen > e.gen {
		e.gen, e.at, e.reply = f.gen, f.at, r
	}
	if e.flight == f {
		e.flight = nil
	}
	// A flight abandoned by every waiter ended with ctx's error: nothing
	// to keep, and nobody to tell.
	if ctx.Err() != nil && e.gen == 0 && p.entries[key] == e {
		delete(p.entries, key)
	}
	f.cancel()
	close(f.done)
}

// sweepLocked drops the entries nobody can take a state from any more.
func (p *Polls) sweepLocked(now time.Time) {
	for k, e := range p.entries {
		if e.flight == nil && now.Sub(e.at) > keepPolled {
			delete(p.entries, k)
		}
	}
	p.sweepAt = max(minSweepAt, 2*len(p.entries))
}

// Len is the number of jobs and runs with shared polls (tests).
func (p *Polls) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// cloneReply copies r's body, so that no two waiters share the maps of one
// decoded reply.
func cloneReply(r Reply) Reply {
	if r.Body != nil {
		r.Body, _ = cloneJSON(r.Body).(map[string]any)
	}
	return r
}

// cloneJSON deep-copies a decoded JSON value.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}

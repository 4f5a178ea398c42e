// Package gate holds calls while the process swaps what they depend on (a
// restore's database swap, shutdown's drain).
package gate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is what calls held at shutdown get: they never started.
var ErrClosed = errors.New("the daemon is shutting down; the call was not started")

// Gate counts calls in flight and can hold new ones. The zero value is open.
type Gate struct {
	mu       sync.Mutex
	inflight int
	held     bool
	closed   bool
	// open is closed (the channel) when a pause ends; nil while not held.
	open chan struct{}
	// idle is signalled when inflight drops to zero during a pause.
	idle chan struct{}
}

// Enter waits while the gate is held and counts the call; call leave once.
// It fails when ctx ends while held, or after Close.
func (g *Gate) Enter(ctx context.Context) (leave func(), err error) {
	g.mu.Lock()
	for g.held && !g.closed {
		open := g.open
		g.mu.Unlock()
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	if g.closed {
		g.mu.Unlock()
		return nil, ErrClosed
	}
	g.inflight++
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(g.leave) }, nil
}

func (g *Gate) leave() {
	g.mu.Lock()
	g.inflight--
	if g.inflight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// InFlight is the number of calls entered and not yet left.
func (g *Gate) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight
}

// ErrBusy means calls were still running when the pause gave up.
var ErrBusy = errors.New("calls still in flight")

// Pause holds new calls and waits up to timeout for those in flight; on
// success the gate stays held until resume, on failure it is open again.
// One pause at a time.
func (g *Gate) Pause(ctx context.Context, timeout time.Duration) (resume func(), err error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, ErrClosed
	}
	if g.held {
		g.mu.Unlock()
		return nil, errors.New("another pause is in progress")
	}
	g.held = true
	g.open = make(chan struct{})
	var idle chan struct{}
	if g.inflight > 0 {
		idle = make(chan struct{})
		g.idle = idle
	}
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		g.held = false
		close(g.open)
		g.open = nil
		g.idle = nil
		g.mu.Unlock()
	}
	if idle != nil {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
			n := g.InFlight()
			release()
			return nil, fmt.Errorf("%w: %d call(s) did not finish within %s", ErrBusy, n, timeout)
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}

// Close waits up to grace for calls in flight, then refuses every call with
// ErrClosed; it reports how many were still running.
func (g *Gate) Close(grace time.Duration) int {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0
	}
	var idle chan struct{}
	if g.inflight > 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle = g.idle
	}
	g.closed = true
	if g.open != nil {
		// Wake the calls held by a pause: they get ErrClosed.
		close(g.open)
		g.open = make(chan struct{})
	}
	g.mu.Unlock()
	if idle != nil {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
		}
	}
	return g.InFlight()
}

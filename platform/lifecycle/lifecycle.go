// Package lifecycle tells long calls (approval waits) that the server is
// stopping, so they answer at once instead of holding shutdown.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// ErrShuttingDown is the cause of a context ended by Drain.Begin.
var ErrShuttingDown = errors.New("the server is shutting down")

// Drain is the shutdown signal. Its zero value is not usable; use NewDrain.
type Drain struct {
	once sync.Once
	ch   chan struct{}
}

// NewDrain returns a drain that has not begun.
func NewDrain() *Drain { return &Drain{ch: make(chan struct{})} }

// Begin starts the shutdown; calling it again does nothing.
func (d *Drain) Begin() { d.once.Do(func() { close(d.ch) }) }

// Done is closed once Begin was called.
func (d *Drain) Done() <-chan struct{} { return d.ch }

type drainKey struct{}

// With returns ctx carrying d.
func With(ctx context.Context, d *Drain) context.Context {
	if d == nil {
		return ctx
	}
	return context.WithValue(ctx, drainKey{}, d)
}

// Interruptible returns a context that also ends, with cause
// ErrShuttingDown, when ctx's drain begins; only for calls that can stop
// at any point. Call cancel when done.
func Interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	d, _ := ctx.Value(drainKey{}).(*Drain)
	ctx, cancel := context.WithCancelCause(ctx)
	if d == nil {
		return ctx, func() { cancel(nil) }
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-d.ch:
			cancel(ErrShuttingDown)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// ShuttingDown reports whether ctx ended because the server is stopping.
func ShuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

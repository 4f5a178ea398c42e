package audit

import (
	"errors"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// UnverifiedError is Integrity's answer while the start-up verification
// cannot read the store; it wraps the store's error, so it is retryable.
type UnverifiedError struct{ Cause error }

func (e *UnverifiedError) Error() string {
	return "the audit log's start-up verification is waiting for the store: " + e.Cause.Error()
}

func (e *UnverifiedError) Unwrap() error { return e.Cause }

// Retry bounds of a start-up verification that cannot reach the store.
const (
	verifyRetryMin = 100 * time.Millisecond
	verifyRetryMax = 5 * time.Second
)

// verifyStart verifies the newest stretch and records a failure (one
// recorded earlier stands unless a new one replaces it), applies retention
// when the log is intact, then lets Integrity and the writer go on. A store
// out of reach is retried until the log closes.
func (l *Log) verifyStart(recorded *Problem) {
	defer close(l.verified)
	defer l.attemptedOnce.Do(func() { close(l.attempted) })
	if d := l.opts.VerifyDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.hurry:
			t.Stop()
		}
	}
	p, err := l.checkStart()
	for wait, last := verifyRetryMin, false; err != nil && errors.Is(err, store.ErrUnavailable); wait = min(2*wait, verifyRetryMax) {
		if last {
			return // closed unverified: the writer commits nothing
		}
		l.waiting.Store(&UnverifiedError{Cause: err})
		l.attemptedOnce.Do(func() { close(l.attempted) })
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.stopping:
			t.Stop()
			last = true
		}
		p, err = l.checkStart()
	}
	l.waiting.Store(nil)
	if err != nil {
		p = &Problem{Kind: ProblemCorrupt, Message: err.Error()}
	}
	if p == nil && recorded == nil && l.opts.CheckAnchor {
		p = l.checkAnchor()
	}
	if p == nil && recorded != nil {
		l.problem.Store(recorded)
		if l.opts.OnStartProblem != nil {
			l.opts.OnStartProblem(recorded)
		}
		return
	}
	if p == nil {
		if _, err := l.prune(); err != nil {
			l.setErr(err)
		}
		return
	}
	if err := inAudit(l.db.Update, func(b buckets) error {
		return store.PutJSON(b.root, keyIntegrity, p)
	}); err != nil {
		l.setErr(err)
	}
	l.problem.Store(p)
	if l.opts.OnStartProblem != nil {
		l.opts.OnStartProblem(p)
	}
}

// checkStart runs checkStretch in a read transaction; a transaction error
// wins over what checkStretch made of failed reads.
func (l *Log) checkStart() (*Problem, error) {
	var p *Problem
	err := inAudit(l.db.View, func(b buckets) error {
		p = l.checkStretch(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// unverified is the error the start-up verification gave up with, if any.
func (l *Log) unverified() error {
	if u := l.waiting.Load(); u != nil {
		return u
	}
	return nil
}

// Verified is closed once the start-up verification has finished.
func (l *Log) Verified() <-chan struct{} { return l.verified }

// verifyNow ends VerifyDelay's wait.
func (l *Log) verifyNow() { l.hurryOnce.Do(func() { close(l.hurry) }) }

// Integrity reports the unacknowledged verification failure, if any (write
// tools are refused and no checkpoint is signed while it stands). It waits
// for the start-up verification, or returns an *UnverifiedError while that
// cannot reach the store.
func (l *Log) Integrity() (*Problem, error) {
	l.verifyNow()
	select {
	case <-l.verified:
	case <-l.attempted:
		if u := l.waiting.Load(); u != nil {
			return nil, u
		}
		// The verification has just read the store and is finishing.
		<-l.verified
	}
	if err := l.unverified(); err != nil {
		return nil, err // it gave up: the log closed while the store was out of reach
	}
	return l.problem.Load(), nil
}

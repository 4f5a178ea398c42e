// Package within bounds a step of a test that would otherwise hang until
// the test binary's deadline: a wait on something that should have
// happened, a call that must not block.
package within

import (
	"testing"
	"time"
)

// Limit is how long Run lets a step take.
const Limit = 10 * time.Second

// Run runs fn on its own goroutine and fails the test, naming what, when
// fn has not returned within Limit. A require failing inside fn ends only
// fn's goroutine; Run then stops the test itself, as the failure would
// have on the test's goroutine.
func Run(t testing.TB, what string, fn func()) {
	t.Helper()
	runFor(t, Limit, what, fn)
}

func runFor(t testing.TB, limit time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	returned := false
	go func() {
		defer close(done)
		fn()
		returned = true
	}()
	select {
	case <-done:
		if !returned {
			t.FailNow()
		}
	case <-time.After(limit):
		t.Fatalf("%s: still waiting after %s", what, limit)
	}
}

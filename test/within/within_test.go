package within

import (
	"runtime"
	"testing"
	"time"
)

// fakeT records a failure instead of stopping a test.
type fakeT struct {
	testing.TB
	failed  string
	stopped bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
}
func (f *fakeT) FailNow() { f.stopped = true }

func TestRunReturnsWhenTheStepDoes(t *testing.T) {
	ran := false
	Run(t, "a quick step", func() { ran = true })
	if !ran {
		t.Fatal("the step did not run")
	}
}

func TestRunFailsAStepThatHangs(t *testing.T) {
	f := &fakeT{}
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	runFor(f, 50*time.Millisecond, "a stuck step", func() { <-release })
	if f.failed == "" {
		t.Fatal("a step that never returned did not fail the test")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("failed after %s, before the limit", d)
	}
}

// A step whose require failed (runtime.Goexit on its goroutine) stops the
// test instead of letting it go on.
func TestRunStopsTheTestWhenTheStepFailedNow(t *testing.T) {
	f := &fakeT{}
	Run(f, "a failing step", func() { runtime.Goexit() })
	if !f.stopped {
		t.Fatal("the test went on after its step called FailNow")
	}
	f = &fakeT{}
	Run(f, "a passing step", func() {})
	if f.stopped || f.failed != "" {
		t.Fatal("a step that returned failed the test")
	}
}

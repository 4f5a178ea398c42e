package within

import (
	"testing"
	"time"
)

// fakeT records a failure instead of stopping a test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
}

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

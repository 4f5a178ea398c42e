package resident

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeOS is a resident set the test moves by hand.
type fakeOS struct {
	mu       sync.Mutex
	rss      int64
	released []Range
	err      error
}

func (f *fakeOS) read() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rss, f.err
}

func (f *fakeOS) release(r Range) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, r)
	f.rss -= int64(r.Len)
	return nil
}

func (f *fakeOS) set(n int64) {
	f.mu.Lock()
	f.rss = n
	f.mu.Unlock()
}

func (f *fakeOS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.released)
}

func fakeGovernor(os *fakeOS, opts Options) *Governor {
	g := New(opts)
	g.readRSS, g.release = os.read, os.release
	return g
}

func TestTrimReleasesEverySourceAndCountsWhatItFreed(t *testing.T) {
	os := &fakeOS{rss: 100}
	var reported []string
	g := fakeGovernor(os, Options{Budget: 10, OnError: func(name string, err error) { reported = append(reported, name+": "+err.Error()) }})
	g.Add("a", func(release func(Range)) error {
		release(Range{Addr: 0x1000, Len: 30})
		release(Range{Addr: 0x9000, Len: 0}) // nothing to release
		return nil
	})
	g.Add("b", func(release func(Range)) error {
		release(Range{Addr: 0x5000, Len: 20})
		return errors.New("snapshot closed")
	})
	g.Trim()
	assert.Equal(t, []Range{{Addr: 0x1000, Len: 30}, {Addr: 0x5000, Len: 20}}, os.released, "empty ranges are skipped")
	assert.Equal(t, []string{"b: snapshot closed"}, reported)
	assert.Equal(t, int64(1), g.Trims())
	assert.Equal(t, int64(50), g.Freed())
}

func TestRunReleasesOnlyAboveTheBudgetAndNotMoreOftenThanMinGap(t *testing.T) {
	os := &fakeOS{rss: 5}
	g := fakeGovernor(os, Options{Budget: 10, Every: time.Millisecond, MinGap: time.Hour})
	g.Add("a", func(release func(Range)) error { release(Range{Addr: 0x1000, Len: 1}); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	time.Sleep(30 * time.Millisecond)
	assert.Zero(t, os.count(), "under the budget nothing is released")
	os.set(50)
	require.Eventually(t, func() bool { return os.count() == 1 }, 5*time.Second, time.Millisecond)
	os.set(50)
	time.Sleep(30 * time.Millisecond)
	assert.Equal(t, 1, os.count(), "MinGap holds the next release back")
	cancel()
	<-done
}

func TestRunReturnsWhenTheResidentSetCannotBeReadOrTheBudgetIsOff(t *testing.T) {
	for name, tc := range map[string]struct {
		budget int64
		err    error
	}{
		"unreadable": {budget: 10, err: errors.New("no /proc")},
		"off":        {budget: 0},
	} {
		t.Run(name, func(t *testing.T) {
			g := fakeGovernor(&fakeOS{rss: 100, err: tc.err}, Options{Budget: tc.budget, Every: time.Millisecond})
			done := make(chan struct{})
			go func() { g.Run(context.Background()); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run kept running")
			}
		})
	}
}

func TestAddWhileRunning(t *testing.T) {
	os := &fakeOS{rss: 50}
	g := fakeGovernor(os, Options{Budget: 10, Every: time.Millisecond, MinGap: time.Millisecond})
	go g.Run(t.Context())
	for i := range 20 {
		g.Add("s", func(release func(Range)) error { release(Range{Addr: uintptr(i+1) << 12, Len: 1}); return nil })
		os.set(50)
		time.Sleep(time.Millisecond)
	}
	require.Eventually(t, func() bool { return os.count() > 0 }, 5*time.Second, time.Millisecond)
}

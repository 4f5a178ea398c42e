package ratelimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestBurstThenRefusalThenRecovery(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	lm := New(c.now)
	l := Limit{PerMinute: 60, Burst: 3}
	for i := range 3 {
		ok, _ := lm.Allow("k", l)
		require.True(t, ok, "call %d within burst", i)
	}
	ok, wait := lm.Allow("k", l)
	require.False(t, ok)
	assert.Equal(t, time.Second, wait, "60/min refills one token per second")

	c.advance(500 * time.Millisecond)
	ok, wait = lm.Allow("k", l)
	require.False(t, ok)
	assert.Equal(t, 500*time.Millisecond, wait)

	c.advance(500 * time.Millisecond)
	ok, _ = lm.Allow("k", l)
	require.True(t, ok, "one token after a second")
	ok, _ = lm.Allow("k", l)
	require.False(t, ok)

	c.advance(time.Hour)
	for range 3 {
		ok, _ := lm.Allow("k", l)
		require.True(t, ok, "refill is capped at the burst")
	}
	ok, _ = lm.Allow("k", l)
	require.False(t, ok)
}

func TestKeysAreIndependentAndUnlimited(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	lm := New(c.now)
	l := Limit{PerMinute: 1, Burst: 1}
	ok, _ := lm.Allow("a", l)
	require.True(t, ok)
	ok, _ = lm.Allow("a", l)
	require.False(t, ok)
	ok, _ = lm.Allow("b", l)
	require.True(t, ok, "another key has its own bucket")
	for range 1000 {
		ok, _ := lm.Allow("a", Limit{})
		require.True(t, ok, "unlimited never refuses")
	}
}

func TestLimitChangeResizesWithoutRefilling(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	lm := New(c.now)
	for range 10 {
		ok, _ := lm.Allow("k", Limit{PerMinute: 60, Burst: 10})
		require.True(t, ok)
	}
	ok, _ := lm.Allow("k", Limit{PerMinute: 60, Burst: 2})
	require.False(t, ok, "an emptied bucket stays empty after a reload")
	c.advance(10 * time.Second)
	for range 2 {
		ok, _ := lm.Allow("k", Limit{PerMinute: 60, Burst: 2})
		require.True(t, ok)
	}
	ok, _ = lm.Allow("k", Limit{PerMinute: 60, Burst: 2})
	require.False(t, ok, "new burst caps the refill")
}

func TestSmallerBurstCapsAFullBucket(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	lm := New(c.now)
	ok, _ := lm.Allow("k", Limit{PerMinute: 60, Burst: 10})
	require.True(t, ok)
	c.advance(time.Minute) // full again: 10 tokens
	for i := range 2 {
		ok, _ := lm.Allow("k", Limit{PerMinute: 60, Burst: 2})
		require.True(t, ok, "call %d within the new burst", i)
	}
	ok, wait := lm.Allow("k", Limit{PerMinute: 60, Burst: 2})
	require.False(t, ok, "the reload does not keep the old, larger bucket")
	assert.Equal(t, time.Second, wait)
	ok, wait = lm.Allow("k", Limit{PerMinute: 6, Burst: 2})
	require.False(t, ok)
	assert.Equal(t, 10*time.Second, wait, "a slower rate lengthens the wait")
}

func TestClockGoingBackwards(t *testing.T) {
	c := &clock{t: time.Unix(100, 0)}
	lm := New(c.now)
	l := Limit{PerMinute: 60, Burst: 1}
	ok, _ := lm.Allow("k", l)
	require.True(t, ok)
	c.advance(-time.Hour)
	ok, _ = lm.Allow("k", l)
	require.False(t, ok, "a clock step back never grants tokens")
	c.advance(time.Hour + time.Second)
	ok, _ = lm.Allow("k", l)
	require.True(t, ok, "back where it was plus a second: one token")
	ok, _ = lm.Allow("k", l)
	require.False(t, ok)
}

func TestSweepBoundsMemory(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	lm := New(c.now)
	lm.sweepAt = 100
	l := Limit{PerMinute: 60, Burst: 5}
	for i := range 100 {
		lm.Allow(fmt.Sprint(i), l)
	}
	c.advance(time.Minute)
	lm.Allow("new", l)
	assert.Equal(t, 1, lm.Len(), "refilled idle buckets are dropped")
}

func BenchmarkAllow(b *testing.B) {
	lm := New(nil)
	l := Limit{PerMinute: 1e9, Burst: 1 << 30}
	for range b.N {
		lm.Allow("caller:x|tool", l)
	}
}

// Three replicas holding a 60/min, burst 10 limit each take a third; the
// fleet's burst is at most Burst+n-1 (rounding up), and its rate exactly
// the limit.
func TestShareSplitsALimitAmongReplicas(t *testing.T) {
	l := Limit{PerMinute: 60, Burst: 10}
	require.Equal(t, l, l.Share(1))
	require.Equal(t, l, l.Share(0))
	s := l.Share(3)
	require.InDelta(t, 20, s.PerMinute, 1e-9)
	require.Equal(t, 4, s.Burst)
	require.Equal(t, Limit{}, Limit{}.Share(3), "unlimited stays unlimited")
	require.Equal(t, 1, Limit{PerMinute: 6, Burst: 1}.Share(5).Burst)

	now := time.Unix(0, 0)
	replicas := []*Limiter{New(func() time.Time { return now }), New(func() time.Time { return now }), New(func() time.Time { return now })}
	admitted := 0
	for i := range 300 { // round robin, all at one instant: only bursts
		if ok, _ := replicas[i%3].Allow("k", s); ok {
			admitted++
		}
	}
	require.Equal(t, 12, admitted, "burst 10 shared by 3 admits at most 10+3-1")
}

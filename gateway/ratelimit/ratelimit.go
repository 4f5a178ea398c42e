// Package ratelimit keeps golang.org/x/time/rate token buckets keyed by a
// string, with a memory bound, limits that change on a policy reload and
// the wait a refused caller is told; the clock is injectable.
package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a refill rate and a bucket size. The zero Limit (or a
// non-positive rate) means unlimited.
type Limit struct {
	PerMinute float64 // sustained calls per minute
	Burst     int     // bucket size (below 1 counts as 1)
}

// Unlimited reports whether the limit lets everything through.
func (l Limit) Unlimited() bool { return l.PerMinute <= 0 }

func (l Limit) capacity() float64 {
	if l.Burst < 1 {
		return 1
	}
	return float64(l.Burst)
}

type bucket struct {
	limit Limit
	lim   *rate.Limiter
}

func newBucket(l Limit) *bucket {
	return &bucket{limit: l, lim: rate.NewLimiter(l.rate(), int(l.capacity()))}
}

// rate is the refill rate in tokens per second.
func (l Limit) rate() rate.Limit { return rate.Limit(l.PerMinute / 60) }

// Limiter holds the buckets. It is safe for concurrent use.
type Limiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
	// sweepAt is the map size that triggers dropping full buckets, so
	// memory stays bounded by the number of active callers.
	sweepAt int
}

// New returns a limiter reading time from now (time.Now when nil).
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, buckets: map[string]*bucket{}, sweepAt: 4096}
}

// Allow takes one token from the bucket key under limit l. When the bucket
// is empty it returns false and how long until a token is available. A
// changed limit (policy reload) re-sizes the bucket without refilling it.
func (lm *Limiter) Allow(key string, l Limit) (bool, time.Duration) {
	if l.Unlimited() {
		return true, 0
	}
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	b, ok := lm.buckets[key]
	if !ok {
		if len(lm.buckets) >= lm.sweepAt {
			lm.sweepLocked(now)
		}
		b = newBucket(l)
		lm.buckets[key] = b
	}
	if b.limit != l { // a smaller bucket keeps what it had, never more
		b.lim.SetLimitAt(now, l.rate())
		b.lim.SetBurstAt(now, int(l.capacity()))
		b.limit = l
	}
	// A clock stepping back never grants tokens (rate sees no elapsed time).
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - b.lim.TokensAt(now)
	wait := max(time.Duration(missing*float64(time.Minute)/l.PerMinute), time.Millisecond)
	return false, wait
}

// sweepLocked drops buckets that have refilled completely: forgetting them
// is indistinguishable from keeping them.
func (lm *Limiter) sweepLocked(now time.Time) {
	for k, b := range lm.buckets {
		if b.lim.TokensAt(now) >= b.limit.capacity() {
			delete(lm.buckets, k)
		}
	}
	if len(lm.buckets) >= lm.sweepAt {
		lm.sweepAt = 2 * len(lm.buckets)
	}
}

// Len is the number of live buckets (tests, metrics).
func (lm *Limiter) Len() int {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return len(lm.buckets)
}

// Share is one replica's part of l when n replicas enforce it together:
// the rate divided by n and the burst rounded up (at least 1), so the fleet
// admits at most the rate plus Burst+n-1 calls over any window; a replica
// sent more than its share refuses early, never late.
func (l Limit) Share(n int) Limit {
	if n <= 1 || l.Unlimited() {
		return l
	}
	return Limit{PerMinute: l.PerMinute / float64(n), Burst: int(math.Ceil(l.capacity() / float64(n)))}
}

// Package ratelimit implements token buckets keyed by an arbitrary string
// (the gateway uses caller-or-tenant plus tool). The clock is injectable so
// refusal and recovery can be tested without sleeping.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Limit is a refill rate and a bucket size. The zero Limit (or a
// non-positive rate) means unlimited.
type Limit struct {
	// PerMinute is the sustained number of calls per minute.
	PerMinute float64
	// Burst is the bucket size: calls allowed back to back from a full
	// bucket. Values below 1 are treated as 1 for a limited bucket.
	Burst int
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
	limit  Limit
	tokens float64
	last   time.Time
}

// Limiter holds the buckets. It is safe for concurrent use.
type Limiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
	// sweepAt is the map size that triggers dropping idle full buckets, so
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
		b = &bucket{limit: l, tokens: l.capacity(), last: now}
		lm.buckets[key] = b
	}
	if b.limit != l {
		b.limit = l
		b.tokens = math.Min(b.tokens, l.capacity())
	}
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	perToken := time.Duration(float64(time.Minute) / l.PerMinute)
	wait := max(time.Duration((1-b.tokens)*float64(perToken)), time.Millisecond)
	return false, wait
}

func (b *bucket) refill(now time.Time) {
	elapsed := now.Sub(b.last)
	if elapsed <= 0 {
		// The clock went backwards or did not move: keep the bucket as is.
		return
	}
	b.last = now
	b.tokens = math.Min(b.limit.capacity(), b.tokens+elapsed.Minutes()*b.limit.PerMinute)
}

// sweepLocked drops buckets that have refilled completely: forgetting them
// is indistinguishable from keeping them.
func (lm *Limiter) sweepLocked(now time.Time) {
	for k, b := range lm.buckets {
		b.refill(now)
		if b.tokens >= b.limit.capacity() {
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

// Share is one replica's part of l when n replicas behind a load balancer
// enforce it together: the rate divided by n and the burst rounded up (at
// least 1). With calls spread evenly the fleet then admits at most the
// rate plus Burst+n-1 calls over any window (the rounding allows one extra
// call per replica); a replica that gets more than its share refuses
// early, never late. docs/scale-out.md states the bound.
func (l Limit) Share(n int) Limit {
	if n <= 1 || l.Unlimited() {
		return l
	}
	return Limit{PerMinute: l.PerMinute / float64(n), Burst: int(math.Ceil(l.capacity() / float64(n)))}
}

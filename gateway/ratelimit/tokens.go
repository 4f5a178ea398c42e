package ratelimit

// Tokens reports the tokens left in bucket key, and false when the bucket
// is not live (full, or never used): the caller then has the whole burst.
func (lm *Limiter) Tokens(key string) (float64, bool) {
	now := lm.now()
	lm.mu.Lock()
	defer lm.mu.Unlock()
	b, ok := lm.buckets[key]
	if !ok {
		return 0, false
	}
	return b.lim.TokensAt(now), true
}

package approval

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

type scripted struct {
	status int
	body   string
	err    error
}

// fakeAPI scripts job/run/pending replies; the last entry of a queue repeats.
type fakeAPI struct {
	mu       sync.Mutex
	jobs     []scripted
	runs     []scripted
	pending  []scripted
	queries  []url.Values
	jobCalls int
	runCalls int
	onPoll   func()
}

func decode(s string) map[string]any {
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func next(q *[]scripted) (Reply, error) {
	if len(*q) == 0 {
		return Reply{}, &apperr.Error{Code: apperr.CodeInternal, VaultCode: "HTTP_ERROR", Details: map[string]any{"vault_http_status": 404}}
	}
	s := (*q)[0]
	if len(*q) > 1 {
		*q = (*q)[1:]
	}
	if s.err != nil {
		return Reply{}, s.err
	}
	st := s.status
	if st == 0 {
		st = 200
	}
	return Reply{Status: st, RequestID: "req_poll", Body: decode(s.body)}, nil
}

func (f *fakeAPI) JobGet(_ context.Context, id string) (Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobCalls++
	if f.onPoll != nil {
		f.onPoll()
	}
	return next(&f.jobs)
}

func (f *fakeAPI) PlanRunGet(_ context.Context, id string) (Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runCalls++
	if f.onPoll != nil {
		f.onPoll()
	}
	return next(&f.runs)
}

func (f *fakeAPI) PendingApprovals(_ context.Context, q url.Values) (Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	return next(&f.pending)
}

// fakeClock advances only when the wait sleeps.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return nil
}

func (c *fakeClock) elapsed(start time.Time) time.Duration { return c.Now().Sub(start) }

package vault

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// executeCalls are every execute-type call of the client, made without a
// key.
func executeCalls(c *Client) map[string]func(ctx context.Context, base string) (*Response, error) {
	return map[string]func(ctx context.Context, base string) (*Response, error){
		PathExecute: func(ctx context.Context, b string) (*Response, error) {
			return c.Execute(ctx, sess(b), map[string]any{}, "")
		},
		PathExecuteJob: func(ctx context.Context, b string) (*Response, error) {
			return c.ExecuteJob(ctx, sess(b), map[string]any{}, "")
		},
		PathPlanExecute: func(ctx context.Context, b string) (*Response, error) {
			return c.PlanExecute(ctx, sess(b), map[string]any{}, "")
		},
		PathProfileUpsert: func(ctx context.Context, b string) (*Response, error) {
			return c.ProfileUpsert(ctx, sess(b), map[string]any{}, "")
		},
		PathSlotBind: func(ctx context.Context, b string) (*Response, error) {
			return c.SlotBind(ctx, sess(b), map[string]any{}, "")
		},
	}
}

// TestNoExecuteTypeRequestWithoutAKey: every execute-type POST carries an
// Idempotency-Key, from the typed calls and from a bare Do alike; reads
// and validations carry none.
func TestNoExecuteTypeRequestWithoutAKey(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, `{"ok":true}`))
	defer srv.Close()
	c := New(Options{})
	ctx := context.Background()
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for path, call := range executeCalls(c) {
		resp, err := call(ctx, srv.URL)
		require.NoError(t, err, path)
		got := rec.last(t)
		require.Equal(t, path, got.Path)
		assert.Regexp(t, hex32, got.Header.Get("Idempotency-Key"), path)
		assert.Equal(t, got.Header.Get("Idempotency-Key"), resp.IdempotencyKey, path)

		_, err = c.Do(ctx, sess(srv.URL), Request{Method: "post", Path: path, Body: map[string]any{}})
		require.NoError(t, err)
		assert.Regexp(t, hex32, rec.last(t).Header.Get("Idempotency-Key"), "a bare Do to %s gets a key too", path)
	}
	for _, path := range []string{PathExecute, PathExecuteJob, PathPlanExecute, PathProfileUpsert, PathSlotBind} {
		assert.True(t, IsExecuteType(path), path)
	}
	_, err := c.Validate(ctx, sess(srv.URL), map[string]any{})
	require.NoError(t, err)
	assert.Empty(t, rec.last(t).Header.Get("Idempotency-Key"))
	_, err = c.ExecuteJob(ctx, sess(srv.URL), map[string]any{}, " agent-key-1 ")
	require.NoError(t, err)
	assert.Equal(t, "agent-key-1", rec.last(t).Header.Get("Idempotency-Key"), "a given key is sent as is (trimmed)")
}

// resetAfterRead reads one whole request, then drops the connection
// without a reply (RST), counting what it saw.
type resetAfterRead struct {
	mu   sync.Mutex
	keys []string
	ids  []string
	// answerAfter, when > 0, answers requests from that count on.
	answerAfter int
}

func (s *resetAfterRead) handler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"items":[]}`)
			return
		}
		s.mu.Lock()
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		s.ids = append(s.ids, r.Header.Get("X-Request-Id"))
		n := len(s.keys)
		s.mu.Unlock()
		if s.answerAfter > 0 && n >= s.answerAfter {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"SUCCEEDED"}`)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
	}
}

func requireOutcomeUnknown(t *testing.T, err error, key string) {
	t.Helper()
	ae := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeNetwork, ae.Code)
	assert.Equal(t, apperr.CatNetwork, ae.Category)
	assert.False(t, ae.Retryable, "the action may have run: not retryable without the key")
	assert.Equal(t, true, ae.Details["outcome_unknown"])
	assert.Equal(t, key, ae.Details["idempotency_key"])
	assert.Equal(t, RetryHint, ae.Details["retry_hint"])
}

// TestResetAfterTheBodyWasWrittenIsOutcomeUnknown: on a fresh connection
// Go cannot replay, so the caller learns the outcome is unknown, with the
// key to retry with.
func TestResetAfterTheBodyWasWrittenIsOutcomeUnknown(t *testing.T) {
	s := &resetAfterRead{}
	srv := httptest.NewServer(s.handler(t))
	defer srv.Close()
	_, err := New(Options{}).ExecuteJob(context.Background(), sess(srv.URL), map[string]any{"x": 1}, "key-reset-1")
	requireOutcomeUnknown(t, err, "key-reset-1")
	assert.Equal(t, []string{"key-reset-1"}, s.keys)
}

// TestReplayOnAReusedConnectionCarriesTheSameKey: a reset on a reused
// connection is replayed by Go's transport (the key makes the POST
// replayable) with the very same headers, so Vault can recognise it.
func TestReplayOnAReusedConnectionCarriesTheSameKey(t *testing.T) {
	s := &resetAfterRead{answerAfter: 2}
	srv := httptest.NewServer(s.handler(t))
	defer srv.Close()
	c := New(Options{})
	ctx := context.Background()
	_, err := c.ListConnectors(ctx, sess(srv.URL)) // leaves a pooled connection
	require.NoError(t, err)
	resp, err := c.Execute(ctx, sess(srv.URL), map[string]any{"x": 1}, "")
	require.NoError(t, err)
	require.Len(t, s.keys, 2, "the transport replayed the request once")
	assert.Equal(t, s.keys[0], s.keys[1], "the replay carries the same Idempotency-Key")
	assert.Equal(t, s.ids[0], s.ids[1])
	assert.Equal(t, resp.IdempotencyKey, s.keys[0])
}

func TestTimeoutWaitingForTheAnswerIsOutcomeUnknown(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	s := sess(srv.URL)
	s.Timeout = 200 * time.Millisecond
	_, err := New(Options{}).PlanExecute(context.Background(), s, map[string]any{}, "key-slow")
	requireOutcomeUnknown(t, err, "key-slow")
}

// TestRefusedConnectionIsRetryable: nothing was sent, so a retry is safe;
// the key still comes along.
func TestRefusedConnectionIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = New(Options{}).SlotBind(context.Background(), sess("http://"+addr), map[string]any{}, "key-refused")
	ae := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeNetwork, ae.Code)
	assert.True(t, ae.Retryable)
	assert.Nil(t, ae.Details["outcome_unknown"])
	assert.Equal(t, "key-refused", ae.Details["idempotency_key"])
}

func TestEmptyOrProxyAnswersOnExecuteAreOutcomeUnknown(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
	}{{200, ""}, {202, "<html>ok</html>"}, {502, "Bad Gateway"}, {504, ""}} {
		srv := httptest.NewServer((&recorder{}).handler(c.status, c.body))
		_, err := New(Options{}).Execute(context.Background(), sess(srv.URL), map[string]any{}, "key-x")
		srv.Close()
		requireOutcomeUnknown(t, err, "key-x")
	}
	// Vault's own 503 error answer: it did not act; retry with the key.
	srv := httptest.NewServer((&recorder{}).handler(503, `{"error":{"code":"UNAVAILABLE","message":"try later"}}`))
	defer srv.Close()
	_, err := New(Options{}).Execute(context.Background(), sess(srv.URL), map[string]any{}, "key-y")
	ae := apperr.As(err)
	assert.True(t, ae.Retryable)
	assert.Nil(t, ae.Details["outcome_unknown"])
	assert.Equal(t, "key-y", ae.Details["idempotency_key"])
	assert.Equal(t, RetryHint, ae.Details["retry_hint"])
}

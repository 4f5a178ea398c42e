package vault

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestRequestSpans: each request is a client span named after the
// endpoint's shape, under the caller's span, with its traceparent sent to
// Vault; failures set the status; the token and the path's ids stay out.
func TestRequestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Traceparent"))
		if strings.HasSuffix(r.URL.Path, "/missing-job-77") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"no such job"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	c := New(Options{Tracer: tp.Tracer("test")})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "tools/call x")

	_, err := c.Do(ctx, sess(srv.URL), Request{Method: "GET", Path: "/v0/jobs/job-1"})
	require.NoError(t, err)
	_, err = c.Do(ctx, sess(srv.URL), Request{Method: "GET", Path: "/v0/jobs/missing-job-77"})
	require.Error(t, err)
	srv.Close()
	_, err = c.Do(ctx, sess(srv.URL), Request{Method: "POST", Path: "/v0/connectors/execute", Body: map[string]any{"secret_arg": "arg-value-5521"}})
	require.Error(t, err)
	parent.End()

	spans := rec.Ended()
	require.Len(t, spans, 4)
	ok, notFound, down := spans[0], spans[1], spans[2]
	for _, s := range spans[:3] {
		assert.Equal(t, trace.SpanKindClient, s.SpanKind())
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		for _, kv := range s.Attributes() {
			for _, secret := range []string{"tok_secret_123", "missing-job-77", "job-1", "arg-value-5521"} {
				assert.NotContains(t, kv.Value.String(), secret, "%s on %s", kv.Key, s.Name())
			}
		}
	}
	assert.Equal(t, "vault GET /v0/jobs/{id}", ok.Name())
	assert.Equal(t, codes.Unset, ok.Status().Code)
	assert.Equal(t, "00-"+ok.SpanContext().TraceID().String()+"-"+ok.SpanContext().SpanID().String()+"-01", got[0])
	assert.Equal(t, codes.Error, notFound.Status().Code)
	assert.Contains(t, attrs(notFound), "http.response.status_code=404")
	assert.Equal(t, "vault POST /v0/connectors/execute", down.Name())
	assert.Equal(t, codes.Error, down.Status().Code)
	assert.NotContains(t, attrs(down), "http.response.status_code", "no answer, no status")
}

// TestNoTracerNoHeader: tracing off sends no traceparent, even inside a
// caller's span.
func TestNoTracerNoHeader(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Traceparent"))
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	_, err := New(Options{}).Do(context.Background(), sess(srv.URL), Request{Path: "/v0/connectors"})
	require.NoError(t, err)
	assert.Equal(t, []string{""}, got)
}

func attrs(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, kv := range s.Attributes() {
		b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "\n")
	}
	return b.String()
}

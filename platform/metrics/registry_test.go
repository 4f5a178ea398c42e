package metrics

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTextFormat(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "Things\nwith a newline.", "tool", "outcome")
	c.Inc("a", "ok")
	c.Add(2, "a", "ok")
	c.Inc(`we"ird\`, "error")
	c.Add(-5, "a", "ok") // counters never go down
	h := r.NewHistogramVec("lat_seconds", "Latency.", []float64{0.1, 1}, "tool")
	h.Observe(0.05, "a")
	h.Observe(0.1, "a") // le is inclusive
	h.Observe(3, "a")
	r.NewGaugeFunc("g", "A gauge.", func() (float64, bool) { return 42, true })
	r.NewGaugeFunc("hidden", "Unknown now.", func() (float64, bool) { return 0, false })

	var b bytes.Buffer
	require.NoError(t, r.WriteText(&b))
	want := `# HELP g A gauge.
# TYPE g gauge
g 42
# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{tool="a",le="0.1"} 2
lat_seconds_bucket{tool="a",le="1"} 2
lat_seconds_bucket{tool="a",le="+Inf"} 3
lat_seconds_sum{tool="a"} 3.15
lat_seconds_count{tool="a"} 3
# HELP x_total Things\nwith a newline.
# TYPE x_total counter
x_total{outcome="error",tool="we\"ird\\"} 1
x_total{outcome="ok",tool="a"} 3
`
	assert.Equal(t, want, b.String())
	assert.Equal(t, float64(3), c.Value("a", "ok"))
	assert.Equal(t, uint64(3), h.Count("a"))
	assert.Panics(t, func() { c.Inc("only-one") })
	assert.Panics(t, func() { r.NewCounterVec("x_total", "dup") })

	// Reading a series that was never touched must not create it.
	assert.Zero(t, c.Value("never", "ok"))
	assert.Zero(t, h.Count("never"))
	b.Reset()
	require.NoError(t, r.WriteText(&b))
	assert.NotContains(t, b.String(), "never")
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.NewCounterVec("c_total", "C.").Inc()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, 200, rec.Code)
	assert.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4"), rec.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Contains(t, rec.Body.String(), "c_total 1\n")
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/metrics", nil))
	assert.Equal(t, 200, rec.Code)
	assert.Empty(t, rec.Body.String())
	rec = httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	assert.Equal(t, 405, rec.Code)
}

func TestVaultEndpoint(t *testing.T) {
	cases := map[string]string{
		"/v0/connectors":                          "GET /v0/connectors",
		"/v0/connectors/google.gmail":             "GET /v0/connectors/{id}",
		"/v0/jobs/job_123?x=1":                    "GET /v0/jobs/{id}",
		"/v0/connectors/plans/runs/run-9":         "GET /v0/connectors/plans/runs/{id}",
		"/v0/connectors/unbounded/profiles/list":  "GET /v0/connectors/unbounded/profiles/list",
		"/v0/connectors/approvals/pending":        "GET /v0/connectors/approvals/pending",
		"/v0/connectors/secrets/slots/bindings/x": "GET /v0/connectors/secrets/slots/bindings/{id}",
	}
	for path, want := range cases {
		assert.Equal(t, want, VaultEndpoint("get", path), path)
	}
	assert.Equal(t, "POST /v0/connectors/execute-job", VaultEndpoint("POST", "/v0/connectors/execute-job"))
}

func TestObserveVaultRequest(t *testing.T) {
	s := New()
	s.ObserveVaultRequest("GET", "/v0/jobs/j1", 200, 10*time.Millisecond, nil)
	s.ObserveVaultRequest("GET", "/v0/jobs/j2", 404, time.Millisecond, nil)
	s.ObserveVaultRequest("POST", "/v0/connectors/execute", 0, time.Second, errors.New("refused"))
	assert.Equal(t, uint64(2), s.VaultDuration.Count("GET /v0/jobs/{id}"))
	assert.Equal(t, float64(1), s.VaultErrors.Value("GET /v0/jobs/{id}", "http_404"))
	assert.Equal(t, float64(1), s.VaultErrors.Value("POST /v0/connectors/execute", "network"))
}

func TestObserveToolCall(t *testing.T) {
	s := New()
	s.ObserveToolCall("known", OutcomeOK, "", 10*time.Millisecond)
	s.ObserveToolCall("known", OutcomeError, "MCP_VALIDATION_ERROR", time.Millisecond)
	assert.Equal(t, float64(1), s.ToolCalls.Value("known", OutcomeOK))
	assert.Equal(t, float64(1), s.ToolCalls.Value("known", OutcomeError))
	assert.Equal(t, float64(1), s.ToolErrors.Value("known", "MCP_VALIDATION_ERROR"))
	assert.Equal(t, uint64(2), s.ToolDuration.Count("known"))
}

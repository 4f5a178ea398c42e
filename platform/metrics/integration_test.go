package metrics_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientRequestID is sent with every call; the bridge echoes it.
var clientRequestID = map[string]string{"X-Request-Id": "req-from-client-1"}

func call(t *testing.T, url, tool string, args map[string]any) {
	t.Helper()
	rep := mcptest.Post(t, url+"/v1/mcp", mcptest.ToolsCall(1, tool, args), clientRequestID)
	require.Equal(t, http.StatusOK, rep.StatusCode)
	assert.Equal(t, "req-from-client-1", rep.Header.Get("X-Request-Id"), "the client's request id is echoed")
}

// sample returns the value of the exposition line starting with series.
func sample(t *testing.T, text, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, m, "series %s missing from:\n%s", series, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestMetricsAfterCalls drives real calls through the HTTP bridge (Vault is
// the simulator) and checks every named series on /metrics.
func TestMetricsAfterCalls(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AgentToken: "vc_tok_metrics"})
	vs := httptest.NewServer(sim)
	defer vs.Close()
	cfg := testenv.Config(t, "VC_AGENT_TOKEN=vc_tok_metrics", "VC_BASE_URL="+vs.URL)
	a := testenv.Open(t, cfg)
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	call(t, srv.URL, "vaultclaw_connectors_list", map[string]any{})
	call(t, srv.URL, "vaultclaw_connectors_list", map[string]any{})
	call(t, srv.URL, "vaultclaw_connector_get", map[string]any{"connector_id": "no-such-connector"})
	call(t, srv.URL, "vaultclaw_session_configure", map[string]any{"timeout_ms": "soon"})
	call(t, srv.URL, "vaultclaw_recipes_search", map[string]any{"query": "gmail"})
	mcptest.Post(t, srv.URL+"/v1/mcp", mcptest.ToolsCall(1, "vaultclaw_made_up", map[string]any{}), clientRequestID)
	_, err := a.Handles.Save("default", &approval.Handoff{Handle: approval.Handle{Kind: approval.KindJob, JobID: "job-1"}}, "test")
	require.NoError(t, err)

	mr, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer mr.Body.Close()
	assert.Contains(t, mr.Header.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
	raw, _ := io.ReadAll(mr.Body)
	text := string(raw)

	assert.Equal(t, 2.0, sample(t, text, `accords_mcp_tool_calls_total{outcome="ok",tool="vaultclaw_connectors_list"}`))
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_tool_calls_total{outcome="error",tool="vaultclaw_connector_get"}`))
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_tool_errors_total{code="MCP_VALIDATION_ERROR",tool="vaultclaw_session_configure"}`))
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_tool_calls_total{outcome="ok",tool="vaultclaw_recipes_search"}`))
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_tool_calls_total{outcome="protocol_error",tool="_unknown"}`))
	assert.Equal(t, 2.0, sample(t, text, `accords_mcp_tool_call_duration_seconds_count{tool="vaultclaw_connectors_list"}`))
	assert.Equal(t, 2.0, sample(t, text, `accords_mcp_tool_call_duration_seconds_bucket{tool="vaultclaw_connectors_list",le="+Inf"}`))
	assert.GreaterOrEqual(t, sample(t, text, `accords_mcp_vault_request_duration_seconds_count{endpoint="GET /v0/connectors"}`), 2.0)
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_vault_request_errors_total{endpoint="GET /v0/connectors/{id}",kind="http_404"}`))
	assert.Greater(t, sample(t, text, `accords_mcp_db_size_bytes`), 0.0)
	assert.Greater(t, sample(t, text, `accords_mcp_index_documents`), 0.0, "the built-in cookbooks are indexed")
	assert.Equal(t, 1.0, sample(t, text, `accords_mcp_pending_handles`))
	assert.Contains(t, text, "# TYPE accords_mcp_tool_call_duration_seconds histogram\n")
	assert.NotContains(t, text, "vc_tok_metrics", "no token ever reaches the metrics")
}

// TestRefusedCallsAreCounted: the metrics middleware sits outside the
// gateway, so calls it refuses appear with their code.
func TestRefusedCallsAreCounted(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte("[defaults.tools.vaultclaw_session_status]\ncalls_per_minute = 1\nburst = 1\n"), 0o600))
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+policy))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	for range 3 {
		call(t, srv.URL, "vaultclaw_session_status", map[string]any{})
	}
	assert.Equal(t, 1.0, a.Metrics.ToolCalls.Value("vaultclaw_session_status", "ok"))
	assert.Equal(t, 2.0, a.Metrics.ToolCalls.Value("vaultclaw_session_status", "error"))
	assert.Equal(t, 2.0, a.Metrics.ToolErrors.Value("vaultclaw_session_status", "MCP_RATE_LIMITED"))
}

// TestMetricsNeedACallerTokenOnceCallersExist: /metrics is guarded like the
// MCP endpoint.
func TestMetricsNeedACallerTokenOnceCallersExist(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.toml")
	// token_sha256 of "secret" (docs/gateway.md).
	require.NoError(t, os.WriteFile(policy, []byte(`[[callers]]
id = "prometheus"
token_sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
tenant = "ops"
capabilities = ["catalog_view"]
`), 0o600))
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+policy))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(raw), "accords_mcp_build_info")
}

// TestLogsAreQuietAndCorrelated: at INFO the go-sdk's per-request lines are
// gone, and each tool call logs one JSON line carrying the request id.
func TestLogsAreQuietAndCorrelated(t *testing.T) {
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			var logs syncbuf.Buffer
			lv := slog.LevelInfo
			if level == "debug" {
				lv = slog.LevelDebug
			}
			cfg := testenv.Config(t, "ACCORDS_MCP_LOG_LEVEL="+level)
			a, err := app.Open(cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: lv})))
			require.NoError(t, err)
			defer a.Close()
			srv := httptest.NewServer(a.HTTPHandler())
			defer srv.Close()
			call(t, srv.URL, "vaultclaw_session_status", map[string]any{})
			out := logs.String()
			assert.Contains(t, out, `"msg":"tool call","request_id":"req-from-client-1","tool":"vaultclaw_session_status"`)
			if level == "info" {
				assert.NotContains(t, out, "server session connected")
			} else {
				assert.Contains(t, out, `"msg":"http request"`)
				assert.Contains(t, out, "server session connected", "debug shows the SDK's own logs")
			}
		})
	}
}

// previousSeries are the families /metrics served before the client library
// replaced the hand-written registry: name, type, HELP and label names are
// part of what dashboards and alerts depend on, so each is pinned here.
var previousSeries = []struct {
	name, typ, help string
	labels          []string
}{
	{"accords_mcp_tool_calls_total", "COUNTER", "MCP tool calls by tool and outcome (ok, error, protocol_error).", []string{"outcome", "tool"}},
	{"accords_mcp_tool_errors_total", "COUNTER", "MCP tool calls that returned an error envelope, by tool and error code.", []string{"code", "tool"}},
	{"accords_mcp_tool_call_duration_seconds", "HISTOGRAM", "MCP tool call latency in seconds.", []string{"tool"}},
	{"accords_mcp_vault_request_duration_seconds", "HISTOGRAM", "Vaultclaw HTTP request latency in seconds, by endpoint.", []string{"endpoint"}},
	{"accords_mcp_vault_request_errors_total", "COUNTER", "Vaultclaw requests that failed, by endpoint and kind (network or http_<status>).", []string{"endpoint", "kind"}},
	{"accords_mcp_db_size_bytes", "GAUGE", "Size of the bbolt database file in bytes.", nil},
	{"accords_mcp_index_documents", "GAUGE", "Documents (cookbook entries) in the search index.", nil},
	{"accords_mcp_pending_handles", "GAUGE", "Approval handles not yet decided (all scopes).", nil},
	{"accords_mcp_build_info", "GAUGE", "Build information; the value is always 1.", []string{"goversion", "version"}},
	{"accords_mcp_start_time_seconds", "GAUGE", "Unix time the process started.", nil},
	{"accords_mcp_goroutines", "GAUGE", "Number of goroutines.", nil},
	{"accords_mcp_audit_anchor_total", "COUNTER", "Signed audit checkpoints handed to ACCORDS_MCP_AUDIT_ANCHOR, by result (ok, failed).", []string{"result"}},
	{"accords_mcp_audit_integrity_failure", "GAUGE", "1 while the audit log has an unacknowledged verification failure.", nil},
}

// TestEveryPreviousSeriesIsScraped scrapes /metrics over HTTP after real
// calls, parses it with the Prometheus text parser, and checks that every
// family served before is still there with the same type, HELP and label
// names, beside the Go runtime and process collectors.
func TestEveryPreviousSeriesIsScraped(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AgentToken: "vc_tok_scrape"})
	vs := httptest.NewServer(sim)
	defer vs.Close()
	a := testenv.Open(t, testenv.Config(t, "VC_AGENT_TOKEN=vc_tok_scrape", "VC_BASE_URL="+vs.URL))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	call(t, srv.URL, "vaultclaw_connectors_list", map[string]any{})
	call(t, srv.URL, "vaultclaw_connector_get", map[string]any{"connector_id": "no-such-connector"})

	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the scrape parses as the Prometheus text format")

	for _, want := range previousSeries {
		f, ok := fams[want.name]
		if !assert.True(t, ok, "family %s is served", want.name) {
			continue
		}
		assert.Equal(t, want.typ, f.GetType().String(), want.name)
		assert.Equal(t, want.help, f.GetHelp(), want.name)
		require.NotEmpty(t, f.GetMetric(), want.name)
		var names []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		assert.Equal(t, want.labels, names, "label names of %s", want.name)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "go_info",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"} {
		assert.Contains(t, fams, name, "runtime/process collector series %s", name)
	}
	assert.Equal(t, 0.0, fams["accords_mcp_audit_anchor_total"].GetMetric()[0].GetCounter().GetValue(), "anchors start at zero")
}

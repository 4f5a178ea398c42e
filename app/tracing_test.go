package app_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	traceTok        = "vc_tok_tracing_secret_4711"
	callerTrace     = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan      = "00f067aa0ba902b7"
	callerParent    = "00-" + callerTrace + "-" + callerSpan + "-01"
	metaTrace       = "0af7651916cd43dd8448eb211c80319c"
	metaSpan        = "b7ad6b7169203331"
	metaTraceparent = "00-" + metaTrace + "-" + metaSpan + "-01"
)

// tracedVault is the Vault simulator recording the traceparent of every
// request it gets.
type tracedVault struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newTracedVault(t *testing.T) *tracedVault {
	sim := vaultsim.New(vaultsim.Options{AgentToken: traceTok})
	v := &tracedVault{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		v.seen = append(v.seen, r.Header.Get("Traceparent"))
		v.mu.Unlock()
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(v.Close)
	return v
}

func (v *tracedVault) traceparents() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.seen...)
}

func tracedApp(t *testing.T, vaultURL string) (*app.App, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := testenv.Open(t, testenv.Config(t, "VC_AGENT_TOKEN="+traceTok, "VC_BASE_URL="+vaultURL), app.WithTracerProvider(tp))
	return a, rec
}

func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceParentFromHTTPHeader: a call over the HTTP bridge with a
// traceparent header becomes a server span in the caller's trace, its
// Vault request a client span below it, and Vault receives that span's
// traceparent.
func TestTraceParentFromHTTPHeader(t *testing.T) {
	t.Parallel()
	v := newTracedVault(t)
	a, rec := tracedApp(t, v.URL)
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_connectors_list", map[string]any{}, map[string]string{"traceparent": callerParent})
	require.Equal(t, true, env.Raw["ok"], env.Raw)

	calls := spansNamed(rec, "tools/call vaultclaw_connectors_list")
	require.Len(t, calls, 1)
	call := calls[0]
	assert.Equal(t, trace.SpanKindServer, call.SpanKind())
	assert.Equal(t, callerTrace, call.SpanContext().TraceID().String(), "the span joins the caller's trace")
	assert.Equal(t, callerSpan, call.Parent().SpanID().String())
	assert.True(t, call.Parent().IsRemote())
	attrs := attrMap(call)
	assert.Equal(t, "vaultclaw_connectors_list", attrs["gen_ai.tool.name"])
	assert.Equal(t, "ok", attrs["accords.outcome"])
	assert.Equal(t, "http", attrs["accords.transport"])
	assert.NotEmpty(t, attrs["accords.call_id"])

	vs := spansNamed(rec, "vault GET /v0/connectors")
	require.NotEmpty(t, vs)
	for _, s := range vs {
		assert.Equal(t, trace.SpanKindClient, s.SpanKind())
		assert.Equal(t, call.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.Equal(t, call.SpanContext().SpanID(), s.Parent().SpanID(), "the Vault request is a child of the tool call")
		assert.Equal(t, int64(200), s.Attributes()[indexOf(s, "http.response.status_code")].Value.AsInt64())
	}
	want := "00-" + callerTrace + "-" + vs[0].SpanContext().SpanID().String() + "-01"
	assert.Contains(t, v.traceparents(), want, "Vault gets the traceparent of the request's own span")
}

// TestTraceParentFromMeta: the call's own params._meta carries the parent
// (the MCP convention, 2026-07-28 and before) on stdio, and wins over an
// HTTP header on the bridge.
func TestTraceParentFromMeta(t *testing.T) {
	t.Parallel()
	v := newTracedVault(t)
	a, rec := tracedApp(t, v.URL)

	cs := mcptest.Connect(t, a.MCPServer(), nil)
	defer cs.Close()
	env := mcptest.CallWith(t, context.Background(), cs, &mcp.CallToolParams{
		Name: "vaultclaw_connectors_list", Arguments: map[string]any{},
		Meta: mcp.Meta{"traceparent": metaTraceparent, "tracestate": "vendor=x"},
	})
	require.Equal(t, true, env.Raw["ok"], env.Raw)
	calls := spansNamed(rec, "tools/call vaultclaw_connectors_list")
	require.Len(t, calls, 1)
	assert.Equal(t, metaTrace, calls[0].SpanContext().TraceID().String())
	assert.Equal(t, metaSpan, calls[0].Parent().SpanID().String())
	assert.Equal(t, "vendor=x", calls[0].SpanContext().TraceState().String())
	assert.Equal(t, "stdio", attrMap(calls[0])["accords.transport"])

	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	body := mcptest.ToolsCall(1, "vaultclaw_connectors_list", map[string]any{})
	body["params"].(map[string]any)["_meta"] = map[string]any{"traceparent": metaTraceparent}
	rep := mcptest.Post(t, srv.URL+"/v1/mcp", body, map[string]string{"traceparent": callerParent})
	require.Equal(t, http.StatusOK, rep.StatusCode)
	calls = spansNamed(rec, "tools/call vaultclaw_connectors_list")
	require.Len(t, calls, 2)
	assert.Equal(t, metaTrace, calls[1].SpanContext().TraceID().String(), "_meta wins over the HTTP header")

	// A malformed _meta parent falls back to the header.
	body["params"].(map[string]any)["_meta"] = map[string]any{"traceparent": "00-not-a-trace"}
	rep = mcptest.Post(t, srv.URL+"/v1/mcp", body, map[string]string{"traceparent": callerParent})
	require.Equal(t, http.StatusOK, rep.StatusCode)
	calls = spansNamed(rec, "tools/call vaultclaw_connectors_list")
	require.Len(t, calls, 3)
	assert.Equal(t, callerTrace, calls[2].SpanContext().TraceID().String(), "an unusable _meta parent gives way to the header")

	// A go-sdk client over Streamable HTTP on the newest protocol, where
	// every request's _meta also carries the SEP-2575 fields.
	hs := mcptest.ConnectHTTP(t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{})
	assert.Equal(t, "2026-07-28", hs.InitializeResult().ProtocolVersion)
	env = mcptest.CallWith(t, context.Background(), hs, &mcp.CallToolParams{
		Name: "vaultclaw_connectors_list", Arguments: map[string]any{}, Meta: mcp.Meta{"traceparent": metaTraceparent},
	})
	require.Equal(t, true, env.Raw["ok"], env.Raw)
	calls = spansNamed(rec, "tools/call vaultclaw_connectors_list")
	require.Len(t, calls, 4)
	assert.Equal(t, metaTrace, calls[3].SpanContext().TraceID().String())
	assert.Equal(t, metaSpan, calls[3].Parent().SpanID().String())

	// A malformed traceparent is ignored: the call starts its own trace.
	env = mcptest.CallWith(t, context.Background(), cs, &mcp.CallToolParams{
		Name: "vaultclaw_session_status", Arguments: map[string]any{}, Meta: mcp.Meta{"traceparent": "00-zz-garbage"},
	})
	require.Equal(t, true, env.Raw["ok"], env.Raw)
	st := spansNamed(rec, "tools/call vaultclaw_session_status")
	require.Len(t, st, 1)
	assert.False(t, st[0].Parent().IsValid())
	assert.True(t, st[0].SpanContext().IsValid())
}

// TestSpansHoldNoSecrets: the token, argument values and ids in paths
// never reach span names, attributes, events or status.
func TestSpansHoldNoSecrets(t *testing.T) {
	t.Parallel()
	v := newTracedVault(t)
	a, rec := tracedApp(t, v.URL)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	defer cs.Close()
	const argSecret = "connector-id-secret-9981"
	const newTok = "vc_tok_configured_secret_1234"
	mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{"token": newTok, "base_url": v.URL})
	got := mcptest.Call(t, cs, "vaultclaw_connector_get", map[string]any{"connector_id": argSecret})
	require.NotEmpty(t, got.Code(), "the configured token is unknown to Vault")
	_, err := mcptest.TryCall(context.Background(), cs, "vaultclaw_made_up_tool_"+argSecret, map[string]any{})
	require.Error(t, err, "an unknown tool is a protocol error")

	spans := rec.Ended()
	require.NotEmpty(t, spansNamed(rec, "vault GET /v0/connectors/{id}"))
	failed := spansNamed(rec, "tools/call vaultclaw_connector_get")
	require.Len(t, failed, 1)
	assert.Equal(t, got.Code(), attrMap(failed[0])["error.type"], "an error envelope's code is recorded")
	assert.Equal(t, codes.Error, failed[0].Status().Code)
	require.Len(t, spansNamed(rec, "tools/call _unknown"), 1, "unknown names do not become span names")
	for _, s := range spans {
		texts := []string{s.Name(), s.Status().Description}
		for _, kv := range s.Attributes() {
			texts = append(texts, string(kv.Key)+"="+kv.Value.String())
		}
		for _, e := range s.Events() {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.String())
			}
		}
		all := strings.Join(texts, "\n")
		for _, secret := range []string{traceTok, newTok, argSecret, "Bearer"} {
			assert.NotContains(t, all, secret, "span %q", s.Name())
		}
	}
}

// TestTracingOffByDefault: without an OTLP endpoint there is no provider
// and Vault gets no traceparent, even when the caller sent one.
func TestTracingOffByDefault(t *testing.T) {
	t.Parallel()
	v := newTracedVault(t)
	a := testenv.Open(t, testenv.Config(t, "VC_AGENT_TOKEN="+traceTok, "VC_BASE_URL="+v.URL))
	assert.Nil(t, a.Tracing)
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_connectors_list", map[string]any{}, map[string]string{"traceparent": callerParent})
	require.Equal(t, true, env.Raw["ok"], env.Raw)
	require.NotEmpty(t, v.traceparents())
	for _, tp := range v.traceparents() {
		assert.Empty(t, tp)
	}
}

func attrMap(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func indexOf(s sdktrace.ReadOnlySpan, key string) int {
	for i, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return i
		}
	}
	return -1
}

// TestToolCallLogCarriesTraceID: with tracing on, the tool call's log line
// names its trace, so a log search leads to the trace and back.
func TestToolCallLogCarriesTraceID(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	var mu sync.Mutex
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	a, err := app.Open(testenv.Config(t), logger, app.WithTracerProvider(tp))
	require.NoError(t, err)
	defer a.Close()
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	defer cs.Close()
	mcptest.CallWith(t, context.Background(), cs, &mcp.CallToolParams{
		Name: "vaultclaw_session_status", Arguments: map[string]any{}, Meta: mcp.Meta{"traceparent": metaTraceparent},
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), `"trace_id":"`+metaTrace+`"`)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

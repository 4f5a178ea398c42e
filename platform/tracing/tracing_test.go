package tracing

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestOffIsNil(t *testing.T) {
	p, err := Start(config.Tracing{}, nil)
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.Nil(t, p.Tracer())
	assert.NoError(t, p.Shutdown())
}

// TestExportsOverOTLPHTTP runs a fake collector and checks that a span
// reaches it as an OTLP/HTTP protobuf export with the service name.
func TestExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	var paths, types []string
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		err := proto.Unmarshal(raw, &req)
		mu.Lock()
		paths, types = append(paths, r.URL.Path), append(types, r.Header.Get("Content-Type"))
		if err == nil {
			got = append(got, &req)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer col.Close()

	p, err := Start(config.Tracing{TracesURL: col.URL + "/v1/traces", ServiceName: "accords-test"}, nil)
	require.NoError(t, err)
	require.NotNil(t, p.Tracer())
	_, span := p.Tracer().Start(context.Background(), "tools/call x", trace.WithSpanKind(trace.SpanKindServer))
	span.End()
	require.NoError(t, p.Shutdown(), "shutdown flushes the batch")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, got)
	assert.Equal(t, "/v1/traces", paths[0])
	assert.Equal(t, "application/x-protobuf", types[0])
	rs := got[0].GetResourceSpans()[0]
	var service string
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	assert.Equal(t, "accords-test", service)
	assert.Equal(t, "tools/call x", rs.GetScopeSpans()[0].GetSpans()[0].GetName())
	assert.Equal(t, InstrumentationName, rs.GetScopeSpans()[0].GetScope().GetName())
}

func TestRemoteParent(t *testing.T) {
	ctx := WithRemoteParent(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b")
	sc := trace.SpanContextFromContext(ctx)
	assert.True(t, sc.IsRemote())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	assert.Equal(t, "a=b", sc.TraceState().String())
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		assert.False(t, trace.SpanContextFromContext(WithRemoteParent(context.Background(), bad, "")).IsValid(), bad)
	}
	h := http.Header{}
	Inject(ctx, h)
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", h.Get("Traceparent"))
}

// TestExportFailureIsLogged: a collector that refuses is a log line, not
// an error of the span's caller.
func TestExportFailureIsLogged(t *testing.T) {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer col.Close()
	var logs syncbuf.Buffer
	p, err := Start(config.Tracing{TracesURL: col.URL + "/v1/traces"}, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	_, span := p.Tracer().Start(context.Background(), "x")
	span.End()
	_ = p.Shutdown()
	assert.Contains(t, logs.String(), "tracing: spans not exported")
}

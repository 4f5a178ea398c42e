// Package tracing sets up OpenTelemetry: an OTLP/HTTP exporter when the
// standard OTEL_EXPORTER_OTLP_* variables name a collector, nothing
// otherwise (a nil Tracer, checked before any tracing work). Trace context
// is W3C: a tool call's parent comes from params._meta or the HTTP
// traceparent header, and every Vault request carries its span's.
package tracing

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/version"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName names the tracer of every span accords-mcp makes.
const InstrumentationName = "github.com/accordsai/accords-mcp"

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "accords-mcp"

// shutdownTimeout bounds the final flush, so a collector that went away
// cannot hold up a stop.
const shutdownTimeout = 5 * time.Second

// Provider owns the tracer provider of one process (nil: tracing off).
type Provider struct {
	tracer   trace.Tracer
	shutdown func(context.Context) error
}

// Start builds the exporter and provider when cfg enables tracing, else nil
// (tracing off). Export failures never reach a tool call; they reach logger
// at most once a minute.
func Start(cfg config.Tracing, logger *slog.Logger) (*Provider, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if logger != nil {
		otel.SetErrorHandler(&errorLog{logger: logger})
	}
	// The exporter reads headers, TLS, timeout and compression itself; the
	// URL is the configuration's validated one.
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(cfg.TracesURL))
	if err != nil {
		return nil, err
	}
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.New(context.Background(),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attribute.String("service.name", name), attribute.String("service.version", version.Version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tracer: tp.Tracer(InstrumentationName, trace.WithInstrumentationVersion(version.Version)), shutdown: tp.Shutdown}, nil
}

// FromTracerProvider wraps a provider the caller owns (tests pass one
// with an in-memory span recorder); Shutdown leaves it alone.
func FromTracerProvider(tp trace.TracerProvider) *Provider {
	if tp == nil {
		return nil
	}
	return &Provider{tracer: tp.Tracer(InstrumentationName, trace.WithInstrumentationVersion(version.Version))}
}

// Tracer is nil when tracing is off.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Shutdown flushes the spans still queued and stops the exporter.
func (p *Provider) Shutdown() error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return p.shutdown(ctx)
}

// errorLog turns the SDK's errors (a collector that refuses or is down)
// into log lines, one a minute at most with the number left out.
type errorLog struct {
	logger  *slog.Logger
	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := time.Now(); now.Sub(e.last) >= time.Minute {
		e.logger.Warn("tracing: spans not exported", "error", err.Error(), "errors_not_logged", e.dropped)
		e.last, e.dropped = now, 0
		return
	}
	e.dropped++
}

var w3c = propagation.TraceContext{}

// MCP _meta keys of the W3C trace context.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// WithRemoteParent returns ctx with traceparent/tracestate's span context
// as remote parent; a missing or malformed traceparent leaves ctx as is.
func WithRemoteParent(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, carrier{traceparent: traceparent, tracestate: tracestate})
}

// Inject writes the traceparent (and tracestate) of ctx's span into h.
func Inject(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// carrier holds the two W3C fields read from somewhere other than HTTP
// headers (a tool call's _meta).
type carrier struct{ traceparent, tracestate string }

func (c carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}

func (carrier) Set(string, string) {}

func (carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

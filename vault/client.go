// Package vault is the HTTP client to Vaultclaw: endpoint resolution (TCP or
// Unix socket), headers, request ids, idempotency keys, timeouts, pooled
// connections, a response-size cap, and the one normalization of Vault
// failures into *apperr.Error.
package vault

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/platform/tracing"
	"github.com/accordsai/accords-mcp/platform/version"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxResponseBytes caps a Vault response body (16 MiB).
const DefaultMaxResponseBytes int64 = 16 << 20

// Options configure a Client.
type Options struct {
	// MaxResponseBytes caps response bodies; larger ones fail cleanly
	// (default DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// Logger receives one debug line per Vault call (never the token).
	Logger *slog.Logger
	// Observe, when set, is called after every HTTP request with the
	// method, the path as sent (no query), the status (0 on a transport
	// failure), the latency and the transport error (metrics).
	Observe func(method, path string, status int, d time.Duration, err error)
	// Tracer, when set, opens a client span per request and sends its
	// traceparent to Vault (platform/tracing); nil is tracing off.
	Tracer trace.Tracer
}

// Client talks to Vaultclaw. It is safe for concurrent use; connections are
// pooled in one transport per Unix socket (and one for all TCP bases) and
// reused across calls and sessions.
type Client struct {
	maxBytes int64
	logger   *slog.Logger
	observe  func(method, path string, status int, d time.Duration, err error)
	tracer   trace.Tracer

	mu         sync.Mutex
	transports map[string]*http.Transport
}

// New returns a client.
func New(opts Options) *Client {
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{maxBytes: opts.MaxResponseBytes, logger: opts.Logger, observe: opts.Observe, tracer: opts.Tracer, transports: map[string]*http.Transport{}}
}

// Close drops idle pooled connections.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
}

// Request is one Vault call. Path is relative to the base URL ("/v0/...");
// Body, when non-nil, is sent as JSON (POST always gets a body).
type Request struct {
	Method         string
	Path           string
	Query          url.Values
	Body           any
	IdempotencyKey string
}

// Response is a successful (status < 400) Vault reply.
type Response struct {
	Status    int
	RequestID string
	// IdempotencyKey is the key the request carried ("" for calls without
	// one).
	IdempotencyKey string
	// Body is the decoded JSON object (map[string]any), or nil when the body
	// was empty or not a JSON object.
	Body any
	Raw  []byte
}

// Object returns Body as an object, or nil.
func (r *Response) Object() map[string]any {
	if r == nil {
		return nil
	}
	m, _ := r.Body.(map[string]any)
	return m
}

// Defaults of an Endpoint's zero fields.
const (
	DefaultBaseURL = "http://127.0.0.1:8080"
	DefaultTimeout = 20 * time.Second
)

// Endpoint is where and as whom requests go (a session's Vault settings).
type Endpoint struct {
	// BaseURL is an http(s), unix:// or http+unix:// URL ("" is
	// DefaultBaseURL).
	BaseURL string
	// Token, when not blank, is sent as the bearer token.
	Token string
	// Timeout bounds each request (<= 0 is DefaultTimeout).
	Timeout time.Duration
	// UnixSocket, when set, is dialled for an http(s) base URL.
	UnixSocket string
}

// Target is where an endpoint's connections go.
type Target struct {
	// Base is the HTTP base URL without a trailing slash.
	Base string
	// Socket is the Unix socket every connection dials, or "".
	Socket string
}

// ResolveEndpoint decides where to connect: unix:// and http+unix:// base
// URLs name the socket (and imply http://localhost); otherwise the
// endpoint's UnixSocket is used with the base URL as given. "~" is
// expanded.
func ResolveEndpoint(s Endpoint) (Target, error) {
	base := strings.TrimRight(strings.TrimSpace(s.BaseURL), "/")
	if base == "" {
		base = DefaultBaseURL
	}
	lower := strings.ToLower(base)
	switch {
	case strings.HasPrefix(lower, "unix://"):
		sock := strings.TrimSpace(base[len("unix://"):])
		if sock == "" {
			return Target{}, apperr.Validation("base_url", "unix:// base URL must name a socket path")
		}
		return Target{Base: "http://localhost", Socket: expandHome(sock)}, nil
	case strings.HasPrefix(lower, "http+unix://"):
		rest := strings.TrimSpace(base[len("http+unix://"):])
		// The socket is the escaped host part; a literal "/" after it
		// starts a path prefix.
		prefix := ""
		if i := strings.Index(rest, "/"); i > 0 {
			rest, prefix = rest[:i], rest[i:]
		}
		sock, err := url.PathUnescape(rest)
		if err != nil || strings.TrimSpace(sock) == "" {
			return Target{}, apperr.Validation("base_url", "http+unix:// base URL must name an escaped socket path, e.g. http+unix://%%2Frun%%2Fvc.sock")
		}
		return Target{Base: "http://localhost" + prefix, Socket: expandHome(strings.TrimSpace(sock))}, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, apperr.Validation("base_url", "base_url must be an http(s), unix:// or http+unix:// URL")
	}
	return Target{Base: base, Socket: expandHome(strings.TrimSpace(s.UnixSocket))}, nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func (c *Client) transport(ep Target) *http.Transport {
	key := "tcp"
	if ep.Socket != "" {
		key = "unix:" + ep.Socket
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.transports[key]; ok {
		return t
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	t.IdleConnTimeout = 90 * time.Second
	if ep.Socket != "" {
		sock := ep.Socket
		t.Proxy = nil
		t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			// The request context carries the session timeout, so the dial
			// is bounded by it too.
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
	}
	c.transports[key] = t
	return t
}

// NewID returns 32 lowercase hex characters (16 random bytes).
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "req_fallback"
	}
	return hex.EncodeToString(b[:])
}

func timeoutOf(s Endpoint) time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

func encodeQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	clean := url.Values{}
	for k, vs := range q {
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				clean.Add(k, v)
			}
		}
	}
	return clean.Encode() // keys sorted, standard form encoding
}

// Do performs one Vault call with the endpoint's base URL, token and
// timeout. A status >= 400 or a transport failure returns a normalized
// *apperr.Error; the response is returned only on success.
//
// Execute-type POSTs (IsExecuteType) always carry an Idempotency-Key, a
// fresh one when r has none, so Go's transport may replay them after a
// broken reused connection (it replays only requests with such a key) and
// Vault runs the action once. When such a request may have reached Vault
// but no usable answer came back, the error says the outcome is unknown
// (D17) and carries the key to retry with.
func (c *Client) Do(ctx context.Context, s Endpoint, r Request) (*Response, error) {
	if c.tracer == nil {
		return c.do(ctx, nil, s, r)
	}
	ctx, span := c.tracer.Start(ctx, "vault request", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	resp, err := c.do(ctx, span, s, r)
	if err != nil {
		ae := apperr.As(err)
		kind := ae.Code
		if ae.VaultCode != "" {
			kind = ae.VaultCode
		}
		span.SetAttributes(attribute.String("error.type", kind))
		span.SetStatus(codes.Error, kind)
	}
	return resp, err
}

// do is one request; span is the request's span (nil: tracing off), named
// and annotated here once the endpoint and status are known. It records
// the endpoint's shape ("GET /v0/jobs/{id}"), never the token, query or
// body.
func (c *Client) do(ctx context.Context, span trace.Span, s Endpoint, r Request) (*Response, error) {
	reqID := NewID()
	ep, err := ResolveEndpoint(s)
	if err != nil {
		return nil, err
	}
	method := strings.ToUpper(strings.TrimSpace(r.Method))
	if method == "" {
		method = http.MethodGet
	}
	path := r.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := ep.Base + path
	if q := encodeQuery(r.Query); q != "" {
		target += "?" + q
	}
	execType := method == http.MethodPost && IsExecuteType(path)
	if execType && strings.TrimSpace(r.IdempotencyKey) == "" {
		r.IdempotencyKey = NewID()
	}
	var body io.Reader
	if r.Body != nil || method == http.MethodPost {
		payload := r.Body
		if payload == nil {
			payload = map[string]any{}
		}
		raw, err := json.Marshal(payload)
		if err != nil {
			return nil, apperr.Validation("request", "request body cannot be encoded as JSON: %v", err)
		}
		body = bytes.NewReader(raw)
	}
	timeout := timeoutOf(s)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, apperr.Validation("base_url", "cannot build Vault request: %v", err)
	}
	hr.Header.Set("X-Request-Id", reqID)
	hr.Header.Set("User-Agent", version.UserAgent())
	if tok := strings.TrimSpace(s.Token); tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.IdempotencyKey != "" {
		hr.Header.Set("Idempotency-Key", r.IdempotencyKey)
	}
	if span != nil {
		startSpan(span, hr, method, path, reqID)
	}
	// sent records that request bytes left for Vault on some attempt:
	// from then on, a failure leaves the outcome unknown.
	var sent atomic.Bool
	hr = hr.WithContext(httptrace.WithClientTrace(hr.Context(), &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }}))
	call := delivery{execType: execType, key: r.IdempotencyKey}
	hc := &http.Client{Transport: c.transport(ep)}
	start := time.Now()
	resp, err := hc.Do(hr)
	if err != nil {
		if c.observe != nil {
			c.observe(method, path, 0, time.Since(start), err)
		}
		call.sent = sent.Load()
		return nil, call.mark(c.transportFailure(ctx, method, path, reqID, timeout, start, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if c.observe != nil {
		c.observe(method, path, resp.StatusCode, time.Since(start), err)
	}
	if span != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	call.sent, call.answered = true, resp.StatusCode < 400
	if err != nil {
		return nil, call.mark(c.transportFailure(ctx, method, path, reqID, timeout, start, err))
	}
	c.logger.Debug("vault call", "method", method, "path", path, "status", resp.StatusCode, "request_id", reqID, "duration_ms", time.Since(start).Milliseconds())
	if int64(len(raw)) > c.maxBytes {
		e := apperr.New(apperr.CodeInternal, "Vault response exceeds the %d-byte limit", c.maxBytes)
		e.VaultCode = "RESPONSE_TOO_LARGE"
		e.Details["request_id"] = reqID
		e.Details["vault_http_status"] = resp.StatusCode
		e.Details["max_response_bytes"] = c.maxBytes
		return nil, call.mark(e)
	}
	if resp.StatusCode >= 400 {
		code, msg, details := parseErrorBody(raw)
		// A 5xx without Vault's error object came from something between
		// us and Vault (a proxy that timed out): Vault may have acted.
		call.proxyFailure = resp.StatusCode >= 500 && code == ""
		return nil, call.mark(MapError(APIError{Status: resp.StatusCode, Code: code, Message: msg, Details: details, RequestID: reqID}))
	}
	out := &Response{Status: resp.StatusCode, RequestID: reqID, Raw: raw, IdempotencyKey: r.IdempotencyKey}
	if resp.StatusCode == http.StatusNoContent && len(bytes.TrimSpace(raw)) == 0 {
		return out, nil // no content, as announced
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		// A success status with an empty, garbled or truncated body (a
		// proxy error page, a cut connection) must not pass as success.
		what := "a body that is not a JSON object"
		if len(bytes.TrimSpace(raw)) == 0 {
			what = "an empty body"
		}
		e := apperr.New(apperr.CodeNetwork, "Vault answered HTTP %d with %s", resp.StatusCode, what)
		e.Retryable = true
		e.VaultCode = CodeMalformedResponse
		e.Details["request_id"] = reqID
		e.Details["vault_http_status"] = resp.StatusCode
		return nil, call.mark(e)
	}
	out.Body = obj
	return out, nil
}

func (c *Client) transportFailure(ctx context.Context, method, path, reqID string, timeout time.Duration, start time.Time, err error) *apperr.Error {
	msg := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// The URL is ours and carries no secret, but the inner error is
		// the useful part.
		msg = ue.Err.Error()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("Vault did not answer within %d ms (%s)", timeout.Milliseconds(), msg)
	}
	c.logger.Debug("vault call failed", "method", method, "path", path, "request_id", reqID, "error", msg, "duration_ms", time.Since(start).Milliseconds())
	return MapError(APIError{Status: 0, Code: CodeNetworkError, Message: msg, RequestID: reqID, Cause: err})
}

// startSpan names the request's span after the endpoint's shape, records
// where it goes and injects its traceparent into the request.
func startSpan(span trace.Span, hr *http.Request, method, path, reqID string) {
	ep := metrics.VaultEndpoint(method, path)
	span.SetName("vault " + ep)
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", method),
		attribute.String("url.template", strings.TrimPrefix(ep, method+" ")),
		attribute.String("accords.vault.request_id", reqID),
	}
	if hr.URL.Host != "" {
		attrs = append(attrs, attribute.String("server.address", hr.URL.Hostname()))
		if port, err := strconv.Atoi(hr.URL.Port()); err == nil {
			attrs = append(attrs, attribute.Int("server.port", port))
		}
	}
	span.SetAttributes(attrs...)
	tracing.Inject(hr.Context(), hr.Header)
}

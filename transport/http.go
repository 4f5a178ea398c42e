package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the HTTP bridge.
type HTTPOptions struct {
	// Path of the MCP endpoint (default /v1/mcp); /mcp is always an alias.
	Path string
	// MaxBodyBytes limits request bodies; larger bodies get 413.
	MaxBodyBytes int64
	// MaxBatch limits the messages of one JSON-RPC batch (default
	// DefaultMaxBatch); a larger batch is refused whole with 400 and a
	// JSON-RPC error, and nothing in it runs.
	MaxBatch int
	// BodyTimeout bounds the time to receive a request body (default
	// DefaultBodyTimeout); a slower body gets 408.
	BodyTimeout time.Duration
	// RequireTenantHeader rejects MCP requests without a tenant header.
	RequireTenantHeader bool
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed
	// besides the server's own (decision D18).
	AllowedOrigins []string
	// GetServer returns the MCP server for a request (per caller when the
	// gateway filters tools); nil means 400.
	GetServer func(*http.Request) *mcp.Server
	// Health reports the health of the store; nil means healthy.
	Health func() error
	// Degraded lists what is wrong while the server still serves (an audit
	// log that failed verification); /healthz then says status degraded.
	Degraded func() []string
	// Store describes the state store for /healthz ("store"): its backend
	// and, for etcd, reachability, revision and live replicas.
	Store func() any
	// Wrap, when set, wraps the MCP endpoint (authentication).
	Wrap func(http.Handler) http.Handler
	// Inner, when set, sees each MCP request after authentication and the
	// bridge's checks, before the SDK (task listens).
	Inner  func(http.Handler) http.Handler
	Logger *slog.Logger
	// Extra routes (metrics, admin) mounted beside the MCP endpoint; they
	// get the same browser checks as the MCP endpoint.
	Extra map[string]http.Handler
}

// DefaultBodyTimeout is how long a client has to send a request body.
const DefaultBodyTimeout = 30 * time.Second

// DefaultMaxBatch is how many messages one JSON-RPC batch may hold. Every
// call in a batch passes the gateway on its own (capabilities, its rate
// limit token, its receipt), so the bound keeps one POST from being
// thousands of calls.
const DefaultMaxBatch = 32

// NewHTTPHandler returns the bridge: Streamable HTTP (stateless, so each
// POST stands alone and bare JSON-RPC posts work without initialize), health
// endpoints, browser and Host checks, tenant checks, body limits and
// deadlines, and calls that end with their POST.
func NewHTTPHandler(o HTTPOptions) http.Handler {
	if o.Path == "" {
		o.Path = "/v1/mcp"
	}
	if !strings.HasPrefix(o.Path, "/") {
		o.Path = "/" + o.Path
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	guard, err := newBrowserGuard(o.AllowedOrigins)
	if err != nil {
		// The configuration validates origins at start; an entry that
		// still fails is left out, which only refuses more.
		o.Logger.Error("ignoring the allowed origins", "error", err.Error())
		guard, _ = newBrowserGuard(nil)
	}
	base := mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger, PropagateRequestCancellation: true}
	sse := jsonRPCErrors(mcp.NewStreamableHTTPHandler(o.GetServer, &base), o.MaxBodyBytes)
	jsonOpts := base
	jsonOpts.JSONResponse = true
	plain := jsonRPCErrors(mcp.NewStreamableHTTPHandler(o.GetServer, &jsonOpts), o.MaxBodyBytes)
	calls := newInflight()

	var dispatch http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Bridge clients POST one JSON-RPC message with Accept:
		// application/json only; answer them with a plain JSON body.
		if r.Method == http.MethodPost && !acceptsEventStream(r.Header.Values("Accept")) {
			r.Header.Set("Accept", "application/json, text/event-stream")
			plain.ServeHTTP(w, r)
			return
		}
		sse.ServeHTTP(w, r)
	})
	if o.Inner != nil {
		dispatch = o.Inner(dispatch)
	}
	var endpoint http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.ContentLength > o.MaxBodyBytes {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", o.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if o.RequireTenantHeader && caller.TenantFromHeader(r.Header) == "" {
			writeTenantRequired(w)
			return
		}
		if r.Method != http.MethodPost {
			sse.ServeHTTP(w, r)
			return
		}
		body, ok := readBody(w, r, o.MaxBodyBytes, o.BodyTimeout)
		if !ok {
			return
		}
		if n := batchSize(body); n > o.MaxBatch {
			writeBatchTooLarge(w, n, o.MaxBatch)
			return
		}
		// A page's no-cors POST carries no Content-Type; only clients that
		// are not browsers get JSON assumed for them.
		if r.Header.Get("Content-Type") == "" && !hasBrowserMarker(r.Header) {
			r.Header.Set("Content-Type", "application/json")
		}
		// A batch or a malformed body is the SDK's to refuse.
		msg, _ := jsonrpc.DecodeMessage(body)
		req, _ := msg.(*jsonrpc.Request)
		if id, ok := cancelledID(req); ok {
			// Stateless HTTP gives the notification a session of its
			// own, so the SDK could not find the call; cancel it here.
			calls.cancel(callKey(r, id))
			w.WriteHeader(http.StatusAccepted)
			return
		}
		carrier, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		if req != nil && req.IsCall() {
			defer calls.add(callKey(r, req.ID), cancel)()
		}
		ctx := context.WithValue(carrier, httpCallKey{}, carrier)
		ctx = caller.WithClientIP(ctx, remoteIP(r))
		r = r.WithContext(ctx)
		dispatch.ServeHTTP(w, r)
	})
	if o.Wrap != nil {
		endpoint = o.Wrap(endpoint)
	}
	// Before authentication: the client address is known, and a tenant
	// header that is not a tenant never reaches the gateway (which counts
	// the tenants anonymous callers bring into use).
	endpoint = withClientIP(checkTenantHeaders(endpoint))

	mux := http.NewServeMux()
	mux.Handle(o.Path, guard.wrap(endpoint, false))
	if o.Path != "/mcp" {
		mux.Handle("/mcp", guard.wrap(endpoint, false))
	}
	health := guard.wrap(healthHandler(o.Health, o.Degraded, o.Store, o.Logger), true)
	mux.Handle("/healthz", health)
	mux.Handle("/v1/healthz", health)
	for p, h := range o.Extra {
		mux.Handle(p, guard.wrap(h, false))
	}
	return bodyDeadline(mux, o.BodyTimeout)
}

// bodyDeadline gives a request's body timeout to arrive, whoever reads it:
// the handler (readBody lifts the deadline once the body is in) or net/http,
// which reads an unread body after the handler returns to reuse the
// connection and closes the connection when that read fails. So a client
// trickling a body holds its connection, one of the server's capped
// connections, for at most timeout, whatever the handler answered.
func bodyDeadline(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) // unsupported writers (tests) have no deadline
		}
		next.ServeHTTP(w, r)
	})
}

func checkTenantHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := caller.CheckTenantHeaders(r.Header); e != nil {
			envelope.WriteHTTP(w, http.StatusBadRequest, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func withClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(caller.WithClientIP(r.Context(), remoteIP(r))))
	})
}

// readBody reads the whole body within max bytes and the deadline
// bodyDeadline set, then lifts the read deadline: once the body is in, the
// connection is only watched for the client going away (which ends the
// call), and a long call such as an approval wait must not be cut by a
// deadline meant for slow uploads. A body that could not be read keeps the
// deadline and closes the connection after the answer: what remains of it
// on the wire is neither read nor waited for.
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		w.Header().Set("Connection", "close")
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", max), http.StatusRequestEntityTooLarge)
		case errors.As(err, &ne) && ne.Timeout():
			http.Error(w, fmt.Sprintf("request body not received within %s", timeout), http.StatusRequestTimeout)
		default:
			http.Error(w, "failed to read the request body", http.StatusBadRequest)
		}
		return nil, false
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, true
}

// batchSize is the number of messages of a JSON-RPC batch (a body that is
// a JSON array), 0 for anything else; a malformed batch counts what it
// holds before the fault and is the SDK's to refuse.
func batchSize(body []byte) int {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return 0
	}
	n := 0
	for dec.More() {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return n
}

// writeBatchTooLarge refuses a batch over the limit as a whole: HTTP 400
// with one JSON-RPC error (id null, as for a batch that is invalid as a
// whole) naming the limit and its variable.
func writeBatchTooLarge(w http.ResponseWriter, n, limit int) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code":    -32600,
		"message": fmt.Sprintf("invalid request: a JSON-RPC batch of %d messages exceeds the limit of %d (ACCORDS_MCP_HTTP_MAX_BATCH); nothing in it ran: send at most %d per request", n, limit, limit),
		"data":    map[string]any{"reason": "batch_too_large", "messages": n, "max_batch": limit},
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

func acceptsEventStream(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "text/event-stream" || mt == "*/*" || mt == "text/*") {
				return true
			}
		}
	}
	return false
}

func writeTenantRequired(w http.ResponseWriter) {
	e := apperr.New(apperr.CodeTenantHeaderRequired, "tenant header is required for HTTP requests when strict tenant header mode is enabled")
	e.Details["required_headers"] = caller.TenantHeaders
	e.Details["strict_env_var"] = "ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER"
	envelope.WriteHTTP(w, http.StatusBadRequest, e)
}

// healthHandler answers health checks. It is open to anyone who can reach
// the port, so it says only ok, degraded (and why) or unhealthy: the
// store's error goes to the log.
func healthHandler(check func() error, degraded func() []string, store func() any, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body := map[string]any{"ok": true, "service": "accords-mcp", "version": version.Version, "status": "ok"}
		status := http.StatusOK
		if store != nil {
			body["store"] = store()
		}
		if degraded != nil {
			if d := degraded(); len(d) > 0 {
				body["status"], body["degraded"] = "degraded", d
			}
		}
		if check != nil {
			if err := check(); err != nil {
				body["ok"] = false
				body["status"] = "unhealthy"
				body["error"] = "store unavailable"
				logger.Warn("health check failed", "error", err.Error())
				status = http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(body)
		}
	})
}

package transport

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the HTTP bridge.
type HTTPOptions struct {
	// Path of the MCP endpoint (default /v1/mcp); /mcp is always an alias.
	Path string
	// MaxBodyBytes limits request bodies; larger bodies get 413.
	MaxBodyBytes int64
	// RequireTenantHeader rejects MCP requests without a tenant header.
	RequireTenantHeader bool
	// GetServer returns the MCP server for a request (per caller when the
	// gateway filters tools); nil means 400.
	GetServer func(*http.Request) *mcp.Server
	// Health reports the health of the store; nil means healthy.
	Health func() error
	// Degraded lists what is wrong while the server still serves (an audit
	// log that failed verification); /healthz then says status degraded.
	Degraded func() []string
	// Wrap, when set, wraps the MCP endpoint (authentication).
	Wrap func(http.Handler) http.Handler
	// Inner, when set, sees each MCP request after authentication and the
	// bridge's checks, before the SDK (task listens).
	Inner  func(http.Handler) http.Handler
	Logger *slog.Logger
	// Extra routes (metrics, admin) mounted beside the MCP endpoint.
	Extra map[string]http.Handler
}

// NewHTTPHandler returns the bridge: Streamable HTTP (stateless, so each
// POST stands alone and bare JSON-RPC posts work without initialize), health
// endpoints, tenant checks and body limits.
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	base := mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger}
	sse := jsonRPCErrors(mcp.NewStreamableHTTPHandler(o.GetServer, &base), o.MaxBodyBytes)
	jsonOpts := base
	jsonOpts.JSONResponse = true
	plain := jsonRPCErrors(mcp.NewStreamableHTTPHandler(o.GetServer, &jsonOpts), o.MaxBodyBytes)

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
		if r.Method == http.MethodPost && r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		dispatch.ServeHTTP(w, r)
	})
	if o.Wrap != nil {
		endpoint = o.Wrap(endpoint)
	}

	mux := http.NewServeMux()
	mux.Handle(o.Path, endpoint)
	if o.Path != "/mcp" {
		mux.Handle("/mcp", endpoint)
	}
	health := healthHandler(o.Health, o.Degraded)
	mux.Handle("/healthz", health)
	mux.Handle("/v1/healthz", health)
	for p, h := range o.Extra {
		mux.Handle(p, h)
	}
	return mux
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

func healthHandler(check func() error, degraded func() []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body := map[string]any{"ok": true, "service": "accords-mcp", "version": version.Version, "status": "ok"}
		status := http.StatusOK
		if degraded != nil {
			if d := degraded(); len(d) > 0 {
				body["status"], body["degraded"] = "degraded", d
			}
		}
		if check != nil {
			if err := check(); err != nil {
				body["ok"] = false
				body["status"] = "unhealthy"
				body["error"] = err.Error()
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

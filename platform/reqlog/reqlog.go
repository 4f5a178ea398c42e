// Package reqlog gives every HTTP request and MCP call a request id tying
// its log lines together, and keeps third-party loggers quiet.
package reqlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Header carries the request id in both directions.
const Header = "X-Request-Id"

type ctxKey struct{}

// NewID returns 32 lowercase hex characters.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "req_fallback"
	}
	return hex.EncodeToString(b[:])
}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the request id in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// Valid accepts a client-supplied id only when it is short and made of
// characters that cannot forge log structure.
func Valid(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// HTTP assigns a request id (a valid X-Request-Id, else a new one), echoes
// it, stores it in the header and context, and logs one line per request
// (debug, or warn on a server error).
func HTTP(next http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(Header)
		if !Valid(id) {
			id = NewID()
		}
		r.Header.Set(Header, id)
		w.Header().Set(Header, id)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(sw, r.WithContext(With(r.Context(), id)))
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		logger.Log(r.Context(), level, "http request",
			"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"bytes", sw.bytes, "duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status = code
		s.wroteHeader = true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.wroteHeader = true
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

// Flush keeps server-sent events streaming through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// MinLevel wraps h to drop records below min whatever h's level (go-sdk
// logs every Streamable HTTP request at INFO).
func MinLevel(h slog.Handler, min slog.Level) slog.Handler { return &levelHandler{h: h, min: min} }

type levelHandler struct {
	h   slog.Handler
	min slog.Level
}

func (l *levelHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.h.Enabled(ctx, lv)
}
func (l *levelHandler) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }
func (l *levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &levelHandler{h: l.h.WithAttrs(as), min: l.min}
}
func (l *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{h: l.h.WithGroup(name), min: l.min}
}

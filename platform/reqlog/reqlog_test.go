package reqlog

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValid(t *testing.T) {
	assert.True(t, Valid("abc-123_X.y:z"))
	for _, bad := range []string{"", "has space", "new\nline", `quote"`, string(make([]byte, 129))} {
		assert.False(t, Valid(bad), "%q", bad)
	}
	assert.Regexp(t, `^[0-9a-f]{32}$`, NewID())
}

func TestHTTPAssignsAndEchoesIDs(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var seenCtx, seenHeader string
	h := HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenCtx, seenHeader = From(r.Context()), r.Header.Get(Header)
		if r.URL.Path == "/boom" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}), logger)

	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set(Header, "client-id-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, "client-id-1", rec.Header().Get(Header))
	assert.Equal(t, "client-id-1", seenCtx)
	assert.Equal(t, "client-id-1", seenHeader)

	req = httptest.NewRequest(http.MethodGet, "/boom", nil)
	req.Header.Set(Header, "bad id with spaces")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	id := rec.Header().Get(Header)
	assert.Regexp(t, `^[0-9a-f]{32}$`, id, "an unusable client id is replaced")
	assert.Equal(t, id, seenCtx)
	assert.Regexp(t, regexp.MustCompile(`"level":"WARN".*"request_id":"`+id+`".*"status":500`), logs.String())
}

func TestMinLevel(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(MinLevel(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}), slog.LevelWarn))
	l.Info("server session connected")
	l.With("k", "v").WithGroup("g").Warn("kept")
	assert.NotContains(t, b.String(), "session connected")
	assert.Contains(t, b.String(), "kept")
	assert.False(t, l.Enabled(context.Background(), slog.LevelInfo))
}

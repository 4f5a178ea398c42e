package doctor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/session"
	"github.com/accordsai/accords-mcp/version"
)

// HTTPProbe sends GET /v0/connectors with the session's token and timeout
// and returns the HTTP status. It follows the session's endpoint rules:
// unix:// and http+unix:// base URLs, or the session's Unix socket.
func HTTPProbe(ctx context.Context, s session.Session) (int, error) {
	base, sock, err := endpoint(s)
	if err != nil {
		return 0, err
	}
	timeout := s.Timeout()
	if timeout <= 0 {
		timeout = time.Duration(session.DefaultTimeoutMS) * time.Millisecond
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if sock != "" {
		tr = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v0/connectors", nil)
	if err != nil {
		return 0, fmt.Errorf("bad base URL: %v", err)
	}
	req.Header.Set("User-Agent", version.UserAgent())
	if tok := strings.TrimSpace(s.Token); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

func endpoint(s session.Session) (base, sock string, err error) {
	b := strings.TrimRight(strings.TrimSpace(s.BaseURL), "/")
	if b == "" {
		b = session.DefaultBaseURL
	}
	lower := strings.ToLower(b)
	switch {
	case strings.HasPrefix(lower, "unix://"):
		return "http://localhost", home(b[len("unix://"):]), nil
	case strings.HasPrefix(lower, "http+unix://"):
		rest := b[len("http+unix://"):]
		prefix := ""
		if i := strings.Index(rest, "/"); i > 0 {
			rest, prefix = rest[:i], rest[i:]
		}
		p, err := url.PathUnescape(rest)
		if err != nil {
			return "", "", fmt.Errorf("bad socket in base URL: %v", err)
		}
		return "http://localhost" + prefix, home(p), nil
	}
	return b, home(strings.TrimSpace(s.UnixSocket)), nil
}

func home(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

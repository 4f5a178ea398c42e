package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/redact"
	"github.com/accordsai/accords-mcp/platform/version"
)

// maxRedirects matches Go's default; beyond it the fetch fails.
const maxRedirects = 10

// echoedBodyLimit bounds how much of an error response is copied into error
// details (the predecessor echoed whole bodies).
const echoedBodyLimit = 512

// fetchRequest is one GET. Token, when set, is sent as a bearer token and
// pins every redirect to the request's own origin.
type fetchRequest struct {
	kind         string // "index" or "bundle", for messages
	url          *url.URL
	token        string
	limit        int64
	etag         string
	lastModified string
}

type fetchResponse struct {
	notModified  bool
	body         []byte
	etag         string
	lastModified string
}

// tokenOriginKey carries the origin a bearer token is bound to through the
// request context, so the shared client's redirect policy can see it.
type tokenOriginKey struct{}

// errCrossOriginRedirect is returned by the redirect policy.
type errCrossOriginRedirect struct{ to string }

func (e *errCrossOriginRedirect) Error() string {
	return "redirect to another origin (" + e.to + ") refused while a bearer token is attached"
}

var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", maxRedirects)

// newClient builds the shared HTTP client: bounded timeouts, pooled
// connections, and redirects that keep a bearer token on its origin.
func newClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errTooManyRedirects
			}
			if bound, _ := req.Context().Value(tokenOriginKey{}).(string); bound != "" && origin(req.URL) != bound {
				return &errCrossOriginRedirect{to: origin(req.URL)}
			}
			return nil
		},
	}
}

func fetchFailed(msg string, u *url.URL) *apperr.Error {
	return apperr.New(apperr.CodeRemoteFetchFailed, "%s", msg).With("url", u.Redacted())
}

// get performs r with the timeout and byte cap. Failures are
// MCP_CATALOG_REMOTE_FETCH_FAILED, retryable only for transport errors and 5xx.
func (s *Service) get(ctx context.Context, r fetchRequest) (*fetchResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if r.token != "" {
		ctx = context.WithValue(ctx, tokenOriginKey{}, origin(r.url))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url.String(), nil)
	if err != nil {
		return nil, fetchFailed("failed building remote request", r.url).With("cause", err.Error())
	}
	req.Header.Set("User-Agent", version.UserAgent())
	if r.kind == "index" {
		req.Header.Set("Accept", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.etag != "" {
		req.Header.Set("If-None-Match", r.etag)
	} else if r.lastModified != "" {
		req.Header.Set("If-Modified-Since", r.lastModified)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var cross *errCrossOriginRedirect
		switch {
		case errors.As(err, &cross):
			return nil, fetchFailed("remote redirect to another origin refused: a bearer token is attached", r.url).
				With("redirect_origin", cross.to)
		case errors.Is(err, errTooManyRedirects):
			return nil, fetchFailed("remote request redirected too many times", r.url)
		}
		e := fetchFailed("remote request failed", r.url).With("cause", s.redact(transportCause(err), r.token)).WithCause(err)
		e.Retryable = true
		return nil, e
	}
	defer resp.Body.Close()
	out := &fetchResponse{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}
	if resp.StatusCode == http.StatusNotModified && (r.etag != "" || r.lastModified != "") {
		out.notModified = true
		return out, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, echoedBodyLimit+1))
		body := string(snippet)
		if len(snippet) > echoedBodyLimit {
			body = truncate(body, echoedBodyLimit)
		}
		e := fetchFailed("remote request returned non-success status", r.url).
			With("http_status", resp.StatusCode).With("body", s.redact(body, r.token))
		e.Retryable = resp.StatusCode >= 500
		return nil, e
	}
	if resp.ContentLength > r.limit {
		return nil, tooLarge(r, resp.ContentLength)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.limit+1))
	if err != nil {
		e := fetchFailed("remote response could not be read", r.url).With("cause", s.redact(transportCause(err), r.token)).WithCause(err)
		e.Retryable = true
		return nil, e
	}
	if int64(len(body)) > r.limit {
		return nil, tooLarge(r, -1)
	}
	out.body = body
	return out, nil
}

func tooLarge(r fetchRequest, declared int64) *apperr.Error {
	e := fetchFailed(fmt.Sprintf("remote %s exceeds the size limit of %d bytes", r.kind, r.limit), r.url).
		With("limit_bytes", r.limit).With("kind", r.kind)
	if declared >= 0 {
		e.With("content_length", declared)
	}
	return e
}

// transportCause is the error text without Go's "Get \"url\": " prefix,
// which repeats details.url.
func transportCause(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if errors.Is(ue.Err, context.DeadlineExceeded) {
			return "timeout"
		}
		return ue.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return err.Error()
}

// redact removes a token from text a remote server or the network stack
// produced (a server may echo the Authorization header back).
func (s *Service) redact(text, token string) string {
	return redact.Token(text, token, "***")
}

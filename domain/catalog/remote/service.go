package remote

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// Defaults (D9).
const (
	DefaultMaxIndexBytes  int64 = 8 << 20
	DefaultMaxBundleBytes int64 = 4 << 20
	DefaultTimeout              = 20 * time.Second
)

// Options tune the service; zero values take the defaults.
type Options struct {
	MaxIndexBytes  int64
	MaxBundleBytes int64
	// Timeout bounds one HTTP exchange, body included.
	Timeout time.Duration
	// TokenEnvAllow lists the only variables a BEARER_ENV source may name
	// (ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW); the server's own are always refused.
	TokenEnvAllow []string
	// Getenv reads bearer tokens at request time (os.Getenv by default).
	Getenv func(string) string
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

// Service manages sources, lists remote indexes and installs cookbooks.
type Service struct {
	db      *store.DB
	opts    Options
	client  *http.Client
	now     func() time.Time
	catalog Catalog
}

// New returns a service over db. catalog stores installed bundles; it may be
// nil for a service that only lists.
func New(db *store.DB, catalog Catalog, opts Options) *Service {
	if opts.MaxIndexBytes <= 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxBundleBytes <= 0 {
		opts.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{db: db, opts: opts, client: newClient(opts.Timeout), now: opts.Now, catalog: catalog}
}

// Close drops pooled connections.
func (s *Service) Close() { s.client.CloseIdleConnections() }

// Limits reports the effective byte caps and timeout.
func (s *Service) Limits() (maxIndex, maxBundle int64, timeout time.Duration) {
	return s.opts.MaxIndexBytes, s.opts.MaxBundleBytes, s.opts.Timeout
}

// token reads the source's bearer token at request time, checked against
// the allow-list in force now; the value is never stored, logged or returned.
func (s *Service) token(src Source) (string, error) {
	if src.AuthMode != AuthBearerEnv {
		return "", nil
	}
	if err := s.opts.checkTokenVar(src.AuthEnvVar); err != nil {
		ae := apperr.As(err)
		return "", apperr.New(apperr.CodeRemoteFetchFailed, "the bearer env var of this source is not allowed; re-register the source with a variable listed in ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW").
			With("source_id", src.SourceID).With("auth_env_var", src.AuthEnvVar).With("reason", ae.Message)
	}
	tok := strings.TrimSpace(s.opts.Getenv(src.AuthEnvVar))
	if tok == "" {
		return "", apperr.New(apperr.CodeRemoteFetchFailed, "bearer env var for source is empty").
			With("source_id", src.SourceID).With("auth_env_var", src.AuthEnvVar)
	}
	return tok, nil
}

// tokenFor returns the token only when target is on the source's own
// origin: a download_url elsewhere never sees it.
func tokenFor(src Source, token string, target *url.URL) string {
	if token == "" {
		return ""
	}
	iu, ok := parseHTTPURL(src.IndexURL)
	if !ok || origin(iu) != origin(target) {
		return ""
	}
	return token
}

// IndexView is an index together with where it came from.
type IndexView struct {
	Index *Index
	// Stale is true when the source could not be reached and the index is the
	// last good copy.
	Stale bool
	// NotModified is true when the source answered 304 to If-None-Match.
	NotModified bool
	// FetchedAt is when this content was downloaded; CheckedAt is when the
	// source last confirmed it.
	FetchedAt time.Time
	CheckedAt time.Time
	// FetchError is the failure that made the view stale.
	FetchError *apperr.Error
}

func withSource(err error, src Source) error {
	if ae, ok := err.(*apperr.Error); ok {
		if _, has := ae.Details["source_id"]; !has {
			ae.With("source_id", src.SourceID)
		}
		return ae
	}
	return err
}

// FetchIndex gets the source's index, conditionally when cached, and serves
// the cached copy (stale) on a retryable failure; 4xx, oversize or
// malformed indexes are reported.
func (s *Service) FetchIndex(ctx context.Context, src Source) (*IndexView, error) {
	if !src.Enabled {
		return nil, apperr.New(apperr.CodeRemoteFetchFailed, "catalog source is disabled").With("source_id", src.SourceID)
	}
	tok, err := s.token(src)
	if err != nil {
		return nil, err
	}
	u, ok := parseHTTPURL(src.IndexURL)
	if !ok {
		return nil, schemaInvalid("source.index_url", "source.index_url must be http(s) url").With("source_id", src.SourceID)
	}
	if tok != "" && !tokenSafe(u) {
		// A source stored before the rule: refuse rather than send the
		// token in clear.
		return nil, apperr.New(apperr.CodeRemoteFetchFailed, "the bearer token of this source is only sent over https (or plain http to a loopback host); change its index_url").
			With("source_id", src.SourceID).With("url", u.Redacted())
	}
	cached, err := s.loadCache(src)
	if err != nil {
		return nil, apperr.Internal("read cached remote index", err)
	}
	req := fetchRequest{kind: "index", url: u, token: tok, limit: s.opts.MaxIndexBytes}
	if cached != nil {
		req.etag, req.lastModified = cached.meta.ETag, cached.meta.LastModified
	}
	resp, ferr := s.get(ctx, req)
	now := s.now().UTC()
	switch {
	case ferr != nil:
		ae := apperr.As(withSource(ferr, src))
		if !ae.Retryable || cached == nil {
			return nil, ae
		}
		idx, perr := ParseIndex(cached.body, src.SourceID)
		if perr != nil {
			return nil, ae
		}
		idx.restrictDownloads(src)
		return &IndexView{Index: idx, Stale: true, FetchedAt: cached.meta.FetchedAt, CheckedAt: cached.meta.CheckedAt, FetchError: ae}, nil
	case resp.notModified:
		if cached == nil {
			return nil, apperr.New(apperr.CodeRemoteFetchFailed, "remote answered 304 Not Modified without a cached index").
				With("source_id", src.SourceID).With("url", u.Redacted())
		}
		idx, perr := ParseIndex(cached.body, src.SourceID)
		if perr != nil {
			return nil, withSource(perr, src)
		}
		idx.restrictDownloads(src)
		if err := s.touchCache(src, resp.etag, now); err != nil {
			return nil, apperr.Internal("update cached remote index", err)
		}
		return &IndexView{Index: idx, NotModified: true, FetchedAt: cached.meta.FetchedAt, CheckedAt: now}, nil
	}
	idx, perr := ParseIndex(resp.body, src.SourceID)
	if perr != nil {
		return nil, withSource(perr, src)
	}
	idx.restrictDownloads(src)
	if err := s.saveCache(src, resp.body, resp.etag, resp.lastModified, now); err != nil {
		return nil, apperr.Internal("cache remote index", err)
	}
	return &IndexView{Index: idx, FetchedAt: now, CheckedAt: now}, nil
}

// Listing is the result of List.
type Listing struct {
	SourceID     string      `json:"source_id"`
	Index        *Index      `json:"index"`
	Items        []IndexItem `json:"items"`
	InvalidItems []BadItem   `json:"invalid_items"`
	Stale        bool        `json:"stale"`
	NotModified  bool        `json:"not_modified"`
	FetchedAt    time.Time   `json:"fetched_at"`
	CachedAt     *time.Time  `json:"cached_at,omitempty"`
	StaleReason  *StaleCause `json:"stale_reason,omitempty"`
}

// StaleCause summarises the fetch failure behind a stale listing.
type StaleCause struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
}

// List fetches the source's index and filters it by query.
func (s *Service) List(ctx context.Context, sourceID, query string) (*Listing, error) {
	src, err := s.Source(sourceID)
	if err != nil {
		return nil, err
	}
	v, err := s.FetchIndex(ctx, src)
	if err != nil {
		return nil, err
	}
	out := &Listing{SourceID: src.SourceID, Index: v.Index, Items: v.Index.Filter(query), InvalidItems: v.Index.Invalid,
		Stale: v.Stale, NotModified: v.NotModified, FetchedAt: v.FetchedAt}
	if v.Stale || v.NotModified {
		at := v.CheckedAt
		out.CachedAt = &at
	}
	if v.FetchError != nil {
		out.StaleReason = &StaleCause{Code: v.FetchError.Code, Message: v.FetchError.Message, Retryable: v.FetchError.Retryable, Details: v.FetchError.Details}
	}
	return out, nil
}

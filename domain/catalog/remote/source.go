// Package remote pulls cookbooks from remote sources: the source registry,
// the accords.cookbook.index.v1 format, a guarded fetcher, SHA-256
// integrity, semver selection and an offline copy of the last good index.
package remote

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/accordsai/accords-mcp/store"
)

// Auth modes of a source.
const (
	AuthNone      = "NONE"
	AuthBearerEnv = "BEARER_ENV"
)

// Nested buckets inside store.BucketSources.
var (
	bucketDefs       = []byte("defs")        // source_id -> Source
	bucketIndexMeta  = []byte("index_meta")  // source_id -> cacheMeta
	bucketIndexBody  = []byte("index_body")  // source_id -> raw index bytes
	bucketInstallLog = []byte("install_log") // cookbook_id@version -> LockRecord
)

// Source is one configured remote catalog. It never holds a token: with
// BEARER_ENV only the name of the environment variable is stored.
type Source struct {
	SourceID      string `json:"source_id"`
	IndexURL      string `json:"index_url"`
	Enabled       bool   `json:"enabled"`
	AuthMode      string `json:"auth_mode"`
	AuthEnvVar    string `json:"auth_env_var,omitempty"`
	RequireSHA256 bool   `json:"require_sha256"`
	// DownloadHosts are the hosts (host or host:port) download_urls may
	// name; empty means the index URL's own origin only.
	DownloadHosts []string  `json:"download_hosts,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SourceInput is what a caller submits to upsert a source. Pointers tell an
// absent field from a false one (enabled defaults to true).
type SourceInput struct {
	SourceID      string
	IndexURL      string
	Enabled       *bool
	AuthMode      string
	AuthEnvVar    string
	RequireSHA256 *bool
	DownloadHosts []string
}

// schemaInvalid builds the catalog's schema error for a source field; the
// messages are the predecessor's, the field detail is ours.
func schemaInvalid(field, msg string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogSchemaInvalid, "%s", msg).With("field", field)
}

// parseHTTPURL accepts absolute http(s) URLs with a host and no fragment
// surprises; it returns the parsed URL.
func parseHTTPURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return nil, false
	}
	return u, true
}

// normalize validates in and builds the record to store.
func (s *Service) normalize(in SourceInput) (Source, error) {
	src := Source{
		SourceID:   strings.TrimSpace(in.SourceID),
		IndexURL:   strings.TrimSpace(in.IndexURL),
		Enabled:    true,
		AuthMode:   strings.ToUpper(strings.TrimSpace(in.AuthMode)),
		AuthEnvVar: strings.TrimSpace(in.AuthEnvVar),
	}
	if in.Enabled != nil {
		src.Enabled = *in.Enabled
	}
	if in.RequireSHA256 != nil {
		src.RequireSHA256 = *in.RequireSHA256
	}
	if src.SourceID == "" {
		return Source{}, schemaInvalid("source.source_id", "source.source_id is required")
	}
	if !ident.ID.Valid(src.SourceID) {
		return Source{}, apperr.Validation("source.source_id", "source.source_id must match %s", ident.ID)
	}
	u, ok := parseHTTPURL(src.IndexURL)
	if !ok {
		return Source{}, schemaInvalid("source.index_url", "source.index_url must be http(s) url")
	}
	if u.User != nil {
		// Credentials in the URL would be stored and listed in clear text.
		return Source{}, apperr.Validation("source.index_url", "source.index_url must not contain credentials; use auth_mode BEARER_ENV")
	}
	hosts, err := normalizeHosts(in.DownloadHosts)
	if err != nil {
		return Source{}, err
	}
	src.DownloadHosts = hosts
	switch src.AuthMode {
	case "":
		src.AuthMode = AuthNone
		fallthrough
	case AuthNone:
		src.AuthEnvVar = ""
	case AuthBearerEnv:
		if src.AuthEnvVar == "" {
			return Source{}, schemaInvalid("source.auth_env_var", "source.auth_env_var is required for BEARER_ENV")
		}
		if !config.EnvVarName.Valid(src.AuthEnvVar) {
			return Source{}, apperr.Validation("source.auth_env_var", "source.auth_env_var must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
		}
		if err := s.opts.checkTokenVar(src.AuthEnvVar); err != nil {
			return Source{}, err
		}
		if !tokenSafe(u) {
			return Source{}, apperr.Validation("source.index_url", "a BEARER_ENV source needs an https index_url (plain http only to a loopback host): the token would cross the network in clear")
		}
	default:
		return Source{}, apperr.Validation("source.auth_mode", "source.auth_mode must be one of NONE, BEARER_ENV, got %q", strings.TrimSpace(in.AuthMode)).
			With("allowed", []string{AuthNone, AuthBearerEnv})
	}
	return src, nil
}

// checkTokenVar allows only variables the operator listed in
// ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW, never the server's own: whoever
// registers a source chooses where the token goes.
func (o Options) checkTokenVar(name string) error {
	if config.ServerOwnedVar(name) {
		return apperr.Validation("source.auth_env_var", "source.auth_env_var %s is reserved for the server's own configuration and cannot be sent to a catalog source", name)
	}
	if slices.Contains(o.TokenEnvAllow, name) {
		return nil
	}
	if len(o.TokenEnvAllow) == 0 {
		return apperr.Validation("source.auth_env_var", "source.auth_env_var %s is not allowed: a BEARER_ENV source may name only a variable the operator lists in ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW, and none is listed", name).
			With("allowed", []string{}).With("allow_env_var", "ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW")
	}
	return apperr.Validation("source.auth_env_var", "source.auth_env_var %s is not allowed: a BEARER_ENV source may name only a variable listed in ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW", name).
		With("allowed", o.TokenEnvAllow).With("allow_env_var", "ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW")
}

// UpsertSource creates or replaces a source (whole record, no merge). created
// reports whether it is new.
func (s *Service) UpsertSource(in SourceInput) (src Source, created bool, err error) {
	src, err = s.normalize(in)
	if err != nil {
		return Source{}, false, err
	}
	now := s.now().UTC()
	err = s.db.Update(func(tx store.Tx) error {
		defs, err := nested(tx, bucketDefs)
		if err != nil {
			return err
		}
		var old Source
		found, err := store.GetJSON(defs, []byte(src.SourceID), &old)
		if err != nil {
			return err
		}
		created = !found
		src.CreatedAt, src.UpdatedAt = now, now
		if found {
			src.CreatedAt = old.CreatedAt
			if old.IndexURL != src.IndexURL {
				// A cached index belongs to the URL it came from.
				if err := deleteCache(tx, src.SourceID); err != nil {
					return err
				}
			}
		}
		return store.PutJSON(defs, []byte(src.SourceID), src)
	})
	if err != nil {
		return Source{}, false, apperr.Internal("store catalog source", err)
	}
	return src, created, nil
}

// DeleteSource removes a source and its cached index; install records stay
// as history. Deleting a missing source is not an error.
func (s *Service) DeleteSource(id string) (bool, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return false, apperr.Validation("source_id", "source_id is required")
	}
	deleted := false
	err := s.db.Update(func(tx store.Tx) error {
		defs, err := nested(tx, bucketDefs)
		if err != nil {
			return err
		}
		if defs.Get([]byte(id)) == nil {
			return nil
		}
		deleted = true
		if err := defs.Delete([]byte(id)); err != nil {
			return err
		}
		return deleteCache(tx, id)
	})
	if err != nil {
		return false, apperr.Internal("delete catalog source", err)
	}
	return deleted, nil
}

// Sources lists every source sorted by source_id.
func (s *Service) Sources() ([]Source, error) {
	out := []Source{}
	err := s.db.View(func(tx store.Tx) error {
		defs := tx.Bucket(store.BucketSources).Bucket(bucketDefs)
		if defs == nil {
			return nil
		}
		return defs.ForEach(func(k, v []byte) error {
			var src Source
			if _, err := store.GetJSON(defs, k, &src); err != nil {
				return err
			}
			out = append(out, src)
			return nil
		})
	})
	if err != nil {
		return nil, apperr.Internal("list catalog sources", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SourceID < out[j].SourceID })
	return out, nil
}

// Source returns one source or MCP_CATALOG_SOURCE_NOT_FOUND.
func (s *Service) Source(id string) (Source, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return Source{}, apperr.Validation("source_id", "source_id is required")
	}
	var src Source
	var found bool
	err := s.db.View(func(tx store.Tx) error {
		defs := tx.Bucket(store.BucketSources).Bucket(bucketDefs)
		if defs == nil {
			return nil
		}
		var err error
		found, err = store.GetJSON(defs, []byte(id), &src)
		return err
	})
	if err != nil {
		return Source{}, apperr.Internal("read catalog source", err)
	}
	if !found {
		return Source{}, apperr.New(apperr.CodeCatalogSourceNotFound, "catalog source not found").With("source_id", id)
	}
	return src, nil
}

// nested returns (creating) a bucket inside the sources bucket; only valid in
// a write transaction.
func nested(tx store.Tx, name []byte) (store.Bucket, error) {
	return tx.Bucket(store.BucketSources).CreateBucketIfNotExists(name)
}

// origin is scheme://host:port with the default port made explicit, the unit
// a bearer token is bound to.
func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port)
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "https") {
		return "443"
	}
	return "80"
}

// tokenSafe reports whether a bearer token may be sent to u: over https,
// or over plain http to this machine only.
func tokenSafe(u *url.URL) bool {
	if strings.EqualFold(u.Scheme, "https") {
		return true
	}
	host := strings.Trim(u.Hostname(), "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxDownloadHosts bounds a source's download_hosts list.
const maxDownloadHosts = 32

// normalizeHosts checks download_hosts entries (host or host:port, no
// scheme or path), lower-cased, deduplicated, in order.
func normalizeHosts(in []string) ([]string, error) {
	if len(in) > maxDownloadHosts {
		return nil, apperr.Validation("source.download_hosts", "source.download_hosts may list at most %d hosts", maxDownloadHosts)
	}
	var out []string
	seen := map[string]bool{}
	for i, h := range in {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		u, err := url.Parse("//" + h)
		if err != nil || u.Host != h || u.Hostname() == "" || u.User != nil || len(h) > 255 {
			return nil, apperr.Validation(fmt.Sprintf("source.download_hosts[%d]", i), "source.download_hosts entries are host names with an optional port (cdn.example.com, 127.0.0.1:8443), got %q", truncate(h, 80))
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out, nil
}

// downloadAllowed reports whether a download_hosts entry matches target's
// host (and port), or, without entries, target is on the index's origin.
func downloadAllowed(src Source, target *url.URL) bool {
	if len(src.DownloadHosts) == 0 {
		iu, ok := parseHTTPURL(src.IndexURL)
		return ok && origin(iu) == origin(target)
	}
	port := target.Port()
	if port == "" {
		port = defaultPort(target.Scheme)
	}
	for _, h := range src.DownloadHosts {
		e, err := url.Parse("//" + h)
		if err != nil {
			continue
		}
		if strings.EqualFold(e.Hostname(), target.Hostname()) && (e.Port() == "" || e.Port() == port) {
			return true
		}
	}
	return false
}

// Package oauth validates OAuth 2.1 access tokens issued as signed JWTs by
// one OpenID provider: keys come from the provider's discovery document
// and JWKS (fetched again when a token names an unknown key id), the
// issuer must match, aud must name this resource, exp and nbf hold within
// a small leeway, and only asymmetric signatures count. It knows nothing
// of MCP or of the policy's capabilities.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Leeway is the clock skew tolerated on exp and nbf.
const Leeway = 30 * time.Second

// rediscoverAfter spaces discovery attempts while the provider is down.
const rediscoverAfter = 5 * time.Second

// Algorithms are the signature algorithms accepted: asymmetric only, so
// neither "none" nor an HMAC keyed with a public key can pass.
var Algorithms = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// ErrInvalid wraps every reason a token is refused.
var ErrInvalid = errors.New("invalid token")

// ErrUnavailable means the provider's discovery document could not be read,
// so no token can be checked yet.
var ErrUnavailable = errors.New("identity provider unavailable")

// Config names the provider, the resource and the claims to read.
type Config struct {
	Issuer, Audience                      string
	CallerClaim, TenantClaim, GroupsClaim string
	// Client fetches discovery and keys (default: a client with a 10 s
	// timeout).
	Client *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Claims are what a valid token says about its caller.
type Claims struct {
	Caller, Tenant string
	Scopes, Groups []string
	Expiry         time.Time
}

// Verifier checks tokens against one provider. Discovery happens on the
// first token, so a server starts while its provider is down.
type Verifier struct {
	cfg      Config
	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failedAt time.Time
	lastErr  error
}

// New returns a verifier for cfg.
func New(cfg Config) *Verifier {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg}
}

func (v *Verifier) discover(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if v.lastErr != nil && v.cfg.Now().Sub(v.failedAt) < rediscoverAfter {
		return nil, v.lastErr
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.cfg.Client), 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, v.cfg.Issuer)
	if err != nil {
		v.failedAt, v.lastErr = v.cfg.Now(), fmt.Errorf("%w: discovery of %s: %w", ErrUnavailable, v.cfg.Issuer, err)
		return nil, v.lastErr
	}
	// The key set outlives this request: its fetches use a context of
	// their own with the configured client.
	keys := oidc.ClientContext(context.Background(), v.cfg.Client)
	v.verifier = p.VerifierContext(keys, &oidc.Config{
		ClientID:             v.cfg.Audience,
		SupportedSigningAlgs: Algorithms,
		SkipExpiryCheck:      true, // checked below, with Leeway
	})
	return v.verifier, nil
}

// Verify checks raw and returns its claims; errors wrap ErrInvalid or
// ErrUnavailable.
func (v *Verifier) Verify(ctx context.Context, raw string) (Claims, error) {
	iv, err := v.discover(ctx)
	if err != nil {
		return Claims{}, err
	}
	tok, err := iv.Verify(ctx, raw)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var all map[string]any
	if err := tok.Claims(&all); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	now := v.cfg.Now()
	if tok.Expiry.IsZero() {
		return Claims{}, fmt.Errorf("%w: the token has no exp", ErrInvalid)
	}
	if now.Add(-Leeway).After(tok.Expiry) {
		return Claims{}, fmt.Errorf("%w: the token expired at %s", ErrInvalid, tok.Expiry.UTC().Format(time.RFC3339))
	}
	if nbf, ok := all["nbf"].(float64); ok {
		if t := time.Unix(int64(nbf), 0); now.Add(Leeway).Before(t) {
			return Claims{}, fmt.Errorf("%w: the token is not valid before %s", ErrInvalid, t.UTC().Format(time.RFC3339))
		}
	}
	c := Claims{Expiry: tok.Expiry, Scopes: scopes(all), Groups: strs(all[v.cfg.GroupsClaim])}
	c.Caller, _ = all[v.cfg.CallerClaim].(string)
	if c.Caller == "" {
		return Claims{}, fmt.Errorf("%w: the token has no %s claim", ErrInvalid, v.cfg.CallerClaim)
	}
	if v.cfg.TenantClaim != "" {
		c.Tenant, _ = all[v.cfg.TenantClaim].(string)
	}
	return c, nil
}

// scopes reads "scope" (RFC 9068: space-separated) or "scp" (a string or
// a list, as some providers write it).
func scopes(all map[string]any) []string {
	if s, ok := all["scope"].(string); ok {
		return strings.Fields(s)
	}
	return strs(all["scp"])
}

// strs reads a claim holding a list of strings or one space-separated
// string.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Metadata path of RFC 9728: the well-known prefix inserted between the
// resource's host and its path.
const wellKnown = "/.well-known/oauth-protected-resource"

// MetadataURL is the protected resource metadata URL of resource (an
// absolute URL): RFC 9728's well-known path with the resource's path after
// it.
func MetadataURL(resource string) string {
	scheme, rest, ok := strings.Cut(resource, "://")
	if !ok {
		return ""
	}
	host, path, _ := strings.Cut(rest, "/")
	path = strings.TrimSuffix(path, "/")
	if path != "" {
		path = "/" + path
	}
	return scheme + "://" + host + wellKnown + path
}

// MetadataPaths are the request paths answering resource's metadata: the
// bare well-known path and the one with the resource's path after it.
func MetadataPaths(resource string) []string {
	u := MetadataURL(resource)
	_, rest, _ := strings.Cut(u, "://")
	_, path, _ := strings.Cut(rest, "/")
	out := []string{wellKnown}
	if p := "/" + path; p != wellKnown {
		out = append(out, p)
	}
	return out
}

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/accordsai/accords-mcp/gateway/oauth"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The HTTP bridge as an OAuth 2.1 resource server ([oauth] in the policy):
// a bearer token that is no static caller's is checked as an access token
// of the policy's issuer; the caller it names becomes a principal like a
// static caller (its tenant, rate limits, receipts), with the capabilities
// the policy maps its scopes and groups to.

// TokenInfo.Extra keys of an OAuth caller.
const (
	tokenInfoOAuth  = "accords_oauth"
	tokenInfoGroups = "accords_groups"
)

// oauthVerifiers keeps one verifier per [oauth] configuration, so its
// discovered keys survive requests and reloads that change nothing.
type oauthVerifiers struct {
	mu  sync.Mutex
	key string
	v   *oauth.Verifier
}

func (o *oauthVerifiers) get(cfg *policy.OAuth) *oauth.Verifier {
	key := strings.Join([]string{cfg.Issuer, cfg.Audience, cfg.CallerClaim, cfg.TenantClaim, cfg.GroupsClaim}, "\x00")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.v == nil || o.key != key {
		o.key, o.v = key, oauth.New(oauth.Config{
			Issuer: cfg.Issuer, Audience: cfg.Audience,
			CallerClaim: cfg.CallerClaim, TenantClaim: cfg.TenantClaim, GroupsClaim: cfg.GroupsClaim,
		})
	}
	return o.v
}

// challenge is the WWW-Authenticate value of a 401; with [oauth] it
// points at the protected resource metadata (RFC 9728).
func challenge(pol *policy.Policy, params string) string {
	v := `Bearer realm="` + Realm + `"`
	if pol.OAuth != nil {
		v += `, resource_metadata="` + oauth.MetadataURL(pol.OAuth.Audience) + `"`
	}
	if params != "" {
		v += ", " + params
	}
	return v
}

// serveOAuth authenticates token as an OAuth access token. A token that
// fails never reaches next: 401 with the metadata challenge (the SDK's
// middleware writes it), or 503 while the provider cannot be discovered.
func (g *Gateway) serveOAuth(w http.ResponseWriter, r *http.Request, pol *policy.Policy, token string, next http.Handler) {
	claims, err := g.oauth.get(pol.OAuth).Verify(r.Context(), token)
	if errors.Is(err, oauth.ErrUnavailable) {
		g.logger.Warn("oauth token not checked", "error", err.Error())
		e := apperr.New(apperr.CodeInternal, "the identity provider cannot be reached, so the token cannot be checked; retry shortly")
		e.Retryable = true
		envelope.WriteHTTP(w, http.StatusServiceUnavailable, e.With("reason", "oauth_provider_unavailable"))
		return
	}
	var c *policy.Caller
	if err == nil {
		if _, static := pol.Lookup(claims.Caller); static {
			err = errors.New("the token's caller id names a static caller of the policy")
		} else {
			c, err = pol.OAuth.Caller(claims.Caller, claims.Tenant, claims.Scopes, claims.Groups)
		}
	}
	if err != nil {
		g.logger.Info("oauth token refused", "error", err.Error())
	}
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		if err != nil {
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, strings.TrimPrefix(err.Error(), oauth.ErrInvalid.Error()+": "))
		}
		return &auth.TokenInfo{UserID: c.ID, Scopes: claims.Scopes, Expiration: claims.Expiry, Extra: map[string]any{
			tokenInfoTenant: c.Tenant, tokenInfoOAuth: true, tokenInfoGroups: claims.Groups,
		}}, nil
	}
	bound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := caller.TenantFromHeader(r.Header); h != "" && h != c.Tenant {
			e := apperr.New(apperr.CodePermissionDenied, "caller %s is bound to its token's tenant; the tenant header names another tenant", c.ID).
				With("reason", "tenant_mismatch").With("header_tenant", h)
			envelope.WriteHTTP(w, http.StatusForbidden, e)
			return
		}
		p := caller.Resolve(caller.Request{HTTP: true, Header: r.Header, VerifiedID: c.ID, VerifiedTenant: c.Tenant,
			Grants: grantsOf(auth.TokenInfoFromContext(r.Context())), Addr: caller.ClientIP(r.Context())}, fixedTenants(pol))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
	auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: oauth.MetadataURL(pol.OAuth.Audience), ClockSkew: oauth.Leeway,
	})(bound).ServeHTTP(w, r)
}

// grantsOf reads an OAuth caller's grants from the token info serveOAuth
// made (nil for a static caller).
func grantsOf(ti *auth.TokenInfo) *caller.Grants {
	if ti == nil || ti.Extra[tokenInfoOAuth] != true {
		return nil
	}
	groups, _ := ti.Extra[tokenInfoGroups].([]string)
	return &caller.Grants{Scopes: ti.Scopes, Groups: groups}
}

// oauthCaller is the policy entry of an OAuth principal, built from its
// grants under the policy in force (nil when the policy no longer accepts
// OAuth tokens or no longer accepts this one).
func oauthCaller(pol *policy.Policy, p caller.Principal) *policy.Caller {
	if pol.OAuth == nil {
		return nil
	}
	c, err := pol.OAuth.Caller(p.ID, p.Scope, p.Grants.Scopes, p.Grants.Groups)
	if err != nil || c.Tenant != p.Scope {
		return nil
	}
	return c
}

// ResourceMetadata answers the protected resource metadata (RFC 9728) at
// /.well-known/oauth-protected-resource and at that path followed by the
// MCP endpoint's path; 404 while the policy has no [oauth] section.
func (g *Gateway) ResourceMetadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := g.policy.Load().OAuth
		if o == nil || !slices.Contains(oauth.MetadataPaths(o.Audience), r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               o.Audience,
			AuthorizationServers:   []string{o.Issuer},
			ScopesSupported:        o.ScopesSupported(),
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "accords-mcp",
		}).ServeHTTP(w, r)
	})
}

// ScopeChallenge answers a tools/call of an OAuth caller whose token lacks
// the scope the tool's capability needs with 403 and the insufficient_scope
// challenge naming that scope (the body is the MCP_PERMISSION_DENIED
// envelope), so a client can ask its user for the scope. It runs after the
// bridge has read the body; every other request passes unchanged.
func (g *Gateway) ScopeChallenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := g.RequestPrincipal(r)
		pol := g.policy.Load()
		if p.Grants == nil || pol.OAuth == nil || r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		msg, _ := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "tools/call" {
			next.ServeHTTP(w, r)
			return
		}
		var params struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Params, &params)
		t, known := g.reg.Lookup(params.Name)
		if !known || !pol.OAuth.Grantable(t.Capability) {
			next.ServeHTTP(w, r)
			return
		}
		e := g.refusalIn(r.Context(), g.callerFor(pol, p), t)
		if e == nil || e.Details["reason"] != "missing_capability" {
			next.ServeHTTP(w, r)
			return
		}
		scope := pol.OAuth.Scope(t.Capability)
		w.Header().Set("WWW-Authenticate", challenge(pol, `error="insufficient_scope", scope="`+scope+`"`))
		envelope.WriteHTTP(w, http.StatusForbidden, e.With("required_scope", scope))
	})
}

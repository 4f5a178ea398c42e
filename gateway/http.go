package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenInfoTenant marks TokenInfo values made by Wrap; it carries the
// caller's tenant from the policy into the MCP request.
const tokenInfoTenant = "accords_tenant"

// Realm is the WWW-Authenticate realm.
const Realm = "accords-mcp"

// queryCredentialNames are query parameters that look like credentials. URLs
// end up in proxy and access logs, so such requests are refused outright.
var queryCredentialNames = []string{"access_token", "token", "auth_token", "bearer", "api_key", "apikey", "authorization", "auth", "key"}

type principalKey struct{}
type callerKey struct{}

// Wrap authenticates HTTP requests to the MCP endpoint. When the policy
// names callers, a bearer token is required (401 otherwise) and the caller's
// tenant is fixed by the policy: a tenant header naming another tenant gets
// 403. Tokens in the query string get 400 whatever the policy.
func (g *Gateway) Wrap(next http.Handler) http.Handler {
	// The SDK middleware is what puts TokenInfo where the MCP layer reads
	// it (RequestExtra.TokenInfo); the token was checked already.
	inner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		c, ok := ctx.Value(callerKey{}).(*policy.Caller)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: c.ID, Extra: map[string]any{tokenInfoTenant: c.Tenant}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for name := range q {
			for _, bad := range queryCredentialNames {
				if strings.EqualFold(name, bad) {
					e := apperr.Validation("query."+strings.ToLower(name), "credentials in the URL query are refused (URLs are logged); send Authorization: Bearer <token>")
					envelope.WriteHTTP(w, http.StatusBadRequest, e)
					return
				}
			}
		}
		pol := g.policy.Load()
		addr := caller.ClientIP(r.Context())
		if !pol.HasCallers() {
			p := caller.Resolve(caller.Request{HTTP: true, Header: r.Header, Addr: addr}, fixedTenants(pol))
			if !g.tenants.admit(p.Scope) {
				e := apperr.New(apperr.CodePermissionDenied, "anonymous callers may use at most %d tenants and this one is new; reuse a tenant, or list callers in a policy file", g.tenants.max).
					With("reason", "tenant_limit").With("max_tenants", g.tenants.max).With("limit_env_var", "ACCORDS_MCP_HTTP_MAX_ANON_TENANTS")
				envelope.WriteHTTP(w, http.StatusForbidden, e)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
			return
		}
		token, present := bearer(r.Header.Get("Authorization"))
		if !present {
			w.Header().Set("WWW-Authenticate", challenge(pol, ""))
			envelope.WriteHTTP(w, http.StatusUnauthorized, apperr.New(apperr.CodeAuthUnauthenticated, "this server requires Authorization: Bearer <token>"))
			return
		}
		c, ok := pol.Authenticate(token)
		if !ok && pol.OAuth != nil {
			g.serveOAuth(w, r, pol, token, next)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+Realm+`", error="invalid_token", error_description="unknown token"`)
			envelope.WriteHTTP(w, http.StatusUnauthorized, apperr.New(apperr.CodeAuthUnauthenticated, "the bearer token is not known to this server"))
			return
		}
		if h := caller.TenantFromHeader(r.Header); h != "" && h != c.Tenant {
			e := apperr.New(apperr.CodePermissionDenied, "caller %s is bound to its own tenant; the tenant header names another tenant", c.ID).
				With("reason", "tenant_mismatch").With("header_tenant", h)
			envelope.WriteHTTP(w, http.StatusForbidden, e)
			return
		}
		p := caller.Resolve(caller.Request{HTTP: true, Header: r.Header, VerifiedID: c.ID, VerifiedTenant: c.Tenant, Addr: addr}, fixedTenants(pol))
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		ctx = context.WithValue(ctx, callerKey{}, c)
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
}

func bearer(h string) (string, bool) {
	fields := strings.Fields(h)
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// GetServer returns the cached server for the caller Wrap resolved: its
// tools/list shows exactly what it may call.
func (g *Gateway) GetServer(r *http.Request) *mcp.Server {
	pol := g.policy.Load()
	return g.serverFor(g.callerFor(pol, g.RequestPrincipal(r)))
}

// RequestPrincipal is the caller of an HTTP request as Wrap resolved it
// (for handlers that answer below the MCP server, task listens).
func (g *Gateway) RequestPrincipal(r *http.Request) caller.Principal {
	if p, ok := r.Context().Value(principalKey{}).(caller.Principal); ok {
		return p
	}
	return caller.Resolve(caller.Request{HTTP: true, Header: r.Header}, fixedTenants(g.policy.Load()))
}

// verified reads the caller Wrap put into the token info, if any.
func verified(ti *auth.TokenInfo) (id, tenant string) {
	if ti == nil || ti.Extra == nil {
		return "", ""
	}
	tenant, ok := ti.Extra[tokenInfoTenant].(string)
	if !ok || ti.UserID == "" {
		return "", ""
	}
	return ti.UserID, tenant
}

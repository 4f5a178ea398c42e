// Package caller decides who is calling a tool: a principal (the local
// stdio user, an authenticated HTTP caller or an anonymous HTTP caller) and
// the tenant scope whose data the call may touch. Every rule about callers
// and tenants is in this file; the MCP and HTTP layers only hand it what a
// request says (Resolve). The principal travels in the request context.
package caller

import (
	"context"
	"net/http"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// DefaultScope is the tenant of stdio and of HTTP calls without a tenant header.
const DefaultScope = "default"

// Caller ids of the principals without a token.
const (
	LocalID     = "local"
	AnonymousID = "anonymous"
)

// TenantHeaders are read in this order; the first non-blank one wins.
var TenantHeaders = []string{"X-Accords-Tenant-Id", "X-OpenClaw-Tenant-Id", "X-Tenant-Id"}

// Principal is the resolved identity of one tool call.
type Principal struct {
	// ID names the caller: "local" for stdio, the policy file's caller id for
	// an authenticated HTTP caller, "anonymous" otherwise. Never a token.
	ID string
	// Scope is the tenant whose sessions, handles and receipts are visible.
	Scope string
	// Transport is TransportStdio or TransportHTTP.
	Transport string
	// Authenticated is true when a bearer token was verified.
	Authenticated bool
	// Addr is the HTTP client's IP address ("" on stdio): anonymous
	// callers are rate limited by it as well as by tenant.
	Addr string
	// Session names the stdio client among several a daemon serves (the
	// attach session id, e.g. "c-3f9a..."); empty for a process serving
	// its own stdin and for HTTP.
	Session string
	// Grants are what the caller's OAuth access token carried (nil for
	// every other caller): the gateway maps them to capabilities under the
	// policy's [oauth] ceilings on each call, so a reload applies at once.
	Grants *Grants
}

// Grants are the scopes and groups of a verified OAuth access token.
type Grants struct {
	Scopes []string
	Groups []string
}

// Request is what one request says about its caller.
type Request struct {
	// HTTP is false on stdio.
	HTTP bool
	// Header carries the tenant headers of an HTTP request.
	Header http.Header
	// VerifiedID and VerifiedTenant name the caller whose bearer token the
	// HTTP layer verified (VerifiedID is empty otherwise); the tenant is
	// the one the policy binds it to.
	VerifiedID     string
	VerifiedTenant string
	// Grants are the verified caller's OAuth token grants (nil for a
	// static bearer token).
	Grants *Grants
	// Addr is the client's IP address.
	Addr string
}

// Fixed are the tenants a policy pins for the callers without a token (""
// leaves the default rule).
type Fixed struct {
	Stdio     string
	Anonymous string
}

// Resolve decides who is calling. Stdio is the local caller, in the tenant
// the policy fixes for it or the default one. A verified HTTP caller is
// itself, in its bound tenant (tenant headers cannot move it). Any other
// HTTP caller is anonymous, in the tenant the policy fixes, else the one
// its tenant header names, else the default one.
func Resolve(r Request, fixed Fixed) Principal {
	switch {
	case !r.HTTP:
		p := Local()
		if fixed.Stdio != "" {
			p.Scope = fixed.Stdio
		}
		return p
	case r.VerifiedID != "":
		return Principal{ID: r.VerifiedID, Scope: r.VerifiedTenant, Transport: TransportHTTP, Authenticated: true, Addr: r.Addr, Grants: r.Grants}
	}
	scope := fixed.Anonymous
	if scope == "" {
		scope = TenantFromHeader(r.Header)
	}
	if scope == "" {
		scope = DefaultScope
	}
	return Principal{ID: AnonymousID, Scope: scope, Transport: TransportHTTP, Addr: r.Addr}
}

// MaxTenantLen bounds a tenant name; tenants are database keys and appear
// in every receipt.
const MaxTenantLen = 128

// TenantCharset describes the characters a tenant header may use.
const TenantCharset = "letters, digits and . _ - : @"

func tenantChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("._-:@", c) >= 0
}

// CheckTenantHeaders refuses a tenant header that is too long or uses
// characters outside TenantCharset (every header present is checked, not
// only the one that wins). The error names the header.
func CheckTenantHeaders(h http.Header) *apperr.Error {
	for _, name := range TenantHeaders {
		vals := h.Values(name)
		if len(vals) > 1 {
			return apperr.Validation(name, "%s must be sent once", name).With("header", name)
		}
		if len(vals) == 0 {
			continue
		}
		v := strings.TrimSpace(vals[0])
		if v == "" {
			continue
		}
		if len(v) > MaxTenantLen {
			return apperr.Validation(name, "%s must be at most %d characters, got %d", name, MaxTenantLen, len(v)).
				With("header", name).With("max_length", MaxTenantLen)
		}
		for i := range len(v) {
			if !tenantChar(v[i]) {
				return apperr.Validation(name, "%s may only contain %s", name, TenantCharset).
					With("header", name).With("position", i)
			}
		}
	}
	return nil
}

// TenantFromHeader returns the tenant named by the request headers, or "".
func TenantFromHeader(h http.Header) string {
	for _, name := range TenantHeaders {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// Local is the principal of the stdio transport.
func Local() Principal {
	return Principal{ID: LocalID, Scope: DefaultScope, Transport: TransportStdio}
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal in ctx, or the local stdio principal.
func From(ctx context.Context) Principal {
	if p, ok := ctx.Value(ctxKey{}).(Principal); ok {
		return p
	}
	return Local()
}

type addrKey struct{}

// WithClientIP returns ctx carrying the IP address of the HTTP client of
// its request (the transport sets it; rate limits of anonymous callers
// read it).
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, addrKey{}, ip)
}

// ClientIP is the IP address WithClientIP put in ctx, or "" (stdio).
func ClientIP(ctx context.Context) string {
	s, _ := ctx.Value(addrKey{}).(string)
	return s
}

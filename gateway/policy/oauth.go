package policy

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/ratelimit"
)

// DefaultScopePrefix is the [oauth] scope_prefix when the file sets none.
const DefaultScopePrefix = "accords:"

// ReadOnlyScope, after the scope prefix, makes a token read-only.
const ReadOnlyScope = "read_only"

// OAuthSpec is the [oauth] table: HTTP callers may present access tokens
// of one OAuth 2.1 / OpenID issuer besides the static [[callers]] tokens.
type OAuthSpec struct {
	Issuer   string `toml:"issuer" json:"issuer"`
	Audience string `toml:"audience" json:"audience"`
	// CallerClaim names the claim holding the caller id (default "sub").
	CallerClaim string `toml:"caller_claim" json:"caller_claim"`
	// TenantClaim, when set, names the claim binding the token to a
	// tenant; a token without it is refused. Unset: the caller id is the
	// tenant, as for a static caller without a tenant.
	TenantClaim string `toml:"tenant_claim" json:"tenant_claim"`
	ScopePrefix string `toml:"scope_prefix" json:"scope_prefix"`
	// Capabilities are granted to every valid token.
	Capabilities []string `toml:"capabilities" json:"capabilities"`
	// MaxCapabilities is the ceiling of what a token may hold, whatever
	// its scopes and groups say; absent: every capability but the shared
	// ones (D24) and the elevated ones (receipts_emit), which an operator
	// grants by naming them here.
	MaxCapabilities []string `toml:"max_capabilities" json:"max_capabilities"`
	// GroupsClaim names a claim listing the caller's groups or roles;
	// Groups maps a group to the capabilities it grants.
	GroupsClaim string              `toml:"groups_claim" json:"groups_claim"`
	Groups      map[string][]string `toml:"groups" json:"groups"`
	// ReadOnly makes every OAuth caller read-only.
	ReadOnly bool `toml:"read_only" json:"read_only"`
	DefaultsSpec
}

// OAuth is the validated [oauth] table.
type OAuth struct {
	Issuer, Audience                      string
	CallerClaim, TenantClaim, GroupsClaim string
	ScopePrefix                           string
	ReadOnly                              bool
	baseline                              map[string]bool
	ceiling                               map[string]bool
	groups                                map[string][]string
	limit                                 ratelimit.Limit
	tools                                 map[string]ratelimit.Limit
}

// ScopesSupported are the scopes a token may carry, for the protected
// resource metadata: one per capability of the ceiling, the prefix with
// "*" for all of them, and the read-only scope.
func (o *OAuth) ScopesSupported() []string {
	out := []string{o.ScopePrefix + AllCapabilities}
	for _, c := range slices.Sorted(maps.Keys(o.ceiling)) {
		out = append(out, o.ScopePrefix+c)
	}
	return append(out, o.ScopePrefix+ReadOnlyScope)
}

// Scope is the scope that grants capability.
func (o *OAuth) Scope(capability string) string { return o.ScopePrefix + capability }

// Grantable reports whether a token's scope can grant capability (the
// ceiling allows it).
func (o *OAuth) Grantable(capability string) bool { return o.ceiling[capability] }

// Caller resolves the principal of a verified token: the baseline, the
// capabilities its scopes (scope prefix + name, or prefix + "*") and its
// groups grant, all within the ceiling; read-only when the operator or the
// token's read-only scope says so. An id or tenant that is not a valid
// caller id or tenant name is refused.
func (o *OAuth) Caller(id, tenant string, scopes, groups []string) (*Caller, error) {
	if !idPattern.Valid(id) {
		return nil, fmt.Errorf("the token's %s claim %q is not a valid caller id (%s)", o.CallerClaim, id, idPattern)
	}
	if id == LocalID || id == AnonymousID {
		return nil, fmt.Errorf("the token's %s claim %q is a reserved caller id", o.CallerClaim, id)
	}
	switch {
	case o.TenantClaim == "":
		tenant = id
	case tenant == "":
		return nil, fmt.Errorf("the token carries no %s claim, which binds it to a tenant", o.TenantClaim)
	case !idPattern.Valid(tenant):
		return nil, fmt.Errorf("the token's %s claim %q is not a valid tenant (%s)", o.TenantClaim, tenant, idPattern)
	}
	c := &Caller{ID: id, Tenant: tenant, ReadOnly: o.ReadOnly, caps: map[string]bool{}, limit: o.limit, tools: o.tools}
	grant := func(cp string) {
		if o.ceiling[cp] {
			c.caps[cp] = true
		}
	}
	for cp := range o.baseline {
		grant(cp)
	}
	for _, s := range scopes {
		name, ok := strings.CutPrefix(s, o.ScopePrefix)
		switch {
		case !ok:
		case name == AllCapabilities:
			for cp := range o.ceiling {
				grant(cp)
			}
		case name == ReadOnlyScope:
			c.ReadOnly = true
		default:
			grant(name)
		}
	}
	for _, g := range groups {
		for _, cp := range o.groups[g] {
			grant(cp)
		}
	}
	return c, nil
}

func (v validator) oauth(s *OAuthSpec, base ratelimit.Limit, defaultTools map[string]LimitSpec) (*OAuth, error) {
	if s == nil {
		return nil, nil
	}
	o := &OAuth{
		Issuer: strings.TrimSpace(s.Issuer), Audience: strings.TrimSpace(s.Audience),
		CallerClaim: strings.TrimSpace(s.CallerClaim), TenantClaim: strings.TrimSpace(s.TenantClaim),
		GroupsClaim: strings.TrimSpace(s.GroupsClaim), ScopePrefix: s.ScopePrefix, ReadOnly: s.ReadOnly,
	}
	if err := checkURL(o.Issuer); err != nil {
		return nil, fmt.Errorf("oauth.issuer: %w (the identity provider's issuer identifier, as in its discovery document)", err)
	}
	if err := checkURL(o.Audience); err != nil {
		return nil, fmt.Errorf("oauth.audience: %w (this server's MCP endpoint URL, which tokens must carry in aud)", err)
	}
	if o.CallerClaim == "" {
		o.CallerClaim = "sub"
	}
	if o.ScopePrefix == "" {
		o.ScopePrefix = DefaultScopePrefix
	}
	if strings.ContainsAny(o.ScopePrefix, " \t\"\\") {
		return nil, fmt.Errorf("oauth.scope_prefix: %q may not contain blanks, quotes or backslashes", o.ScopePrefix)
	}
	var err error
	if o.ceiling, err = v.capSet("oauth.max_capabilities", s.MaxCapabilities); err != nil {
		return nil, err
	}
	if s.MaxCapabilities == nil || slices.Contains(s.MaxCapabilities, AllCapabilities) {
		o.ceiling = map[string]bool{}
		for cp := range v.caps {
			if !v.shared[cp] && !v.elevated[cp] || slices.Contains(s.MaxCapabilities, cp) {
				o.ceiling[cp] = true
			}
		}
	}
	if o.baseline, err = v.capSet("oauth.capabilities", s.Capabilities); err != nil {
		return nil, err
	}
	if slices.Contains(s.Capabilities, AllCapabilities) {
		return nil, errors.New(`oauth.capabilities: "*" is not a baseline; grant every capability with the scope prefix followed by "*"`)
	}
	for cp := range o.baseline {
		if !o.ceiling[cp] {
			return nil, fmt.Errorf("oauth.capabilities: %q is outside oauth.max_capabilities", cp)
		}
	}
	if len(s.Groups) > 0 && o.GroupsClaim == "" {
		return nil, errors.New("oauth.groups_claim: required when oauth.groups maps groups to capabilities (the claim listing a caller's groups or roles)")
	}
	o.groups = map[string][]string{}
	for g, caps := range s.Groups {
		if _, err := v.capSet("oauth.groups."+g, caps); err != nil {
			return nil, err
		}
		if slices.Contains(caps, AllCapabilities) {
			o.groups[g] = slices.Collect(maps.Keys(o.ceiling))
		} else {
			o.groups[g] = caps
		}
	}
	c, err := v.principal("oauth", "oauth", PrincipalSpec{DefaultsSpec: s.DefaultsSpec}, base, defaultTools)
	if err != nil {
		return nil, err
	}
	o.limit, o.tools = c.limit, c.tools
	return o, nil
}

// capSet validates a capability list ("*" passes; the caller expands it).
func (v validator) capSet(where string, caps []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, cp := range caps {
		if cp == AllCapabilities {
			continue
		}
		if len(v.caps) > 0 && !v.caps[cp] {
			return nil, fmt.Errorf("%s: unknown capability %q (known: %s)", where, cp, strings.Join(slices.Sorted(maps.Keys(v.caps)), ", "))
		}
		out[cp] = true
	}
	return out, nil
}

// checkURL accepts an absolute https URL, or http on a loopback address
// (a provider started by tests), without query or fragment.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("required")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q must be an absolute URL without query, fragment or user info", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("%q must use https (http only on a loopback address)", raw)
}

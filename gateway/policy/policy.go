// Package policy loads the gateway policy file: who may call (HTTP bearer
// tokens stored as SHA-256 digests), for which tenant, with which
// capabilities and rate limits. It knows nothing of MCP.
package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/accordsai/accords-mcp/gateway/ratelimit"
	"github.com/accordsai/accords-mcp/gateway/rules"
	"github.com/accordsai/accords-mcp/platform/ident"
)

// Defaults for HTTP callers (the stdio caller is unlimited by default,
// except for the tools that start work in Vault).
const (
	DefaultCallsPerMinute = 60
	DefaultBurst          = 20
	// DefaultStdioExecuteCallsPerMinute and DefaultStdioExecuteBurst limit
	// the stdio caller's calls of each Known.Executing tool unless the
	// [stdio] table sets calls_per_minute or the tool's own entry, so a
	// looping agent cannot fill Vault with pending approvals.
	DefaultStdioExecuteCallsPerMinute = 20
	DefaultStdioExecuteBurst          = 10
	// AllCapabilities in a capabilities list grants every capability.
	AllCapabilities = "*"
	// Reserved principal ids.
	LocalID     = "local"
	AnonymousID = "anonymous"
)

// Known lists the names the file may refer to, so typos fail the load
// instead of silently granting or limiting nothing.
type Known struct {
	Capabilities []string
	Tools        []string
	// Shared are the capabilities whose tools change state every tenant
	// shares (D24): "*" and an absent list grant them to the stdio and
	// anonymous callers only; a [[callers]] entry holds one only when its
	// list names it.
	Shared []string
	// Executing are the tools that start work in Vault: the stdio caller's
	// default limit applies to them.
	Executing []string
	// Elevated are the capabilities "*" and an absent list grant to the
	// stdio caller only: anonymous and authenticated callers hold one
	// only when their list names it.
	Elevated []string
}

// Caller is one resolved principal of the policy: the stdio caller, the
// anonymous HTTP caller or an authenticated HTTP caller.
type Caller struct {
	ID string
	// Tenant is the scope the caller's calls are pinned to; "" lets the
	// anonymous HTTP caller choose it with a tenant header.
	Tenant string
	// ReadOnly removes every write tool for this caller.
	ReadOnly bool
	caps     map[string]bool // nil: every capability but the withheld ones
	// withheld are the shared capabilities "*" did not grant (Known.Shared).
	withheld map[string]bool
	limit    ratelimit.Limit
	tools    map[string]ratelimit.Limit
}

// Allows reports whether the caller holds capability.
func (c *Caller) Allows(capability string) bool {
	if c.caps == nil {
		return !c.withheld[capability]
	}
	return c.caps[capability]
}

// Withholds reports whether the caller lacks capability only because it is
// shared and "*" does not grant it to this caller: an operator grants it by
// naming it.
func (c *Caller) Withholds(capability string) bool {
	return c.caps == nil && c.withheld[capability]
}

// Capabilities returns the granted capabilities sorted, or ["*"] followed
// by "-name" for each withheld one.
func (c *Caller) Capabilities() []string {
	if c.caps == nil {
		out := []string{AllCapabilities}
		for _, w := range slices.Sorted(maps.Keys(c.withheld)) {
			out = append(out, "-"+w)
		}
		return out
	}
	return slices.Sorted(maps.Keys(c.caps))
}

// ViewKey identifies what the caller may see (capabilities and read-only),
// so callers with equal rights can share one filtered server.
func (c *Caller) ViewKey() string {
	k := strings.Join(c.Capabilities(), ",")
	if c.ReadOnly {
		k += "|ro"
	}
	return k
}

// LimitFor returns the rate limit of the caller for tool.
func (c *Caller) LimitFor(tool string) ratelimit.Limit {
	if l, ok := c.tools[tool]; ok {
		return l
	}
	return c.limit
}

// Policy is an immutable, validated policy. Reload builds a new one.
type Policy struct {
	Stdio     *Caller
	Anonymous *Caller
	callers   map[[sha256.Size]byte]*Caller
	byID      map[string]*Caller
	// Rules are the pre-execution rules ([[rules]]), compiled.
	Rules *rules.Set
	// Source is the file it came from ("" for the built-in default).
	Source string
	// Audit is the [audit] section: what receipts log besides digests.
	Audit Audit
}

// HasCallers reports whether HTTP requires bearer authentication.
func (p *Policy) HasCallers() bool { return len(p.callers) > 0 }

// Authenticate returns the caller whose token digest matches token.
func (p *Policy) Authenticate(token string) (*Caller, bool) {
	if token == "" {
		return nil, false
	}
	c, ok := p.callers[sha256.Sum256([]byte(token))]
	return c, ok
}

// Lookup finds a caller by id, including "local" and "anonymous".
func (p *Policy) Lookup(id string) (*Caller, bool) {
	switch id {
	case LocalID:
		return p.Stdio, true
	case AnonymousID:
		return p.Anonymous, true
	}
	c, ok := p.byID[id]
	return c, ok
}

// CallerIDs lists the authenticated callers' ids, sorted.
func (p *Policy) CallerIDs() []string {
	return slices.Sorted(maps.Keys(p.byID))
}

// Default is the policy without a file: stdio and anonymous HTTP hold every
// capability; HTTP is limited per tool by the HTTP defaults, stdio only in
// the Known.Executing tools.
func Default(known Known) *Policy {
	httpLimit := ratelimit.Limit{PerMinute: DefaultCallsPerMinute, Burst: DefaultBurst}
	stdio := &Caller{ID: LocalID, Tenant: "default", tools: map[string]ratelimit.Limit{}}
	for _, t := range known.Executing {
		stdio.tools[t] = ratelimit.Limit{PerMinute: DefaultStdioExecuteCallsPerMinute, Burst: DefaultStdioExecuteBurst}
	}
	anonymous := &Caller{ID: AnonymousID, limit: httpLimit}
	anonymous.withhold(set(known.Elevated), nil)
	return &Policy{
		Stdio:     stdio,
		Anonymous: anonymous,
		callers:   map[[sha256.Size]byte]*Caller{},
		byID:      map[string]*Caller{},
	}
}

// HashToken returns the hex SHA-256 digest to store as token_sha256.
func HashToken(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// LimitSpec is a rate limit as written in the file; absent keys inherit.
type LimitSpec struct {
	CallsPerMinute *float64 `toml:"calls_per_minute" json:"calls_per_minute"`
	Burst          *int     `toml:"burst" json:"burst"`
}

// DefaultsSpec is the [defaults] table (limits of every HTTP caller) and
// the limits of a principal.
type DefaultsSpec struct {
	LimitSpec
	Tools map[string]LimitSpec `toml:"tools" json:"tools"`
}

// PrincipalSpec is the [stdio] and [anonymous] tables.
type PrincipalSpec struct {
	Capabilities []string `toml:"capabilities" json:"capabilities"`
	ReadOnly     bool     `toml:"read_only" json:"read_only"`
	Tenant       string   `toml:"tenant" json:"tenant"`
	DefaultsSpec
}

// CallerSpec is one [[callers]] entry.
type CallerSpec struct {
	ID          string `toml:"id" json:"id"`
	TokenSHA256 string `toml:"token_sha256" json:"token_sha256"`
	PrincipalSpec
}

// File is the whole policy file.
type File struct {
	Version   int           `toml:"version" json:"version"`
	Defaults  DefaultsSpec  `toml:"defaults" json:"defaults"`
	Stdio     PrincipalSpec `toml:"stdio" json:"stdio"`
	Anonymous PrincipalSpec `toml:"anonymous" json:"anonymous"`
	Callers   []CallerSpec  `toml:"callers" json:"callers"`
	Rules     []rules.Spec  `toml:"rules" json:"rules"`
	Audit     Audit         `toml:"audit" json:"audit"`
}

// Load reads and validates the policy file at path; a .json extension
// selects JSON, anything else TOML.
func Load(path string, known Known) (*Policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	format := "toml"
	if strings.EqualFold(filepath.Ext(path), ".json") {
		format = "json"
	}
	p, err := Parse(raw, format, known)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	p.Source = path
	return p, nil
}

// Parse validates a policy document in format "toml" or "json".
func Parse(raw []byte, format string, known Known) (*Policy, error) {
	var f File
	switch format {
	case "json":
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
	case "toml":
		md, err := toml.Decode(string(raw), &f)
		if err != nil {
			return nil, fmt.Errorf("invalid TOML: %w", err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			return nil, fmt.Errorf("unknown keys: %s", strings.Join(keys, ", "))
		}
	default:
		return nil, fmt.Errorf("unknown policy format %q", format)
	}
	p, err := f.compile(known)
	if err != nil {
		return nil, err
	}
	if p.Rules, err = rules.Compile(f.Rules, known.Tools, ruleLines(raw, format)); err != nil {
		return nil, err
	}
	return p, nil
}

// ruleLines finds the line of each rule's deny_if (else of the rule) in
// the source, for error messages that point at the rule.
func ruleLines(raw []byte, format string) []int {
	if format == "json" {
		return jsonRuleLines(raw)
	}
	var out []int
	inRule := false
	for i, line := range strings.Split(string(raw), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "[[") && strings.TrimSpace(strings.Trim(t, "[]")) == "rules":
			out = append(out, i+1)
			inRule = true
		case strings.HasPrefix(t, "["):
			inRule = false
		case inRule && strings.HasPrefix(t, "deny_if") && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t, "deny_if")), "="):
			out[len(out)-1] = i + 1
		}
	}
	return out
}

// jsonRuleLines walks the tokens of a JSON policy for the objects of the
// top-level "rules" array and their "deny_if" keys.
func jsonRuleLines(raw []byte) []int {
	lineAt := func(off int64) int { return bytes.Count(raw[:min(int(off), len(raw))], []byte("\n")) + 1 }
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []int
	var stack []json.Delim // the open objects and arrays
	topKey := ""           // the current key of the top-level object
	keyNext := false       // in an object, the next token is a key
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		depth := len(stack)
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if d == '{' && depth == 2 && stack[1] == '[' && topKey == "rules" {
				out = append(out, lineAt(off))
			}
			stack, keyNext = append(stack, d), d == '{'
		case '}', ']':
			stack = stack[:depth-1]
			keyNext = depth > 1 && stack[depth-2] == '{'
		default:
			if keyNext {
				key, _ := tok.(string)
				if depth == 1 {
					topKey = key
				}
				if key == "deny_if" && depth == 3 && len(out) > 0 {
					out[len(out)-1] = lineAt(dec.InputOffset())
				}
			}
			keyNext = !keyNext && depth > 0 && stack[depth-1] == '{'
		}
	}
}

// idPattern is the shape of a caller id.
var idPattern = ident.New("A-Za-z0-9", "A-Za-z0-9._@:-", 128)

func (f *File) compile(known Known) (*Policy, error) {
	if f.Version != 0 && f.Version != 1 {
		return nil, fmt.Errorf("version: unsupported policy version %d (this binary reads version 1)", f.Version)
	}
	v := validator{caps: set(known.Capabilities), tools: set(known.Tools), shared: set(known.Shared), elevated: set(known.Elevated)}
	httpBase, err := v.limit("defaults", f.Defaults.LimitSpec, ratelimit.Limit{PerMinute: DefaultCallsPerMinute, Burst: DefaultBurst})
	if err != nil {
		return nil, err
	}
	defaultTools := map[string]LimitSpec{}
	for tool, spec := range f.Defaults.Tools {
		if err := v.tool("defaults.tools", tool); err != nil {
			return nil, err
		}
		defaultTools[tool] = spec
	}
	p := &Policy{callers: map[[sha256.Size]byte]*Caller{}, byID: map[string]*Caller{}, Audit: f.Audit}

	// stdio: unlimited unless its own table sets limits, but for the tools
	// that start work in Vault, which keep the built-in limit until the
	// table sets calls_per_minute (0 lifts it) or the tool's own entry.
	stdioTools := map[string]LimitSpec{}
	if f.Stdio.CallsPerMinute == nil {
		rate, burst := float64(DefaultStdioExecuteCallsPerMinute), DefaultStdioExecuteBurst
		for _, t := range known.Executing {
			stdioTools[t] = LimitSpec{CallsPerMinute: &rate, Burst: &burst}
		}
	}
	if p.Stdio, err = v.principal("stdio", LocalID, f.Stdio, ratelimit.Limit{Burst: DefaultBurst}, stdioTools); err != nil {
		return nil, err
	}
	if p.Stdio.Tenant == "" {
		p.Stdio.Tenant = "default"
	}
	p.Anonymous, err = v.principal("anonymous", AnonymousID, f.Anonymous, httpBase, defaultTools)
	if err != nil {
		return nil, err
	}
	p.Anonymous.withhold(v.elevated, f.Anonymous.Capabilities)
	for i, cs := range f.Callers {
		where := fmt.Sprintf("callers[%d]", i)
		if !idPattern.Valid(cs.ID) {
			return nil, fmt.Errorf("%s.id: %q must match %s", where, cs.ID, idPattern)
		}
		where = fmt.Sprintf("callers[%d] (%s)", i, cs.ID)
		if cs.ID == LocalID || cs.ID == AnonymousID {
			return nil, fmt.Errorf("%s.id: %q is reserved", where, cs.ID)
		}
		if _, dup := p.byID[cs.ID]; dup {
			return nil, fmt.Errorf("%s.id: duplicate caller id", where)
		}
		digest, err := parseDigest(cs.TokenSHA256)
		if err != nil {
			return nil, fmt.Errorf("%s.token_sha256: %w", where, err)
		}
		if _, dup := p.callers[digest]; dup {
			return nil, fmt.Errorf("%s.token_sha256: the same token digest is used by another caller", where)
		}
		if cs.Tenant == "" {
			cs.Tenant = cs.ID // separate callers never share data by accident
		}
		c, err := v.principal(where, cs.ID, cs.PrincipalSpec, httpBase, defaultTools)
		if err != nil {
			return nil, err
		}
		c.withhold(v.shared, cs.Capabilities)
		c.withhold(v.elevated, cs.Capabilities)
		p.callers[digest] = c
		p.byID[cs.ID] = c
	}
	return p, nil
}

type validator struct {
	caps, tools, shared, elevated map[string]bool
}

// withhold keeps the shared capabilities out of an authenticated caller's
// "*" (or absent list) unless the list names them.
func (c *Caller) withhold(shared map[string]bool, listed []string) {
	if c.caps != nil {
		return
	}
	for cp := range shared {
		if !slices.Contains(listed, cp) {
			if c.withheld == nil {
				c.withheld = map[string]bool{}
			}
			c.withheld[cp] = true
		}
	}
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (v validator) tool(where, name string) error {
	if len(v.tools) > 0 && !v.tools[name] {
		return fmt.Errorf("%s: unknown tool %q", where, name)
	}
	return nil
}

// principal resolves one caller. Limits: the caller's per-tool entry, then
// defaultTools (HTTP: the [defaults.tools] entries; stdio: the built-in
// limits of the tools that start work in Vault), then the caller's own
// limit, then the inherited base.
func (v validator) principal(where, id string, ps PrincipalSpec, base ratelimit.Limit, defaultTools map[string]LimitSpec) (*Caller, error) {
	c := &Caller{ID: id, ReadOnly: ps.ReadOnly, Tenant: strings.TrimSpace(ps.Tenant), tools: map[string]ratelimit.Limit{}}
	if ps.Tenant != "" && (c.Tenant == "" || len(c.Tenant) > 128) {
		return nil, fmt.Errorf("%s.tenant: must be 1 to 128 non-blank characters", where)
	}
	if caps := ps.Capabilities; caps != nil {
		c.caps = map[string]bool{}
		for _, cp := range caps {
			if cp == AllCapabilities {
				continue
			}
			if len(v.caps) > 0 && !v.caps[cp] {
				return nil, fmt.Errorf("%s.capabilities: unknown capability %q (known: %s)", where, cp, strings.Join(slices.Sorted(maps.Keys(v.caps)), ", "))
			}
			c.caps[cp] = true
		}
		if slices.Contains(caps, AllCapabilities) {
			c.caps = nil
		}
	}
	var err error
	if c.limit, err = v.limit(where, ps.LimitSpec, base); err != nil {
		return nil, err
	}
	for tool, spec := range defaultTools {
		if c.tools[tool], err = v.limit("defaults.tools."+tool, spec, c.limit); err != nil {
			return nil, err
		}
	}
	for tool, spec := range ps.Tools {
		if err := v.tool(where+".tools", tool); err != nil {
			return nil, err
		}
		inherit := c.limit
		if l, ok := c.tools[tool]; ok {
			inherit = l
		}
		if c.tools[tool], err = v.limit(where+".tools."+tool, spec, inherit); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (v validator) limit(where string, s LimitSpec, base ratelimit.Limit) (ratelimit.Limit, error) {
	l := base
	if s.CallsPerMinute != nil {
		if *s.CallsPerMinute < 0 {
			return l, fmt.Errorf("%s.calls_per_minute: must be >= 0 (0 means unlimited)", where)
		}
		l.PerMinute = *s.CallsPerMinute
	}
	if s.Burst != nil {
		if *s.Burst < 1 {
			return l, fmt.Errorf("%s.burst: must be >= 1", where)
		}
		l.Burst = *s.Burst
	}
	if l.Burst < 1 {
		l.Burst = DefaultBurst
	}
	return l, nil
}

func parseDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "sha256:")
	if s == "" {
		return d, errors.New("required: the hex SHA-256 of the bearer token (accords-mcp policy hash-token)")
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return d, errors.New("must be 64 hex characters (the SHA-256 of the token, never the token itself)")
	}
	copy(d[:], b)
	return d, nil
}

package vault

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
)

// DefaultPolicyHashTTL is how long a connector's policy_hash is trusted (D5).
const DefaultPolicyHashTTL = 10 * time.Minute

// Module-hash preflight reasons, reported as the preflight's reason.
const (
	ReasonAlreadyProvided = "module_hash already provided"
	ReasonMissingIDs      = "connector_id/verb missing"
	ReasonNotRequired     = "module_hash not required"
	ReasonGmailBounded    = "google_gmail_bounded"
	ReasonLegacyFields    = "legacy_secret_binding_fields"
)

// ModuleHashResult is the preflight object tools report (data.module_hash).
type ModuleHashResult struct {
	Applied     bool   `json:"applied"`
	Reason      string `json:"reason"`
	ConnectorID string `json:"connector_id,omitempty"`
	Verb        string `json:"verb,omitempty"`
	ModuleHash  string `json:"module_hash,omitempty"`
	// cached is true when the injected hash came from the cache, so a
	// rejection is worth one refetch.
	cached bool
}

// PolicyHashCache keeps connector policy hashes in the bbolt bucket
// policy_hash, per Vault endpoint and connector, with a TTL. A nil DB
// disables caching.
type PolicyHashCache struct {
	db  *store.DB
	ttl time.Duration
	now func() time.Time
}

type policyHashRecord struct {
	PolicyHash string    `json:"policy_hash"`
	FetchedAt  time.Time `json:"fetched_at"`
}

// NewPolicyHashCache returns a cache over db; ttl <= 0 means the default.
func NewPolicyHashCache(db *store.DB, ttl time.Duration) *PolicyHashCache {
	if ttl <= 0 {
		ttl = DefaultPolicyHashTTL
	}
	return &PolicyHashCache{db: db, ttl: ttl, now: time.Now}
}

// SetClock replaces the time source (tests).
func (c *PolicyHashCache) SetClock(now func() time.Time) { c.now = now }

func cacheKey(ep Target, connectorID string) []byte {
	// The hash belongs to a Vault instance, not to a token: key by where
	// requests go.
	return []byte(ep.Base + "\x00" + ep.Socket + "\x00" + connectorID)
}

// Get returns a fresh cached hash.
func (c *PolicyHashCache) Get(ep Target, connectorID string) (string, bool) {
	if c == nil || c.db == nil {
		return "", false
	}
	var rec policyHashRecord
	var found bool
	_ = c.db.View(func(tx store.Tx) error {
		var err error
		found, err = store.GetJSON(tx.Bucket(store.BucketPolicyHash), cacheKey(ep, connectorID), &rec)
		return err
	})
	if !found || rec.PolicyHash == "" || c.now().Sub(rec.FetchedAt) >= c.ttl || c.now().Before(rec.FetchedAt.Add(-time.Minute)) {
		return "", false
	}
	return rec.PolicyHash, true
}

// Put stores a non-empty hash.
func (c *PolicyHashCache) Put(ep Target, connectorID, hash string) {
	if c == nil || c.db == nil || hash == "" {
		return
	}
	_ = c.db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketPolicyHash)
		rec := policyHashRecord{PolicyHash: hash, FetchedAt: c.now().UTC()}
		if exp, ok := b.(kv.Expiring); ok {
			// etcd: a lease removes the entry once it expires, so the
			// keyspace holds no stale hashes; reads still check FetchedAt.
			raw, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			return exp.PutTTL(cacheKey(ep, connectorID), raw, int64(c.ttl/time.Second)+1)
		}
		return store.PutJSON(b, cacheKey(ep, connectorID), rec)
	})
}

// Invalidate drops a cached hash.
func (c *PolicyHashCache) Invalidate(ep Target, connectorID string) {
	if c == nil || c.db == nil {
		return
	}
	_ = c.db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketPolicyHash).Delete(cacheKey(ep, connectorID))
	})
}

// ModuleHash is the module-hash preflight of execute requests: when a
// request needs one, the connector's policy_hash (from E2, cached) is set as
// its top-level module_hash.
// It is safe for concurrent use.
type ModuleHash struct {
	client *Client
	cache  *PolicyHashCache
}

// NewModuleHash returns a preflight using client for the E2 lookup and
// cache for policy hashes (cache may be nil: no caching).
func NewModuleHash(client *Client, cache *PolicyHashCache) *ModuleHash {
	return &ModuleHash{client: client, cache: cache}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return strings.TrimSpace(s)
}

// GmailListVerb reports whether verb is a Gmail messages.list verb.
func GmailListVerb(verb string) bool {
	v := strings.ToLower(strings.TrimSpace(verb))
	return v == "google.gmail.messages.list" || v == "google.gmail.messages.list.v1"
}

// DefaultGmailQueryAST is the label:inbox AST injected for Gmail list verbs.
func DefaultGmailQueryAST() map[string]any {
	return map[string]any{"pred": map[string]any{"field": "label", "op": "eq", "value": map[string]any{"kind": "enum", "enum": "inbox"}}}
}

func validAST(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if p, ok := m["pred"].(map[string]any); ok && len(p) > 0 {
		return true
	}
	b, ok := m["bool"].(map[string]any)
	return ok && len(b) > 0
}

// moduleHashReason decides whether req needs a module hash: a Gmail verb of
// the google connector, or a payload naming token_secret_id or
// required_secret_ids. "" means not required.
func moduleHashReason(req map[string]any) string {
	connector := strings.ToLower(str(req, "connector_id"))
	verb := strings.ToLower(str(req, "verb"))
	if connector == "google" && strings.HasPrefix(verb, "google.gmail.") {
		return ReasonGmailBounded
	}
	payload, _ := req["request"].(map[string]any)
	if str(payload, "token_secret_id") != "" {
		return ReasonLegacyFields
	}
	if ids, ok := payload["required_secret_ids"].([]any); ok {
		for _, id := range ids {
			if s, ok := id.(string); ok && strings.TrimSpace(s) != "" {
				return ReasonLegacyFields
			}
		}
	}
	return ""
}

// Apply runs the preflight on an execute request, mutating req in place:
// the Gmail list default query_ast_v1 (always), then the top-level
// module_hash when the request needs one and has none. The hash comes from
// the policy-hash cache or GET /v0/connectors/{id}. A blank policy_hash is
// MCP_MODULE_HASH_REQUIRED; a failed lookup returns its normalized error.
func (m *ModuleHash) Apply(ctx context.Context, s Endpoint, req map[string]any) (ModuleHashResult, error) {
	if GmailListVerb(str(req, "verb")) && !validAST(req["query_ast_v1"]) {
		req["query_ast_v1"] = DefaultGmailQueryAST()
	}
	if str(req, "module_hash") != "" {
		return ModuleHashResult{Reason: ReasonAlreadyProvided}, nil
	}
	connector, verb := str(req, "connector_id"), str(req, "verb")
	if connector == "" || verb == "" {
		return ModuleHashResult{Reason: ReasonMissingIDs}, nil
	}
	reason := moduleHashReason(req)
	if reason == "" {
		return ModuleHashResult{Reason: ReasonNotRequired}, nil
	}
	hash, cached, err := m.lookup(ctx, s, connector, false)
	if err != nil {
		return ModuleHashResult{}, err
	}
	req["module_hash"] = hash
	return ModuleHashResult{Applied: true, Reason: reason, ConnectorID: connector, Verb: verb, ModuleHash: hash, cached: cached}, nil
}

func (m *ModuleHash) lookup(ctx context.Context, s Endpoint, connector string, refresh bool) (hash string, cached bool, err error) {
	ep, err := ResolveEndpoint(s)
	if err != nil {
		return "", false, err
	}
	if refresh {
		m.cache.Invalidate(ep, connector)
	} else if h, ok := m.cache.Get(ep, connector); ok {
		return h, true, nil
	}
	resp, err := m.client.GetConnector(ctx, s, connector)
	if err != nil {
		return "", false, err
	}
	hash = str(resp.Object(), "policy_hash")
	if hash == "" {
		e := apperr.New(apperr.CodeModuleHashRequired, "unable to derive module_hash: connector policy_hash missing")
		e.Details["connector_id"] = connector
		e.Details["request_id"] = resp.RequestID
		e.Details["vault_http_status"] = resp.Status
		return "", false, e
	}
	m.cache.Put(ep, connector, hash)
	return hash, false, nil
}

// Run applies the preflight and calls fn with the rewritten request. When
// fn fails because Vault rejected a module hash that came from the cache,
// the cached hash is invalidated, refetched once, re-injected, and fn is
// called again (D5). fn must be safe to repeat after a rejection (Vault
// rejects before acting).
func (m *ModuleHash) Run(ctx context.Context, s Endpoint, req map[string]any, fn func(ctx context.Context, req map[string]any) error) (ModuleHashResult, error) {
	res, err := m.Apply(ctx, s, req)
	if err != nil {
		return res, err
	}
	err = fn(ctx, req)
	if err == nil || !res.Applied || !res.cached || !IsModuleHashRejection(err) {
		return res, err
	}
	hash, _, lerr := m.lookup(ctx, s, res.ConnectorID, true)
	if lerr != nil {
		return res, lerr
	}
	req["module_hash"] = hash
	res.ModuleHash, res.cached = hash, false
	return res, fn(ctx, req)
}

// Invalidate drops the cached policy hash of connectorID for s's endpoint.
func (m *ModuleHash) Invalidate(s Endpoint, connectorID string) {
	if ep, err := ResolveEndpoint(s); err == nil {
		m.cache.Invalidate(ep, connectorID)
	}
}

// moduleHashCodes are the Vault codes that reject a module hash outright.
var moduleHashCodes = map[string]bool{
	"MODULE_HASH_MISMATCH": true, "MODULE_HASH_INVALID": true, "MODULE_HASH_REQUIRED": true,
	"POLICY_HASH_MISMATCH": true, "PLAN_POLICY_DRIFT": true,
}

// IsModuleHashRejection reports whether err is Vault rejecting the request's
// module hash: a module-hash code, or a validation error whose field errors
// point at /module_hash.
func IsModuleHashRejection(err error) bool {
	if err == nil {
		return false
	}
	if moduleHashCodes[strings.ToUpper(ErrorVaultCode(err))] {
		return true
	}
	errs, _ := ErrorVaultDetails(err)["errors"].([]any)
	for _, fe := range errs {
		if m, ok := fe.(map[string]any); ok && str(m, "path") == "/module_hash" {
			return true
		}
	}
	return false
}

// PlanModuleHashPreflight applies the plan-side defaults to plan in place (a
// missing request_base becomes {}, Gmail list steps get a default
// query_ast_base) and returns the plan preflight object. It never injects a
// module hash into plan steps.
func PlanModuleHashPreflight(plan map[string]any) map[string]any {
	steps, _ := plan["steps"].([]any)
	if len(steps) == 0 {
		return map[string]any{"applied_count": 0, "applied": []any{}}
	}
	for _, st := range steps {
		step, ok := st.(map[string]any)
		if !ok || str(step, "connector_id") == "" || str(step, "verb") == "" {
			continue
		}
		if _, ok := step["request_base"].(map[string]any); !ok {
			if _, present := step["request_base"]; !present {
				step["request_base"] = map[string]any{}
			}
		}
		if GmailListVerb(str(step, "verb")) && !validAST(step["query_ast_base"]) {
			step["query_ast_base"] = DefaultGmailQueryAST()
		}
	}
	return map[string]any{"note": "module_hash is not injected into plan step request payloads", "applied_count": 0, "applied": []any{}}
}

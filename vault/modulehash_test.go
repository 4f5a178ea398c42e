package vault

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

type hashServer struct {
	hash atomic.Value
	gets atomic.Int32
}

func newHashServer(t *testing.T, hash string) (*hashServer, *httptest.Server) {
	hs := &hashServer{}
	hs.hash.Store(hash)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if h := hs.hash.Load().(string); h != "" {
			_, _ = w.Write([]byte(`{"id":"google","policy_hash":" ` + h + ` "}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"google"}`))
	}))
	t.Cleanup(srv.Close)
	return hs, srv
}

func TestModuleHashDecisions(t *testing.T) {
	hs, srv := newHashServer(t, "ph_google")
	m := NewModuleHash(New(Options{}), NewPolicyHashCache(openStore(t), 0))
	ctx, s := context.Background(), sess(srv.URL)

	req := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "request": map[string]any{}}
	res, err := m.Apply(ctx, s, req)
	require.NoError(t, err)
	assert.Equal(t, ModuleHashResult{Applied: true, Reason: ReasonGmailBounded, ConnectorID: "google", Verb: "google.gmail.send.v1", ModuleHash: "ph_google"}, res)
	assert.Equal(t, "ph_google", req["module_hash"])
	assert.EqualValues(t, 1, hs.gets.Load())

	// Second call is served from the bbolt cache.
	req2 := map[string]any{"connector_id": "google", "verb": "google.gmail.drafts.send", "request": map[string]any{}}
	res, err = m.Apply(ctx, s, req2)
	require.NoError(t, err)
	assert.True(t, res.Applied)
	assert.EqualValues(t, 1, hs.gets.Load())

	// Already provided.
	req3 := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "module_hash": "pinned"}
	res, err = m.Apply(ctx, s, req3)
	require.NoError(t, err)
	assert.Equal(t, ModuleHashResult{Reason: ReasonAlreadyProvided}, res)
	assert.Equal(t, "pinned", req3["module_hash"])

	// Missing ids; not required.
	res, _ = m.Apply(ctx, s, map[string]any{"verb": "x"})
	assert.Equal(t, ReasonMissingIDs, res.Reason)
	plain := map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "request": map[string]any{"profile_id": "p"}}
	res, _ = m.Apply(ctx, s, plain)
	assert.Equal(t, ModuleHashResult{Reason: ReasonNotRequired}, res)
	assert.NotContains(t, plain, "module_hash")

	// Legacy fields.
	for _, payload := range []map[string]any{{"token_secret_id": "sec_1"}, {"required_secret_ids": []any{" ", "sec_2"}}} {
		r := map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "request": payload}
		res, err = m.Apply(ctx, s, r)
		require.NoError(t, err)
		assert.Equal(t, ReasonLegacyFields, res.Reason)
		assert.Equal(t, "ph_google", r["module_hash"])
	}
	r := map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "request": map[string]any{"required_secret_ids": []any{" ", 3}}}
	res, _ = m.Apply(ctx, s, r)
	assert.Equal(t, ReasonNotRequired, res.Reason)
}

func TestGmailListDefault(t *testing.T) {
	_, srv := newHashServer(t, "ph")
	m := NewModuleHash(New(Options{}), nil)
	req := map[string]any{"connector_id": "google", "verb": "Google.Gmail.Messages.List", "module_hash": "x"}
	_, err := m.Apply(context.Background(), sess(srv.URL), req)
	require.NoError(t, err)
	assert.Equal(t, DefaultGmailQueryAST(), req["query_ast_v1"])
	keep := map[string]any{"bool": map[string]any{"op": "or"}}
	req = map[string]any{"connector_id": "x", "verb": "google.gmail.messages.list.v1", "query_ast_v1": keep}
	_, _ = m.Apply(context.Background(), sess(srv.URL), req)
	assert.Equal(t, keep, req["query_ast_v1"])
	req = map[string]any{"verb": "google.gmail.messages.list", "query_ast_v1": map[string]any{"pred": map[string]any{}}}
	_, _ = m.Apply(context.Background(), sess(srv.URL), req)
	assert.Equal(t, DefaultGmailQueryAST(), req["query_ast_v1"])
}

func TestModuleHashMissingPolicyHash(t *testing.T) {
	_, srv := newHashServer(t, "")
	m := NewModuleHash(New(Options{}), NewPolicyHashCache(openStore(t), 0))
	req := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1"}
	_, err := m.Apply(context.Background(), sess(srv.URL), req)
	ae := apperr.As(err)
	require.Equal(t, apperr.CodeModuleHashRequired, ae.Code)
	assert.Equal(t, apperr.CatPolicy, ae.Category)
	assert.False(t, ae.Retryable)
	assert.Equal(t, "google", ae.Details["connector_id"])
	assert.Equal(t, 200, ae.Details["vault_http_status"])
	assert.Regexp(t, `^[0-9a-f]{32}$`, ae.Details["request_id"])
	assert.NotContains(t, req, "module_hash")
}

func TestPolicyHashTTLAndRefreshOnRejection(t *testing.T) {
	hs, srv := newHashServer(t, "ph_v1")
	cache := NewPolicyHashCache(openStore(t), time.Minute)
	now := time.Now()
	cache.SetClock(func() time.Time { return now })
	m := NewModuleHash(New(Options{}), cache)
	ctx, s := context.Background(), sess(srv.URL)
	newReq := func() map[string]any { return map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1"} }

	_, err := m.Apply(ctx, s, newReq())
	require.NoError(t, err)
	now = now.Add(59 * time.Second)
	_, _ = m.Apply(ctx, s, newReq())
	assert.EqualValues(t, 1, hs.gets.Load())
	now = now.Add(2 * time.Second) // past the TTL
	_, _ = m.Apply(ctx, s, newReq())
	assert.EqualValues(t, 2, hs.gets.Load())

	// Vault rotates its policy: the cached hash is rejected once, refetched,
	// and the call is repeated with the new hash.
	hs.hash.Store("ph_v2")
	var sent []string
	rejectOld := func(_ context.Context, req map[string]any) error {
		sent = append(sent, req["module_hash"].(string))
		if req["module_hash"] != "ph_v2" {
			return MapError(APIError{Status: 400, Code: "INVALID_ARGUMENT", Message: "bad", Details: map[string]any{"errors": []any{map[string]any{"path": "/module_hash", "code": "MODULE_HASH_MISMATCH"}}}})
		}
		return nil
	}
	res, err := m.Run(ctx, s, newReq(), rejectOld)
	require.NoError(t, err)
	assert.Equal(t, []string{"ph_v1", "ph_v2"}, sent)
	assert.Equal(t, "ph_v2", res.ModuleHash)
	assert.EqualValues(t, 3, hs.gets.Load())

	// A fresh hash that is rejected is not refetched again (no loop).
	hs.hash.Store("ph_v3")
	m.Invalidate(s, "google")
	sent = nil
	_, err = m.Run(ctx, s, newReq(), func(_ context.Context, req map[string]any) error {
		sent = append(sent, req["module_hash"].(string))
		return MapError(APIError{Status: 400, Code: "MODULE_HASH_MISMATCH"})
	})
	require.Error(t, err)
	assert.Equal(t, []string{"ph_v3"}, sent)

	// Other errors are not retried.
	sent = nil
	_, err = m.Run(ctx, s, newReq(), func(_ context.Context, req map[string]any) error {
		sent = append(sent, req["module_hash"].(string))
		return MapError(APIError{Status: 400, Code: "INVALID_ARGUMENT"})
	})
	require.Error(t, err)
	assert.Len(t, sent, 1)
}

func TestPlanModuleHashPreflight(t *testing.T) {
	plan := map[string]any{"steps": []any{
		map[string]any{"step_id": "a", "connector_id": "google", "verb": "google.gmail.messages.list"},
		map[string]any{"step_id": "b", "connector_id": "google", "verb": "google.gmail.send.v1", "request_base": map[string]any{"to": []any{"x"}}},
		"junk",
	}}
	out := PlanModuleHashPreflight(plan)
	assert.Equal(t, "module_hash is not injected into plan step request payloads", out["note"])
	a := plan["steps"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{}, a["request_base"])
	assert.Equal(t, DefaultGmailQueryAST(), a["query_ast_base"])
	b := plan["steps"].([]any)[1].(map[string]any)
	assert.NotContains(t, b["request_base"], "module_hash")
	assert.Equal(t, map[string]any{"applied_count": 0, "applied": []any{}}, PlanModuleHashPreflight(map[string]any{}))
}

package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openCatalog(t testing.TB) *catalog.Service {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "c.db"), store.Options{})
	require.NoError(t, err)
	cat, err := catalog.Open(context.Background(), db, filepath.Join(dir, "index"), catalog.Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		cat.Close()
		db.Close()
	})
	return cat
}

func upsertJSON(t testing.TB, cat *catalog.Service, raw string) {
	t.Helper()
	b, err := catalog.DecodeBundle([]byte(raw))
	require.NoError(t, err)
	_, err = cat.Upsert(context.Background(), b, catalog.UpsertOptions{Policy: "OVERWRITE"})
	require.NoError(t, err)
}

const calendarBundle = `{"type":"accords.cookbook.bundle.v1","cookbook_id":"google.calendar","version":"1.0.0","title":"Calendar",
 "entries":[{"entry_id":"calendar_recipe_events_list_v1","entry_type":"recipe.verb.v1","title":"List Calendar Events",
  "tags":["calendar","events","list"],"connector_id":"google","verb":"google.calendar.events.list","policy_version":"1","request":{"calendar_id":"primary"}}]}`

const partnerBundle = `{"type":"accords.cookbook.bundle.v1","cookbook_id":"partner.tools","version":"1.0.0","title":"Partner tools",
 "entries":[{"entry_id":"partner_tpl_sync_request_v1","entry_type":"template.verb.v1","title":"Partner Sync Request",
  "tags":["partner","sync"],"connector_id":"generic.http","verb":"generic.http.request.v1","policy_version":"1",
  "base_request":{"connector_id":"generic.http","verb":"generic.http.request.v1","request":{"method":"POST","url":"","headers":{"X-Api-Key":""}}},
  "bindings":[{"target_path":"/request/url","input_key":"url","required":true},
              {"target_path":"/request/headers/X-Api-Key","input_key":"api_key"},
              {"target_path":"/request/method","input_key":"method","required":true,"default":"POST"}]}]}`

// The fallback against the real catalog index (D7), examples 18, 19, 20, 31.
func TestSearchFallbackOverCatalogIndex(t *testing.T) {
	cat := openCatalog(t)
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		upsertJSON(t, cat, string(readFixture(t, "predecessor/cookbooks/google.workspace/"+v+".json")))
	}
	upsertJSON(t, cat, calendarBundle)
	upsertJSON(t, cat, partnerBundle)
	r := New(testReg(t), CatalogSearcher(cat))
	ctx := context.Background()

	// 31 (D7): 1.2.0 and 1.3.0 share the entry; only 1.3.0 is searched.
	res := r.Resolve(ctx, Request{Text: "untrash please", AllowSearch: true})
	assert.Equal(t, StatusMissingInputs, res.Status, res.Reasons)
	assert.Equal(t, "search:google.workspace:gmail_tpl_plan_untrash_message_v1", res.Route.RouteID)
	assert.Equal(t, "1.3.0", res.Route.Version)
	assert.Equal(t, []string{"message_id"}, res.MissingInputs)

	// 18
	res = r.Resolve(ctx, Request{Text: "list my calendar events", AllowSearch: true})
	assert.Equal(t, StatusExecutable, res.Status, res.Reasons)
	assert.Equal(t, "search:google.calendar:calendar_recipe_events_list_v1", res.Route.RouteID)
	assert.Equal(t, "google.calendar.events.list", res.Execution.Verb)

	// 19: required inputs come from the bundle's bindings (required and no
	// default; api_key is required by omission, method has a default).
	res = r.Resolve(ctx, Request{Text: "run the partner sync now", AllowSearch: true})
	assert.Equal(t, StatusMissingInputs, res.Status, res.Reasons)
	assert.Equal(t, []string{"api_key", "url"}, res.MissingInputs)
	assert.True(t, res.NeedsClarification)
	// 20
	res = r.Resolve(ctx, Request{Text: "run the partner sync now", AllowSearch: true,
		Facts: map[string]any{"url": "https://partner.example.com/sync", "api_key": "k"}})
	assert.Equal(t, StatusExecutable, res.Status)

	// A broken index is reported, not swallowed (D10).
	require.NoError(t, cat.Close())
	res = r.Resolve(ctx, Request{Text: "list my calendar events", AllowSearch: true})
	assert.Equal(t, StatusNotEligible, res.Status)
	require.Len(t, res.Reasons, 2)
	assert.Contains(t, res.Reasons[1], "search fallback failed:")
}

// bigCatalog seeds n single-entry bundles (each in two versions every
// tenth cookbook) in one transaction.
func bigCatalog(b testing.TB, n int) *catalog.Service {
	cat := openCatalog(b)
	var bundles []*catalog.Bundle
	for i := range n {
		raw, _ := json.Marshal(map[string]any{
			"type": "accords.cookbook.bundle.v1", "cookbook_id": fmt.Sprintf("vendor%05d.tools", i), "version": "1.0.0",
			"title": fmt.Sprintf("Vendor %d tools", i),
			"entries": []any{map[string]any{
				"entry_id": fmt.Sprintf("vendor%05d_recipe_sync_v1", i), "entry_type": "recipe.verb.v1",
				"title": fmt.Sprintf("Sync vendor %d records", i), "tags": []string{"sync", fmt.Sprintf("v%05d", i)},
				"connector_id": "generic.http", "verb": "generic.http.request.v1", "policy_version": "1",
				"request": map[string]any{"method": "GET", "url": fmt.Sprintf("https://v%d.example.com/sync", i)},
			}},
		})
		bd, err := catalog.DecodeBundle(raw)
		require.NoError(b, err)
		bundles = append(bundles, bd)
	}
	raw, _ := json.Marshal(map[string]any{"type": "accords.cookbook.bundle.v1", "cookbook_id": "acme.ledger", "version": "2.0.0",
		"title": "Acme ledger", "entries": []any{map[string]any{"entry_id": "ledger_recipe_reconcile_v1", "entry_type": "recipe.verb.v1",
			"title": "Reconcile ledger", "tags": []string{"ledger", "reconcile"}, "connector_id": "generic.http",
			"verb": "generic.http.request.v1", "policy_version": "1", "request": map[string]any{"method": "POST", "url": "https://acme.example/reconcile"}}}})
	bd, err := catalog.DecodeBundle(raw)
	require.NoError(b, err)
	bundles = append(bundles, bd)
	start := time.Now()
	_, err = cat.SeedBuiltins(context.Background(), bundles)
	require.NoError(b, err)
	b.Logf("seeded %d bundles in %s", len(bundles), time.Since(start))
	return cat
}

// BenchmarkResolveSearchFallback10k: a request no registry route matches,
// resolved through the bleve index of a 10,000-bundle catalog (target p50
// < 5 ms). Reports the median of per-call times as p50-ns.
func BenchmarkResolveSearchFallback10k(b *testing.B) {
	cat := bigCatalog(b, 10000)
	r := New(testReg(b), CatalogSearcher(cat))
	ctx := context.Background()
	req := Request{Text: "please reconcile the ledger", AllowSearch: true}
	res := r.Resolve(ctx, req)
	require.Equal(b, StatusExecutable, res.Status, res.Reasons)
	require.Equal(b, "search:acme.ledger:ledger_recipe_reconcile_v1", res.Route.RouteID)
	var times []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r.Resolve(ctx, req)
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// TestRequiredInputsReadsOneEntry: a template's required inputs without a
// default, none for a recipe, and none (an empty list, not null) for an entry
// the bundle does not hold; a missing cookbook is the catalog's error.
func TestRequiredInputsReadsOneEntry(t *testing.T) {
	cat := openCatalog(t)
	upsertJSON(t, cat, calendarBundle)
	upsertJSON(t, cat, partnerBundle)
	s := CatalogSearcher(cat).(InputsResolver)
	ctx := context.Background()
	for _, c := range []struct {
		hit  Hit
		want []string
	}{
		{Hit{CookbookID: "partner.tools", Version: "1.0.0", EntryID: "partner_tpl_sync_request_v1"}, []string{"api_key", "url"}},
		{Hit{CookbookID: "partner.tools", EntryID: "partner_tpl_sync_request_v1"}, []string{"api_key", "url"}},
		{Hit{CookbookID: "google.calendar", Version: "1.0.0", EntryID: "calendar_recipe_events_list_v1"}, []string{}},
		{Hit{CookbookID: "partner.tools", Version: "1.0.0", EntryID: "gone_v1"}, []string{}},
	} {
		got, err := s.RequiredInputs(ctx, c.hit)
		require.NoError(t, err, "%+v", c.hit)
		assert.Equal(t, c.want, got, "%+v", c.hit)
		assert.NotNil(t, got)
	}
	_, err := s.RequiredInputs(ctx, Hit{CookbookID: "no.such", EntryID: "x"})
	assert.Error(t, err)
}

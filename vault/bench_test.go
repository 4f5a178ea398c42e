package vault

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
)

// BenchmarkListConnectors measures one E1 round trip through the pooled
// client against the in-process simulator.
func BenchmarkListConnectors(b *testing.B) {
	srv, err := vaultsim.Start("", vaultsim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c, s, ctx := New(Options{}), Endpoint{BaseURL: srv.BaseURL(), Token: srv.AgentToken(), Timeout: 5 * time.Second}, context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ListConnectors(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModuleHashCached measures the preflight when the policy hash is
// served from the bbolt cache (no Vault call).
func BenchmarkModuleHashCached(b *testing.B) {
	srv, err := vaultsim.Start("", vaultsim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	db := openStoreB(b)
	m := NewModuleHash(New(Options{}), NewPolicyHashCache(db, 0))
	s, ctx := Endpoint{BaseURL: srv.BaseURL(), Token: srv.AgentToken(), Timeout: 5 * time.Second}, context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1"}
		if _, err := m.Apply(ctx, s, req); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(srv.RequestsTo("GET", "/v0/connectors/google")); n != 1 {
		b.Fatalf("expected one E2 lookup, got %d", n)
	}
}

func openStoreB(b *testing.B) *store.DB {
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

package catalog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

type env struct {
	t   testing.TB
	dir string
	db  *store.DB
	svc *Service
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) dbPath() string    { return filepath.Join(e.dir, "accords.db") }
func (e *env) indexPath() string { return e.dbPath() + ".index" }

func (e *env) open() {
	e.t.Helper()
	db, err := store.Open(e.dbPath(), store.Options{})
	require.NoError(e.t, err)
	svc, err := Open(context.Background(), db, e.indexPath(), Options{})
	require.NoError(e.t, err)
	e.db, e.svc = db, svc
}

func (e *env) close() {
	if e.svc != nil {
		require.NoError(e.t, e.svc.Close())
		e.svc = nil
	}
	if e.db != nil {
		require.NoError(e.t, e.db.Close())
		e.db = nil
	}
}

func (e *env) reopen() {
	e.close()
	e.open()
}

// sample builds a small valid bundle with n verb recipes.
func sample(id, version string, n int) *Bundle {
	b := &Bundle{Type: BundleType, CookbookID: id, Version: version, Title: "Cookbook " + id, Description: "Sample cookbook for tests", Tags: []string{"sample"}}
	for i := range n {
		b.Entries = append(b.Entries, Entry{
			EntryID: fmt.Sprintf("entry_%d", i), EntryType: TypeRecipeVerb, Title: fmt.Sprintf("Recipe number %d", i),
			Description: "Does a thing", Tags: []string{"t" + fmt.Sprint(i%3)},
			ConnectorID: "conn" + fmt.Sprint(i%2), Verb: fmt.Sprintf("conn.verb.%d", i), Request: map[string]any{"n": float64(i)},
		})
	}
	return b
}

func mustUpsert(t testing.TB, s *Service, b *Bundle, policy string) *UpsertResult {
	t.Helper()
	r, err := s.Upsert(context.Background(), b, UpsertOptions{Policy: policy})
	require.NoError(t, err)
	return r
}

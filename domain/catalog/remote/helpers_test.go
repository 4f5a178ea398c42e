package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

// faultCatalog wraps the real catalog and can fail the commit after the
// lock record was written, to prove both roll back together.
type faultCatalog struct {
	Catalog
	cat           *catalog.Service
	failAfterHook bool
}

func (f *faultCatalog) Commit(ctx context.Context, st *Staged, policy string, hook func(tx store.Tx, storedHash string) error) (*Committed, error) {
	return f.Catalog.Commit(ctx, st, policy, func(tx store.Tx, storedHash string) error {
		if err := hook(tx, storedHash); err != nil {
			return err
		}
		if f.failAfterHook {
			return errors.New("injected failure after the lock write")
		}
		return nil
	})
}

// stored maps id@version to content hash for every stored cookbook.
func (f *faultCatalog) stored(t *testing.T) map[string]string {
	t.Helper()
	items, err := f.cat.List(context.Background(), catalog.ListFilter{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, it := range items {
		out[it.CookbookID+"@"+it.Version] = it.ContentHash
	}
	return out
}

type env struct {
	db   *store.DB
	svc  *Service
	cat  *faultCatalog
	vars map[string]string
	mu   sync.Mutex
	now  time.Time
}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	cat, err := catalog.Open(context.Background(), db, filepath.Join(t.TempDir(), "index"), catalog.Options{})
	require.NoError(t, err)
	e := &env{db: db, cat: &faultCatalog{Catalog: FromCatalog(cat), cat: cat}, vars: map[string]string{}, now: time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)}
	opts := Options{
		Timeout: 5 * time.Second,
		// The variables the tests' BEARER_ENV sources name, as an operator
		// would list them.
		TokenEnvAllow: []string{"TEAM_TOKEN", "TOK"},
		Getenv: func(k string) string {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.vars[k]
		},
		Now: func() time.Time {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.now
		},
	}
	for _, m := range mod {
		m(&opts)
	}
	e.svc = New(db, e.cat, opts)
	t.Cleanup(func() {
		e.svc.Close()
		cat.Close()
		db.Close()
	})
	return e
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

func (e *env) setVar(k, v string) {
	e.mu.Lock()
	e.vars[k] = v
	e.mu.Unlock()
}

func (e *env) addSource(t *testing.T, in SourceInput) Source {
	t.Helper()
	src, _, err := e.svc.UpsertSource(in)
	require.NoError(t, err)
	return src
}

// remoteServer is an httptest remote with a mutable route table and a log
// of the Authorization headers it saw.
type remoteServer struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	seen   []seenReq
}

type seenReq struct {
	Path, Auth, IfNoneMatch string
}

func newRemote(t *testing.T) *remoteServer {
	t.Helper()
	r := &remoteServer{routes: map[string]http.HandlerFunc{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, seenReq{Path: req.URL.Path, Auth: req.Header.Get("Authorization"), IfNoneMatch: req.Header.Get("If-None-Match")})
		h := r.routes[req.URL.Path]
		r.mu.Unlock()
		if h == nil {
			http.NotFound(w, req)
			return
		}
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *remoteServer) handle(path string, h http.HandlerFunc) {
	r.mu.Lock()
	r.routes[path] = h
	r.mu.Unlock()
}

func (r *remoteServer) serveBytes(path string, body []byte, etag string) {
	r.handle(path, func(w http.ResponseWriter, req *http.Request) {
		if etag != "" {
			w.Header().Set("ETag", etag)
			if req.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

func (r *remoteServer) requests() []seenReq {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenReq(nil), r.seen...)
}

func (r *remoteServer) authOn(path string) []string {
	var out []string
	for _, s := range r.requests() {
		if s.Path == path {
			out = append(out, s.Auth)
		}
	}
	return out
}

func bundleJSON(id, version string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "accords.cookbook.bundle.v1", "cookbook_id": id, "version": version, "title": "T " + version,
		"entries": []any{map[string]any{"entry_id": "e1", "entry_type": "recipe.plan.v1", "plan": map[string]any{}}},
	})
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type item map[string]any

func indexJSON(items ...item) []byte {
	list := make([]any, 0, len(items))
	for _, it := range items {
		list = append(list, map[string]any(it))
	}
	b, _ := json.Marshal(map[string]any{"type": IndexType, "generated_at_unix_ms": 1764460800000, "items": list})
	return b
}

func requireCode(t *testing.T, err error, code string) *apperr.Error {
	t.Helper()
	require.Error(t, err)
	ae := apperr.As(err)
	require.Equal(t, code, ae.Code, "message: %s details: %v", ae.Message, ae.Details)
	return ae
}

func noSecret(t *testing.T, v any, secret string) {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	require.False(t, strings.Contains(string(raw), secret), "secret leaked in %s", raw)
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

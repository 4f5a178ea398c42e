package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// fakeCatalog stands in for the local catalog: it keeps raw bundles in the
// catalog bucket with the three conflict policies, so atomicity with the
// lock record can be checked without the real catalog package.
type fakeCatalog struct {
	db *store.DB
	// failAfterHook makes Commit fail after the hook ran (rollback test).
	failAfterHook bool
}

func (f *fakeCatalog) Stage(raw []byte) (*Staged, error) {
	var b struct {
		Type       string `json:"type"`
		CookbookID string `json:"cookbook_id"`
		Version    string `json:"version"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, apperr.New(apperr.CodeCatalogSchemaInvalid, "bundle must be valid json object")
	}
	if b.Type != "accords.cookbook.bundle.v1" {
		return nil, apperr.New(apperr.CodeCatalogSchemaInvalid, "bundle.type must be accords.cookbook.bundle.v1")
	}
	sum := sha256.Sum256(raw)
	return &Staged{CookbookID: b.CookbookID, Version: b.Version, ContentHash: "c" + hex.EncodeToString(sum[:8]), Bundle: raw}, nil
}

func (f *fakeCatalog) Commit(ctx context.Context, st *Staged, policy string, hook func(tx *bolt.Tx, storedHash string) error) (*Committed, error) {
	if policy == "" {
		policy = "FAIL"
	}
	out := &Committed{Policy: policy}
	err := f.db.Update(func(tx *bolt.Tx) error {
		cat := tx.Bucket(store.BucketCatalog)
		key := []byte(st.CookbookID + "@" + st.Version)
		stored := st.ContentHash
		if old := cat.Get(key); old != nil {
			var rec struct{ Hash string }
			_ = json.Unmarshal(old, &rec)
			if rec.Hash != st.ContentHash {
				switch policy {
				case "FAIL":
					return apperr.New(apperr.CodeCatalogConflict, "bundle already exists with different content")
				case "SKIP_IF_EXISTS":
					stored = rec.Hash
					out.Cookbook = map[string]any{"cookbook_id": st.CookbookID, "version": st.Version, "content_hash": rec.Hash}
					return hook(tx, stored)
				}
			} else {
				out.Cookbook = map[string]any{"cookbook_id": st.CookbookID, "version": st.Version, "content_hash": rec.Hash}
				return hook(tx, stored)
			}
		}
		if err := store.PutJSON(cat, key, map[string]any{"Hash": st.ContentHash, "Raw": string(st.Bundle.([]byte))}); err != nil {
			return err
		}
		out.Changed = true
		out.Cookbook = map[string]any{"cookbook_id": st.CookbookID, "version": st.Version, "content_hash": st.ContentHash}
		if err := hook(tx, stored); err != nil {
			return err
		}
		if f.failAfterHook {
			return fmt.Errorf("index update failed")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (f *fakeCatalog) stored(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, f.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketCatalog).ForEach(func(k, v []byte) error {
			var rec struct{ Hash string }
			_ = json.Unmarshal(v, &rec)
			out[string(k)] = rec.Hash
			return nil
		})
	}))
	return out
}

type env struct {
	db   *store.DB
	svc  *Service
	cat  *fakeCatalog
	vars map[string]string
	mu   sync.Mutex
	now  time.Time
}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	e := &env{db: db, cat: &fakeCatalog{db: db}, vars: map[string]string{}, now: time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)}
	opts := Options{
		Timeout: 5 * time.Second,
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

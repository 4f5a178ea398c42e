package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type remoteFixture struct {
	reg  *Registry
	svc  *remote.Service
	cat  *catalog.Service
	vars map[string]string
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	cat, err := catalog.Open(context.Background(), db, filepath.Join(t.TempDir(), "index"), catalog.Options{})
	require.NoError(t, err)
	f := &remoteFixture{vars: map[string]string{}, cat: cat}
	f.svc = remote.New(db, remote.FromCatalog(cat), remote.Options{Getenv: func(k string) string { return f.vars[k] }, TokenEnvAllow: []string{"TEAM_TOKEN"}})
	t.Cleanup(func() {
		f.svc.Close()
		cat.Close()
		db.Close()
	})
	f.reg, err = Select(Deps{Remote: f.svc}, InToolsets(ToolsetRemote))
	require.NoError(t, err)
	return f
}

// call invokes a tool the way the MCP adapter does and returns the envelope
// as a client decodes it, as generic JSON.
func (f *remoteFixture) call(t *testing.T, name string, args any) map[string]any {
	t.Helper()
	tool, ok := f.reg.Lookup(name)
	require.True(t, ok, name)
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	env, err := mcptest.Decode(Render(tool.Invoke(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: raw}}, nil)))
	require.NoError(t, err)
	return env.Raw
}

func okData(t *testing.T, env map[string]any) map[string]any {
	t.Helper()
	require.Equal(t, true, env["ok"], "error: %v", env["error"])
	return env["data"].(map[string]any)
}

func errOf(t *testing.T, env map[string]any) map[string]any {
	t.Helper()
	require.Equal(t, false, env["ok"])
	require.Nil(t, env["data"])
	return env["error"].(map[string]any)
}

func TestRemoteToolsSourcesLifecycle(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	for _, name := range []string{"vaultclaw_catalog_sources_list", "vaultclaw_catalog_source_upsert", "vaultclaw_catalog_source_delete", "vaultclaw_cookbooks_remote_list", "vaultclaw_cookbook_remote_install"} {
		_, ok := f.reg.Lookup(name)
		assert.True(t, ok, name)
	}

	d := okData(t, f.call(t, "vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{
		"source_id": "team", "index_url": "https://cat.example/index.json", "auth_mode": "BEARER_ENV", "auth_env_var": "TEAM_TOKEN"}}))
	assert.Equal(t, true, d["created"])
	src := d["source"].(map[string]any)
	assert.Equal(t, "team", src["source_id"])
	assert.Equal(t, true, src["enabled"])
	assert.Equal(t, "BEARER_ENV", src["auth_mode"])
	assert.Equal(t, false, src["require_sha256"])

	d = okData(t, f.call(t, "vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{
		"source_id": "team", "index_url": "https://cat.example/index.json", "enabled": false}}))
	assert.Equal(t, false, d["created"])
	assert.Equal(t, "NONE", d["source"].(map[string]any)["auth_mode"], "whole record replaced")

	d = okData(t, f.call(t, "vaultclaw_catalog_sources_list", nil))
	list := d["sources"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, false, list[0].(map[string]any)["enabled"])
	assert.NotEmpty(t, d["root_dir"])
	assert.EqualValues(t, 8<<20, d["limits"].(map[string]any)["max_index_bytes"])

	d = okData(t, f.call(t, "vaultclaw_catalog_source_delete", map[string]any{"source_id": "team"}))
	assert.Equal(t, map[string]any{"source_id": "team", "deleted": true}, d)
	d = okData(t, f.call(t, "vaultclaw_catalog_source_delete", map[string]any{"source_id": "team"}))
	assert.Equal(t, false, d["deleted"])
}

func TestRemoteToolsValidation(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	cases := []struct {
		tool  string
		args  map[string]any
		code  string
		field string
	}{
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "s", "index_url": "https://x/i", "auth_mode": "BASIC"}}, "MCP_VALIDATION_ERROR", "source.auth_mode"},
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"index_url": "https://x/i"}}, "MCP_VALIDATION_ERROR", "source.source_id"},
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "s", "index_url": "https://x/i", "enabled": "yes"}}, "MCP_VALIDATION_ERROR", "source.enabled"},
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "s", "index_url": "ftp://x/i"}}, "MCP_CATALOG_SCHEMA_INVALID", "source.index_url"},
		{"vaultclaw_catalog_source_upsert", map[string]any{}, "MCP_VALIDATION_ERROR", "source"},
		// A variable the operator did not allow (issue 37, finding 4).
		{"vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "s", "index_url": "https://x/i", "auth_mode": "BEARER_ENV", "auth_env_var": "GITHUB_TOKEN"}}, "MCP_VALIDATION_ERROR", "source.auth_env_var"},
		{"vaultclaw_catalog_source_delete", map[string]any{}, "MCP_VALIDATION_ERROR", "source_id"},
		{"vaultclaw_cookbooks_remote_list", map[string]any{}, "MCP_VALIDATION_ERROR", "source_id"},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "s"}, "MCP_VALIDATION_ERROR", "cookbook_id"},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "s", "cookbook_id": "c", "conflict_policy": "REPLACE"}, "MCP_VALIDATION_ERROR", "conflict_policy"},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "s", "cookbook_id": "c", "version": 1.2}, "MCP_VALIDATION_ERROR", "version"},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "missing", "cookbook_id": "c"}, "MCP_CATALOG_SOURCE_NOT_FOUND", ""},
		{"vaultclaw_cookbook_remote_install", map[string]any{"source_id": "s", "cookbook_id": "c", "expected_sha256": "zz"}, "MCP_VALIDATION_ERROR", "expected_sha256"},
		{"vaultclaw_cookbooks_remote_list", map[string]any{"source_id": "missing"}, "MCP_CATALOG_SOURCE_NOT_FOUND", ""},
	}
	for _, c := range cases {
		t.Run(c.tool+"/"+c.field, func(t *testing.T) {
			e := errOf(t, f.call(t, c.tool, c.args))
			assert.Equal(t, c.code, e["code"], "message %v", e["message"])
			if c.field != "" {
				assert.Equal(t, c.field, e["details"].(map[string]any)["field"])
			}
		})
	}
}

func TestRemoteToolsList(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	const token = "tok-abcdef-123456"
	f.vars["TEAM_TOKEN"] = token
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("ETag", `"x"`)
		if r.Header.Get("If-None-Match") == `"x"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(`{"type":"accords.cookbook.index.v1","items":[
			{"cookbook_id":"mail","version":"1.0.0","title":"Mail","download_url":"` + srvURL + `/m.json"},
			{"cookbook_id":"broken","version":"one","download_url":"` + srvURL + `/b.json"}]}`))
	}))
	srvURL = srv.URL
	okData(t, f.call(t, "vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{
		"source_id": "team", "index_url": srv.URL + "/index.json", "auth_mode": "BEARER_ENV", "auth_env_var": "TEAM_TOKEN"}}))

	d := okData(t, f.call(t, "vaultclaw_cookbooks_remote_list", map[string]any{"source_id": "team", "query": "MAIL"}))
	assert.Equal(t, "team", d["source_id"])
	assert.Equal(t, false, d["stale"])
	items := d["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "mail", items[0].(map[string]any)["cookbook_id"])
	bad := d["invalid_items"].([]any)
	require.Len(t, bad, 1)
	assert.Equal(t, "broken", bad[0].(map[string]any)["cookbook_id"])
	assert.Equal(t, "team", d["index"].(map[string]any)["source_id"])

	d = okData(t, f.call(t, "vaultclaw_cookbooks_remote_list", map[string]any{"source_id": "team"}))
	assert.Equal(t, true, d["not_modified"])

	srv.Close()
	env := f.call(t, "vaultclaw_cookbooks_remote_list", map[string]any{"source_id": "team"})
	d = okData(t, env)
	assert.Equal(t, true, d["stale"])
	assert.NotEmpty(t, d["cached_at"])

	d = okData(t, f.call(t, "vaultclaw_catalog_sources_list", nil))
	cache := d["sources"].([]any)[0].(map[string]any)["index_cache"].(map[string]any)
	assert.Equal(t, `"x"`, cache["etag"])

	raw, _ := json.Marshal(env)
	assert.False(t, strings.Contains(string(raw), token))
}

func TestRemoteToolsInstall(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	bundle := []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"hello","version":"1.0.0","title":"Hello",
		"entries":[{"entry_id":"greet","entry_type":"template.verb.v1","title":"Greet someone","base_request":{"text":""},
		"bindings":[{"target_path":"/text","input_key":"text"}]}]}`)
	sum := sha256.Sum256(bundle)
	digest := hex.EncodeToString(sum[:])
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.json":
			_, _ = w.Write([]byte(`{"type":"accords.cookbook.index.v1","items":[{"cookbook_id":"hello","version":"1.0.0","download_url":"` + srvURL + `/hello.json","sha256":"` + digest + `"}]}`))
		case "/hello.json":
			_, _ = w.Write(bundle)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	okData(t, f.call(t, "vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "ex", "index_url": srv.URL + "/index.json"}}))

	d := okData(t, f.call(t, "vaultclaw_cookbook_remote_install", map[string]any{"source_id": "ex", "cookbook_id": "hello", "version": "^1", "conflict_policy": " overwrite ", "expected_sha256": digest}))
	assert.Equal(t, "OVERWRITE", d["conflict_policy"])
	inst := d["install"].(map[string]any)
	assert.Equal(t, "ex", inst["source_id"])
	assert.Equal(t, "1.0.0", inst["selected"].(map[string]any)["version"])
	assert.Equal(t, map[string]any{"verified": true, "sha256": digest, "source": "expected_sha256+index"}, inst["integrity"])
	assert.Equal(t, true, inst["created_or_updated"])
	assert.Equal(t, "created", inst["outcome"])
	cb := inst["cookbook"].(map[string]any)
	assert.Equal(t, "hello", cb["cookbook_id"])
	assert.Equal(t, inst["content_hash"], cb["content_hash"])
	lock := inst["lock"].(map[string]any)
	assert.Equal(t, digest, lock["sha256"])
	assert.Equal(t, srv.URL+"/hello.json", lock["url"])
	assert.NotEmpty(t, lock["installed_at"])

	st, err := f.cat.Get(context.Background(), "hello", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, inst["content_hash"], st.Hash)

	e := errOf(t, f.call(t, "vaultclaw_cookbook_remote_install", map[string]any{"source_id": "ex", "cookbook_id": "hello", "version": "^2"}))
	assert.Equal(t, "MCP_CATALOG_NOT_FOUND", e["code"])
	assert.Equal(t, []any{"1.0.0"}, e["details"].(map[string]any)["available_versions"])
}

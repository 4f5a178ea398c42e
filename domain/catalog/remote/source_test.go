package remote

import (
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourceUpsertListDelete(t *testing.T) {
	e := newEnv(t)
	src, created, err := e.svc.UpsertSource(SourceInput{SourceID: "  team ", IndexURL: " https://cat.example/index.json ", AuthMode: "bearer_env", AuthEnvVar: "TEAM_TOKEN"})
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, "team", src.SourceID)
	assert.Equal(t, "https://cat.example/index.json", src.IndexURL)
	assert.True(t, src.Enabled, "enabled defaults to true")
	assert.Equal(t, AuthBearerEnv, src.AuthMode)
	assert.Equal(t, "TEAM_TOKEN", src.AuthEnvVar)
	assert.Equal(t, e.now, src.CreatedAt)

	e.advance(60e9)
	src2, created, err := e.svc.UpsertSource(SourceInput{SourceID: "team", IndexURL: "https://cat.example/index.json", Enabled: new(false), AuthMode: "NONE", AuthEnvVar: "IGNORED", RequireSHA256: new(true)})
	require.NoError(t, err)
	assert.False(t, created)
	assert.False(t, src2.Enabled)
	assert.Equal(t, AuthNone, src2.AuthMode)
	assert.Empty(t, src2.AuthEnvVar, "NONE clears auth_env_var")
	assert.True(t, src2.RequireSHA256)
	assert.Equal(t, src.CreatedAt, src2.CreatedAt)
	assert.True(t, src2.UpdatedAt.After(src.UpdatedAt))

	e.addSource(t, SourceInput{SourceID: "alpha", IndexURL: "http://localhost:1/i.json"})
	list, err := e.svc.Sources()
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "alpha", list[0].SourceID)
	assert.Equal(t, "team", list[1].SourceID)

	got, err := e.svc.Source("team")
	require.NoError(t, err)
	assert.Equal(t, src2, got)

	deleted, err := e.svc.DeleteSource("team")
	require.NoError(t, err)
	assert.True(t, deleted)
	deleted, err = e.svc.DeleteSource("team")
	require.NoError(t, err)
	assert.False(t, deleted)
	_, err = e.svc.Source("team")
	ae := requireCode(t, err, apperr.CodeCatalogSourceNotFound)
	assert.Equal(t, "catalog source not found", ae.Message)
	assert.Equal(t, "team", ae.Details["source_id"])
}

func TestSourceValidation(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TokenEnvAllow = []string{"TEAM_TOKEN", "OTHER"} })
	cases := []struct {
		name  string
		in    SourceInput
		code  string
		field string
	}{
		{"missing id", SourceInput{IndexURL: "https://x/i"}, apperr.CodeCatalogSchemaInvalid, "source.source_id"},
		{"bad id charset", SourceInput{SourceID: "a/b", IndexURL: "https://x/i"}, apperr.CodeValidation, "source.source_id"},
		{"ftp url", SourceInput{SourceID: "s", IndexURL: "ftp://x/i"}, apperr.CodeCatalogSchemaInvalid, "source.index_url"},
		{"file url", SourceInput{SourceID: "s", IndexURL: "file:///etc/passwd"}, apperr.CodeCatalogSchemaInvalid, "source.index_url"},
		{"no host", SourceInput{SourceID: "s", IndexURL: "https://"}, apperr.CodeCatalogSchemaInvalid, "source.index_url"},
		{"userinfo", SourceInput{SourceID: "s", IndexURL: "https://u:p@x/i"}, apperr.CodeValidation, "source.index_url"},
		{"unknown auth mode", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BASIC"}, apperr.CodeValidation, "source.auth_mode"},
		{"bearer without var", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BEARER_ENV"}, apperr.CodeCatalogSchemaInvalid, "source.auth_env_var"},
		{"bad var name", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BEARER_ENV", AuthEnvVar: "A-B"}, apperr.CodeValidation, "source.auth_env_var"},
		{"server secret", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BEARER_ENV", AuthEnvVar: "VC_AGENT_TOKEN"}, apperr.CodeValidation, "source.auth_env_var"},
		{"server key", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BEARER_ENV", AuthEnvVar: "ACCORDS_MCP_SECRET_KEY"}, apperr.CodeValidation, "source.auth_env_var"},
		{"not allowlisted", SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: "BEARER_ENV", AuthEnvVar: "HOME"}, apperr.CodeValidation, "source.auth_env_var"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := e.svc.UpsertSource(c.in)
			ae := requireCode(t, err, c.code)
			assert.Equal(t, c.field, ae.Details["field"])
		})
	}
	list, err := e.svc.Sources()
	require.NoError(t, err)
	assert.Empty(t, list, "nothing stored by rejected upserts")

	_, _, err = e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: "https://x/i", AuthMode: " Bearer_Env ", AuthEnvVar: "OTHER"})
	require.NoError(t, err, "auth_mode is trimmed and case-folded; allowlisted var accepted")
}

func TestSourceRepointDropsCache(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	r.serveBytes("/index.json", indexJSON(), `"v1"`)
	src := e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})
	_, err := e.svc.FetchIndex(t.Context(), src)
	require.NoError(t, err)
	c, err := e.svc.loadCache(src)
	require.NoError(t, err)
	require.NotNil(t, c)

	moved := e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/other.json"})
	c, err = e.svc.loadCache(moved)
	require.NoError(t, err)
	assert.Nil(t, c, "a cache belongs to the URL it came from")
	c, err = e.svc.loadCache(src)
	require.NoError(t, err)
	assert.Nil(t, c, "old copy removed, not just hidden")
}

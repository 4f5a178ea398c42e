package remote

import (
	"net/url"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBearerTokenNeverOverPlainHTTP: a BEARER_ENV source must use https,
// or plain http to this machine only; a source stored before the rule is
// refused at fetch time without a request.
func TestBearerTokenNeverOverPlainHTTP(t *testing.T) {
	e := newEnv(t)
	e.setVar("TEAM_TOKEN", secretToken)
	for _, raw := range []string{"http://catalog.example/index.json", "http://10.0.0.8:8080/i.json", "http://[2001:db8::1]/i.json"} {
		_, _, err := e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: raw, AuthMode: AuthBearerEnv, AuthEnvVar: "TEAM_TOKEN"})
		ae := requireCode(t, err, apperr.CodeValidation)
		assert.Equal(t, "source.index_url", ae.Details["field"], raw)
	}
	for _, raw := range []string{"https://catalog.example/index.json", "http://127.0.0.1:9/i.json", "http://localhost:9/i.json", "http://[::1]:9/i.json"} {
		_, _, err := e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: raw, AuthMode: AuthBearerEnv, AuthEnvVar: "TEAM_TOKEN"})
		require.NoError(t, err, raw)
	}

	r := newRemote(t)
	r.serveBytes("/index.json", indexJSON(), "")
	// Stored by an older version: plain http to a non-loopback name that
	// resolves here (the request must not even be tried).
	u, _ := url.Parse(r.URL)
	old := Source{SourceID: "old", IndexURL: "http://remote.invalid:" + u.Port() + "/index.json", Enabled: true, AuthMode: AuthBearerEnv,
		AuthEnvVar: "TEAM_TOKEN", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		b, err := nested(tx, bucketDefs)
		if err != nil {
			return err
		}
		return store.PutJSON(b, []byte(old.SourceID), old)
	}))
	_, err := e.svc.List(t.Context(), "old", "")
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Contains(t, ae.Message, "only sent over https")
	noSecret(t, ae, secretToken)
}

// TestDownloadHostsBoundWhereInstallsGo: by default a download_url must be
// on the index URL's origin; download_hosts widens that to listed hosts.
// Rejected items are reported, in the listing and by install.
func TestDownloadHostsBoundWhereInstallsGo(t *testing.T) {
	e := newEnv(t)
	home := newRemote(t)
	cdn := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	cdn.serveBytes("/cb.json", b, "")
	home.serveBytes("/index.json", indexJSON(
		item{"cookbook_id": "cb", "version": "1.0.0", "download_url": cdn.URL + "/cb.json", "sha256": sha(b)},
		item{"cookbook_id": "local", "version": "1.0.0", "download_url": "file:///etc/passwd"},
	), "")
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: home.URL + "/index.json"})

	l, err := e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)
	assert.Empty(t, l.Items)
	reasons := map[string]string{}
	for _, bad := range l.InvalidItems {
		reasons[bad.CookbookID] = bad.Reason
	}
	assert.Contains(t, reasons["cb"], "does not allow")
	assert.Contains(t, reasons["local"], "must be http(s)", "a file:// item is reported")

	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae := requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Contains(t, ae.Message, "rejected")
	assert.NotEmpty(t, ae.Details["rejected_items"])
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "local"})
	ae = requireCode(t, err, apperr.CodeCatalogNotFound)
	assert.Contains(t, ae.Message, "must be http(s)")
	assert.Empty(t, cdn.requests(), "nothing was downloaded from the other host")

	cu, _ := url.Parse(cdn.URL)
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: home.URL + "/index.json", DownloadHosts: []string{" " + cu.Host + " "}})
	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	require.NoError(t, err)
	assert.True(t, res.Integrity.Verified)
	// A host entry without a port allows any port of that host.
	e.addSource(t, SourceInput{SourceID: "s2", IndexURL: home.URL + "/index.json", DownloadHosts: []string{cu.Hostname()}})
	l, err = e.svc.List(t.Context(), "s2", "")
	require.NoError(t, err)
	assert.Len(t, l.Items, 1)
}

func TestDownloadHostsValidation(t *testing.T) {
	e := newEnv(t)
	for _, bad := range []string{"https://cdn.example", "cdn.example/path", "user@cdn.example", "cdn.example:99999x"} {
		_, _, err := e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: "https://x.example/i.json", DownloadHosts: []string{"ok.example", bad}})
		ae := requireCode(t, err, apperr.CodeValidation)
		assert.Equal(t, "source.download_hosts[1]", ae.Details["field"], bad)
	}
	src, _, err := e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: "https://x.example/i.json", DownloadHosts: []string{"CDN.example", "cdn.example", "", "[::1]:8443"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"cdn.example", "[::1]:8443"}, src.DownloadHosts)
}

// TestBearerEnvNamesAreOptIn is the attack of issue 37, finding 4: whoever
// may register a source chooses where its token goes, so naming any
// variable of the server's environment (GITHUB_TOKEN) would ship it to
// that host. A source may name only a variable the operator allowed; with
// no allow-list, none. A source stored before the rule (or before the
// allow-list changed) is refused at fetch time, without a request.
func TestBearerEnvNamesAreOptIn(t *testing.T) {
	const ghToken = "ghp_launchers0wnTokenNeverLeaves"
	r := newRemote(t)
	r.serveBytes("/index.json", indexJSON(), "")
	for name, allow := range map[string][]string{"no allow-list": nil, "another variable allowed": {"TEAM_TOKEN"}} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.TokenEnvAllow = allow })
			e.setVar("GITHUB_TOKEN", ghToken)
			_, _, err := e.svc.UpsertSource(SourceInput{SourceID: "evil", IndexURL: r.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "GITHUB_TOKEN"})
			ae := requireCode(t, err, apperr.CodeValidation)
			assert.Equal(t, "source.auth_env_var", ae.Details["field"])
			assert.Contains(t, ae.Message, "GITHUB_TOKEN")
			assert.Contains(t, ae.Message, "ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW", "the message says how an operator allows one")
			list, err := e.svc.Sources()
			require.NoError(t, err)
			assert.Empty(t, list, "nothing stored")

			// Stored directly, as an older version would have.
			old := Source{SourceID: "old", IndexURL: r.URL + "/index.json", Enabled: true, AuthMode: AuthBearerEnv,
				AuthEnvVar: "GITHUB_TOKEN", CreatedAt: time.Now(), UpdatedAt: time.Now()}
			require.NoError(t, e.db.Update(func(tx store.Tx) error {
				b, err := nested(tx, bucketDefs)
				if err != nil {
					return err
				}
				return store.PutJSON(b, []byte(old.SourceID), old)
			}))
			before := len(r.requests())
			_, err = e.svc.List(t.Context(), "old", "")
			ae = requireCode(t, err, apperr.CodeRemoteFetchFailed)
			assert.Equal(t, "GITHUB_TOKEN", ae.Details["auth_env_var"])
			assert.Len(t, r.requests(), before, "no request is made")
			_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "old", CookbookID: "cb"})
			requireCode(t, err, apperr.CodeRemoteFetchFailed)
			noSecret(t, ae, ghToken)
		})
	}
	for _, s := range r.requests() {
		assert.NotContains(t, s.Auth, ghToken, "the token never left")
	}

	// The operator's opt-in: a listed variable is accepted and sent.
	e := newEnv(t, func(o *Options) { o.TokenEnvAllow = []string{"GITHUB_TOKEN"} })
	e.setVar("GITHUB_TOKEN", ghToken)
	e.addSource(t, SourceInput{SourceID: "gh", IndexURL: r.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "GITHUB_TOKEN"})
	_, err := e.svc.List(t.Context(), "gh", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"Bearer " + ghToken}, r.authOn("/index.json")[len(r.authOn("/index.json"))-1:])

	// The server's own variables stay refused even when listed.
	e = newEnv(t, func(o *Options) { o.TokenEnvAllow = []string{"VC_AGENT_TOKEN"} })
	_, _, err = e.svc.UpsertSource(SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "VC_AGENT_TOKEN"})
	ae := requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "source.auth_env_var", ae.Details["field"])
}

package remote

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secretToken = "s3cr3t-token-value-0123456789"

// publish serves an index listing the given bundles (id@version -> bytes)
// on r, each bundle at /b/<id>-<version>.json with its sha256.
func publish(r *remoteServer, withSHA bool, bundles map[string][]byte) {
	var items []item
	for key, body := range bundles {
		id, v, _ := strings.Cut(key, "@")
		path := "/b/" + id + "-" + v + ".json"
		r.serveBytes(path, body, "")
		it := item{"cookbook_id": id, "version": v, "download_url": r.URL + path, "title": "T"}
		if withSHA {
			it["sha256"] = sha(body)
		}
		items = append(items, it)
	}
	r.serveBytes("/index.json", indexJSON(items...), "")
}

func TestInstallGood(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	b := bundleJSON("cb", "1.2.0")
	publish(r, true, map[string][]byte{"cb@1.2.0": b, "cb@1.1.0": bundleJSON("cb", "1.1.0")})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})

	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ExpectedSHA256: strings.ToUpper(sha(b))})
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", res.Selected.Version, "latest release chosen")
	assert.True(t, res.Changed)
	assert.Equal(t, Integrity{Verified: true, SHA256: sha(b), Source: IntegrityBoth}, res.Integrity)
	assert.False(t, res.IndexStale)
	require.NotNil(t, res.Lock)
	assert.Equal(t, LockRecord{SourceID: "s", CookbookID: "cb", Version: "1.2.0", URL: r.URL + "/b/cb-1.2.0.json", SHA256: sha(b),
		ContentHash: res.ContentHash, Verified: true, IntegritySource: IntegrityBoth, InstalledAt: e.now}, *res.Lock)

	stored := e.cat.stored(t)
	assert.Equal(t, map[string]string{"cb@1.2.0": res.ContentHash}, stored)
	hits, err := e.cat.cat.Search(t.Context(), index.Query{CookbookID: "cb"})
	require.NoError(t, err)
	require.Len(t, hits.Items, 1, "the search index follows the install")
	assert.Equal(t, "1.2.0", hits.Items[0].Version)
	lock, err := e.svc.Lock("cb", "1.2.0")
	require.NoError(t, err)
	assert.Equal(t, res.Lock, lock)

	// Unverified install from an index without digests is allowed and says so.
	res, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", Version: "1.1.0"})
	require.NoError(t, err)
	assert.Equal(t, Integrity{Verified: true, SHA256: sha(bundleJSON("cb", "1.1.0")), Source: IntegrityIndex}, res.Integrity)

	r2 := newRemote(t)
	publish(r2, false, map[string][]byte{"cb@2.0.0": bundleJSON("cb", "2.0.0")})
	e.addSource(t, SourceInput{SourceID: "nosum", IndexURL: r2.URL + "/index.json"})
	res, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "nosum", CookbookID: "cb"})
	require.NoError(t, err)
	assert.Equal(t, Integrity{Verified: false, SHA256: sha(bundleJSON("cb", "2.0.0")), Source: IntegrityNone}, res.Integrity)
	assert.False(t, res.Lock.Verified)
}

func TestInstallChecksumMismatchStoresNothing(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	publish(r, true, map[string][]byte{"cb@1.0.0": b})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})

	// The caller's digest disagrees with the index: refused before download.
	wrong := strings.Repeat("0", 64)
	_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ExpectedSHA256: wrong})
	ae := requireCode(t, err, apperr.CodeRemoteChecksumMismatch)
	assert.Equal(t, wrong, ae.Details["expected_sha256"])
	assert.Equal(t, sha(b), ae.Details["index_sha256"])
	assert.Empty(t, r.authOn("/b/cb-1.0.0.json"), "no download when the digests disagree")

	// The server's bytes differ from the index digest.
	r.serveBytes("/b/cb-1.0.0.json", append(bytes.Clone(b), ' '), "")
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae = requireCode(t, err, apperr.CodeRemoteChecksumMismatch)
	assert.Equal(t, "remote cookbook checksum mismatch", ae.Message)
	assert.Equal(t, IntegrityIndex, ae.Details["checked_against"])
	assert.Equal(t, sha(append(bytes.Clone(b), ' ')), ae.Details["actual_sha256"])
	assert.False(t, ae.Retryable)

	// Caller digest alone, index silent, bytes differ.
	r2 := newRemote(t)
	publish(r2, false, map[string][]byte{"cb@1.0.0": b})
	e.addSource(t, SourceInput{SourceID: "s2", IndexURL: r2.URL + "/index.json"})
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s2", CookbookID: "cb", ExpectedSHA256: wrong})
	ae = requireCode(t, err, apperr.CodeRemoteChecksumMismatch)
	assert.Equal(t, IntegrityExpected, ae.Details["checked_against"])

	// Malformed digest is a validation error.
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s2", CookbookID: "cb", ExpectedSHA256: "bad"})
	ae = requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "expected_sha256", ae.Details["field"])

	assert.Empty(t, e.cat.stored(t))
	lock, err := e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Nil(t, lock)
}

func TestRequireSHA256RefusesUnverified(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	publish(r, false, map[string][]byte{"cb@1.0.0": b})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json", RequireSHA256: new(true)})

	_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae := requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "expected_sha256", ae.Details["field"])
	assert.Equal(t, true, ae.Details["require_sha256"])
	assert.Empty(t, e.cat.stored(t))
	assert.Empty(t, r.authOn("/b/cb-1.0.0.json"), "refused before download")

	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ExpectedSHA256: sha(b)})
	require.NoError(t, err)
	assert.Equal(t, IntegrityExpected, res.Integrity.Source)
	assert.True(t, res.Integrity.Verified)
}

func TestOversizeIndexRefused(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxIndexBytes = 1024 })
	r := newRemote(t)
	big := indexJSON(item{"cookbook_id": "cb", "version": "1.0.0", "download_url": r.URL + "/b", "summary": strings.Repeat("x", 2000)})
	r.serveBytes("/declared.json", big, "")
	// Chunked, without Content-Length: the cap applies while reading.
	r.handle("/chunked.json", func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i < len(big); i += 100 {
			_, _ = w.Write(big[i:min(i+100, len(big))])
			w.(http.Flusher).Flush()
		}
	})
	// Compressed on the wire, over the cap once decoded: the cap counts
	// decoded bytes, so a small gzip body cannot smuggle a large index.
	r.handle("/gzip.json", func(w http.ResponseWriter, req *http.Request) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(big)
		_ = zw.Close()
		require.Less(t, buf.Len(), 1024)
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(buf.Bytes())
	})
	for _, path := range []string{"/declared.json", "/chunked.json", "/gzip.json"} {
		t.Run(path, func(t *testing.T) {
			src := e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + path})
			_, err := e.svc.List(t.Context(), "s", "")
			ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
			assert.Equal(t, "remote index exceeds the size limit of 1024 bytes", ae.Message)
			assert.EqualValues(t, 1024, ae.Details["limit_bytes"])
			assert.False(t, ae.Retryable)
			c, err := e.svc.loadCache(src)
			require.NoError(t, err)
			assert.Nil(t, c, "an oversize index is not cached")
			_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
			requireCode(t, err, apperr.CodeRemoteFetchFailed)
			assert.Empty(t, e.cat.stored(t))
		})
	}
}

func TestOversizeBundleRefused(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxBundleBytes = 256 })
	r := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	padded := append(bytes.Clone(b[:len(b)-1]), []byte(`,"pad":"`+strings.Repeat("p", 400)+`"}`)...)
	publish(r, true, map[string][]byte{"cb@1.0.0": padded})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})
	_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "remote bundle exceeds the size limit of 256 bytes", ae.Message)
	assert.Equal(t, "s", ae.Details["source_id"])
	assert.Empty(t, e.cat.stored(t))
	lock, err := e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Nil(t, lock)
}

func TestBearerTokenStaysOnItsOrigin(t *testing.T) {
	e := newEnv(t)
	e.setVar("TEAM_TOKEN", "  "+secretToken+"  ")
	home := newRemote(t)
	cdn := newRemote(t)
	local := bundleJSON("cb", "1.0.0")
	foreign := bundleJSON("cb", "2.0.0")
	home.serveBytes("/b/cb-1.0.0.json", local, "")
	cdn.serveBytes("/cb-2.0.0.json", foreign, "")
	home.serveBytes("/index.json", indexJSON(
		item{"cookbook_id": "cb", "version": "1.0.0", "download_url": home.URL + "/b/cb-1.0.0.json", "sha256": sha(local)},
		item{"cookbook_id": "cb", "version": "2.0.0", "download_url": cdn.URL + "/cb-2.0.0.json", "sha256": sha(foreign)},
	), "")
	hostOf := func(raw string) string { u, _ := url.Parse(raw); return u.Host }
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: home.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "TEAM_TOKEN",
		DownloadHosts: []string{hostOf(home.URL), hostOf(cdn.URL)}})

	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", Version: "2.0.0"})
	require.NoError(t, err)
	noSecret(t, res, secretToken)
	res, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", Version: "1.0.0"})
	require.NoError(t, err)
	noSecret(t, res, secretToken)

	assert.Equal(t, []string{"Bearer " + secretToken, "Bearer " + secretToken}, home.authOn("/index.json"))
	assert.Equal(t, []string{"Bearer " + secretToken}, home.authOn("/b/cb-1.0.0.json"), "same origin download carries the token")
	for _, s := range cdn.requests() {
		assert.Empty(t, s.Auth, "the other host never receives the token (%s)", s.Path)
	}
	require.Len(t, cdn.requests(), 1)

	sources, err := e.svc.Sources()
	require.NoError(t, err)
	noSecret(t, sources, secretToken)

	// The token is read at request time: once unset, fetches stop.
	e.setVar("TEAM_TOKEN", "")
	_, err = e.svc.List(t.Context(), "s", "")
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "bearer env var for source is empty", ae.Message)
	assert.Equal(t, "TEAM_TOKEN", ae.Details["auth_env_var"])
}

func TestRedirectsWithToken(t *testing.T) {
	e := newEnv(t)
	e.setVar("TEAM_TOKEN", secretToken)
	home := newRemote(t)
	other := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	other.serveBytes("/index.json", indexJSON(item{"cookbook_id": "cb", "version": "1.0.0", "download_url": home.URL + "/b.json"}), "")
	other.serveBytes("/b.json", b, "")
	home.serveBytes("/real-index.json", indexJSON(item{"cookbook_id": "cb", "version": "1.0.0", "download_url": home.URL + "/b.json"}), "")
	home.handle("/index.json", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/real-index.json", http.StatusFound)
	})
	home.handle("/away.json", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, other.URL+"/index.json", http.StatusFound)
	})
	home.handle("/b.json", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, other.URL+"/b.json", http.StatusTemporaryRedirect)
	})

	// Same-origin redirect keeps working with the token.
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: home.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "TEAM_TOKEN"})
	l, err := e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)
	assert.Len(t, l.Items, 1)
	assert.Equal(t, []string{"Bearer " + secretToken}, home.authOn("/real-index.json"))

	// Index redirected to another origin while a token is attached: refused.
	e.addSource(t, SourceInput{SourceID: "away", IndexURL: home.URL + "/away.json", AuthMode: AuthBearerEnv, AuthEnvVar: "TEAM_TOKEN"})
	_, err = e.svc.List(t.Context(), "away", "")
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "remote redirect to another origin refused: a bearer token is attached", ae.Message)
	assert.Equal(t, origin(mustURL(t, other.URL)), ae.Details["redirect_origin"])
	assert.False(t, ae.Retryable)

	// Bundle on the token's origin redirecting away: refused, nothing stored.
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae = requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Contains(t, ae.Message, "redirect to another origin refused")
	assert.Empty(t, other.requests(), "the other origin was never contacted")
	assert.Empty(t, e.cat.stored(t))

	// Without a token, a cross-origin redirect is an ordinary redirect.
	e.addSource(t, SourceInput{SourceID: "open", IndexURL: home.URL + "/away.json"})
	l, err = e.svc.List(t.Context(), "open", "")
	require.NoError(t, err)
	assert.Len(t, l.Items, 1)
	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "open", CookbookID: "cb"})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	for _, s := range other.requests() {
		assert.Empty(t, s.Auth)
	}
}

func TestListConditionalAndOffline(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	r.serveBytes("/index.json", indexJSON(
		item{"cookbook_id": "cb", "version": "1.0.0", "download_url": r.URL + "/b", "title": "Mail"},
		item{"cookbook_id": "wx", "version": "1.0.0", "download_url": r.URL + "/w", "title": "Weather"},
	), `"etag-1"`)
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})

	first, err := e.svc.List(t.Context(), "s", "mail")
	require.NoError(t, err)
	assert.False(t, first.Stale)
	assert.False(t, first.NotModified)
	assert.Equal(t, e.now, first.FetchedAt)
	require.Len(t, first.Items, 1)
	assert.Len(t, first.Index.Items, 2, "the index is complete, items filtered")
	fetched := e.now

	e.advance(time.Minute)
	second, err := e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)
	reqs := r.requests()
	require.Len(t, reqs, 2)
	assert.Empty(t, reqs[0].IfNoneMatch)
	assert.Equal(t, `"etag-1"`, reqs[1].IfNoneMatch)
	assert.True(t, second.NotModified, "304 answered from the cache")
	assert.False(t, second.Stale)
	assert.Len(t, second.Items, 2)
	assert.Equal(t, fetched, second.FetchedAt)
	require.NotNil(t, second.CachedAt)
	assert.Equal(t, e.now, *second.CachedAt, "the 304 confirmed the copy now")
	confirmed := e.now

	// The source goes down: the last good copy, flagged stale.
	r.Close()
	e.advance(time.Hour)
	third, err := e.svc.List(t.Context(), "s", "weather")
	require.NoError(t, err)
	assert.True(t, third.Stale)
	require.NotNil(t, third.CachedAt)
	assert.Equal(t, confirmed, *third.CachedAt)
	assert.Equal(t, fetched, third.FetchedAt)
	require.Len(t, third.Items, 1)
	assert.Equal(t, "wx", third.Items[0].CookbookID)
	require.NotNil(t, third.StaleReason)
	assert.Equal(t, apperr.CodeRemoteFetchFailed, third.StaleReason.Code)
	assert.True(t, third.StaleReason.Retryable)
}

func TestListFailuresWithoutFallback(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	status := http.StatusOK
	r.handle("/index.json", func(w http.ResponseWriter, req *http.Request) {
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "echo "+req.Header.Get("Authorization")+" "+strings.Repeat("z", 2000))
			return
		}
		_, _ = w.Write(indexJSON(item{"cookbook_id": "cb", "version": "1.0.0", "download_url": r.URL + "/b"}))
	})
	e.setVar("TOK", secretToken)
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json", AuthMode: AuthBearerEnv, AuthEnvVar: "TOK"})

	// Never fetched and unreachable: an error, retryable.
	e.addSource(t, SourceInput{SourceID: "down", IndexURL: "http://127.0.0.1:1/index.json"})
	_, err := e.svc.List(t.Context(), "down", "")
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "remote request failed", ae.Message)
	assert.True(t, ae.Retryable)
	assert.Equal(t, "down", ae.Details["source_id"])

	_, err = e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)

	// 404 is an answer, not an outage: reported even with a cached copy.
	status = http.StatusNotFound
	_, err = e.svc.List(t.Context(), "s", "")
	ae = requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "remote request returned non-success status", ae.Message)
	assert.Equal(t, 404, ae.Details["http_status"])
	assert.False(t, ae.Retryable)
	body := ae.Details["body"].(string)
	assert.LessOrEqual(t, len(body), echoedBodyLimit+len("…"))
	assert.Contains(t, body, "echo Bearer ***")
	noSecret(t, ae.Details, secretToken)

	// 5xx means unreachable: the cache answers.
	status = http.StatusBadGateway
	l, err := e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)
	assert.True(t, l.Stale)
	assert.Equal(t, 502, l.StaleReason.Details["http_status"])
	noSecret(t, l, secretToken)

	// Disabled source: refused before any request.
	before := len(r.requests())
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json", Enabled: new(false)})
	_, err = e.svc.List(t.Context(), "s", "")
	ae = requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.Equal(t, "catalog source is disabled", ae.Message)
	assert.Len(t, r.requests(), before)

	_, err = e.svc.List(t.Context(), "missing", "")
	requireCode(t, err, apperr.CodeCatalogSourceNotFound)
}

func TestInstallFromStaleIndex(t *testing.T) {
	e := newEnv(t)
	idxSrv := newRemote(t)
	files := newRemote(t)
	b := bundleJSON("cb", "1.0.0")
	files.serveBytes("/b.json", b, "")
	idxSrv.serveBytes("/index.json", indexJSON(item{"cookbook_id": "cb", "version": "1.0.0", "download_url": files.URL + "/b.json", "sha256": sha(b)}), "")
	u, _ := url.Parse(files.URL)
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: idxSrv.URL + "/index.json", DownloadHosts: []string{u.Host}})
	_, err := e.svc.List(t.Context(), "s", "")
	require.NoError(t, err)
	idxSrv.Close()
	res, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	require.NoError(t, err)
	assert.True(t, res.IndexStale)
	assert.True(t, res.Integrity.Verified, "the cached digest still guards the download")
}

func TestInstallConflictPolicies(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	v1 := bundleJSON("cb", "1.0.0")
	publish(r, true, map[string][]byte{"cb@1.0.0": v1})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})
	first, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	require.NoError(t, err)

	// Same content again under FAIL: idempotent.
	e.advance(time.Minute)
	again, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ConflictPolicy: "FAIL"})
	require.NoError(t, err)
	assert.False(t, again.Changed)
	require.NotNil(t, again.Lock, "provenance refreshed for identical content")

	// The remote republishes 1.0.0 with different bytes.
	changed := append(bytes.Clone(v1[:len(v1)-1]), []byte(`,"description":"new"}`)...)
	publish(r, true, map[string][]byte{"cb@1.0.0": changed})

	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ConflictPolicy: "FAIL"})
	requireCode(t, err, apperr.CodeCatalogConflict)
	assert.Equal(t, map[string]string{"cb@1.0.0": first.ContentHash}, e.cat.stored(t))
	lock, err := e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, sha(v1), lock.SHA256, "a refused install leaves the lock alone")

	skip, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ConflictPolicy: "SKIP_IF_EXISTS"})
	require.NoError(t, err)
	assert.False(t, skip.Changed)
	assert.Nil(t, skip.Lock, "skipped content gets no lock")
	assert.Equal(t, first.ContentHash, skip.Cookbook.(catalog.Item).ContentHash)
	assert.Equal(t, catalog.OutcomeSkipped, skip.Outcome)
	lock, err = e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, sha(v1), lock.SHA256)

	over, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", ConflictPolicy: "OVERWRITE"})
	require.NoError(t, err)
	assert.True(t, over.Changed)
	assert.Equal(t, map[string]string{"cb@1.0.0": over.ContentHash}, e.cat.stored(t))
	lock, err = e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, sha(changed), lock.SHA256)
}

func TestInstallFailureAfterHookRollsBack(t *testing.T) {
	e := newEnv(t)
	e.cat.failAfterHook = true
	r := newRemote(t)
	publish(r, true, map[string][]byte{"cb@1.0.0": bundleJSON("cb", "1.0.0")})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})
	_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	require.Error(t, err)
	assert.Empty(t, e.cat.stored(t))
	lock, err := e.svc.Lock("cb", "1.0.0")
	require.NoError(t, err)
	assert.Nil(t, lock, "the lock record rolls back with the bundle")
	hits, err := e.cat.cat.Search(t.Context(), index.Query{CookbookID: "cb"})
	require.NoError(t, err)
	assert.Empty(t, hits.Items, "nor is anything indexed")
}

func TestInstallBundleMismatchAndArgs(t *testing.T) {
	e := newEnv(t)
	r := newRemote(t)
	wrongID := bundleJSON("other", "1.0.0")
	r.serveBytes("/w.json", wrongID, "")
	r.serveBytes("/j.json", []byte("{not json"), "")
	r.serveBytes("/index.json", indexJSON(
		item{"cookbook_id": "cb", "version": "1.0.0", "download_url": r.URL + "/w.json"},
		item{"cookbook_id": "bad", "version": "1.0.0", "download_url": r.URL + "/j.json"},
	), "")
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})

	_, err := e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb"})
	ae := requireCode(t, err, apperr.CodeCatalogSchemaInvalid)
	assert.Equal(t, "downloaded bundle id/version does not match index item", ae.Message)
	assert.Equal(t, "other", ae.Details["bundle_cookbook_id"])

	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "bad"})
	ae = requireCode(t, err, apperr.CodeCatalogSchemaInvalid)
	assert.Equal(t, "downloaded cookbook bundle is invalid json", ae.Message)
	assert.Empty(t, e.cat.stored(t))

	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: " ", CookbookID: "cb"})
	ae = requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "source_id and cookbook_id are required", ae.Message)
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "s", CookbookID: "cb", Version: "^^"})
	ae = requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "version", ae.Details["field"])
	_, err = e.svc.Install(t.Context(), InstallRequest{SourceID: "nope", CookbookID: "cb"})
	requireCode(t, err, apperr.CodeCatalogSourceNotFound)
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Timeout = 200 * time.Millisecond })
	r := newRemote(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.handle("/index.json", func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	e.addSource(t, SourceInput{SourceID: "s", IndexURL: r.URL + "/index.json"})
	start := time.Now()
	_, err := e.svc.List(t.Context(), "s", "")
	ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
	assert.True(t, ae.Retryable)
	assert.Less(t, time.Since(start), 3*time.Second)
}

package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type seen struct {
	Method, Path, RawPath, RawQuery, Host string
	Header                                http.Header
	Body                                  []byte
}

type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) handler(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{req.Method, req.URL.Path, req.URL.RawPath, req.URL.RawQuery, req.Host, req.Header.Clone(), b})
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func (r *recorder) last(t *testing.T) seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.reqs)
	return r.reqs[len(r.reqs)-1]
}

func sess(base string) Endpoint {
	return Endpoint{BaseURL: base, Token: " tok_secret_123 ", Timeout: 2 * time.Second}
}

func TestHeadersRequestIDAndBody(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, `{"items":[{"id":"generic.http"}]}`))
	defer srv.Close()
	c := New(Options{})
	resp, err := c.ListConnectors(context.Background(), sess(srv.URL+"//"))
	require.NoError(t, err)
	got := rec.last(t)
	assert.Equal(t, "GET", got.Method)
	assert.Equal(t, "/v0/connectors", got.Path)
	assert.Equal(t, "Bearer tok_secret_123", got.Header.Get("Authorization"))
	assert.Equal(t, version.UserAgent(), got.Header.Get("User-Agent"))
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), got.Header.Get("X-Request-Id"))
	assert.Equal(t, got.Header.Get("X-Request-Id"), resp.RequestID)
	assert.Empty(t, got.Header.Get("Idempotency-Key"))
	assert.Empty(t, got.Header.Get("Content-Type"))
	assert.Equal(t, 200, resp.Status)
	items := resp.Object()["items"].([]any)
	assert.Equal(t, "generic.http", items[0].(map[string]any)["id"])
}

func TestIdempotencyKeysPerEndpoint(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, `{}`))
	defer srv.Close()
	c := New(Options{})
	ctx, s := context.Background(), sess(srv.URL)
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	cases := []struct {
		name string
		call func() (*Response, error)
		want string // "random", "none" or a literal
	}{
		{"validate", func() (*Response, error) { return c.Validate(ctx, s, map[string]any{"verb": "v"}) }, "none"},
		{"execute", func() (*Response, error) { return c.Execute(ctx, s, map[string]any{}, "") }, "random"},
		{"execute-job", func() (*Response, error) { return c.ExecuteJob(ctx, s, map[string]any{}, "") }, "random"},
		{"execute-job fixed", func() (*Response, error) { return c.ExecuteJob(ctx, s, map[string]any{}, "k-1") }, "k-1"},
		{"plan validate", func() (*Response, error) { return c.PlanValidate(ctx, s, map[string]any{}) }, "random"},
		{"plan execute", func() (*Response, error) { return c.PlanExecute(ctx, s, map[string]any{"plan": map[string]any{}}, "") }, "random"},
		{"slot bind", func() (*Response, error) { return c.SlotBind(ctx, s, map[string]any{"slot": "a"}, "") }, "random"},
		{"upsert", func() (*Response, error) { return c.ProfileUpsert(ctx, s, map[string]any{}, "") }, "random"},
		{"upsert auto", func() (*Response, error) {
			return c.ProfileUpsert(ctx, s, map[string]any{}, "mcp-unbounded-profile-8042d5b7fd92")
		}, "mcp-unbounded-profile-8042d5b7fd92"},
		{"suggest", func() (*Response, error) { return c.DocTypesSuggest(ctx, s, " passport ", 0) }, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.call()
			require.NoError(t, err)
			got := rec.last(t)
			assert.Equal(t, "POST", got.Method)
			assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
			switch tc.want {
			case "none":
				assert.Empty(t, got.Header.Get("Idempotency-Key"))
			case "random":
				assert.Regexp(t, hex32, got.Header.Get("Idempotency-Key"))
			default:
				assert.Equal(t, tc.want, got.Header.Get("Idempotency-Key"))
			}
		})
	}
	// Suggest body: trimmed query and default top_k as a JSON number.
	_, err := c.DocTypesSuggest(ctx, s, " passport ", 0)
	require.NoError(t, err)
	assert.JSONEq(t, `{"query":"passport","top_k":5}`, string(rec.last(t).Body))
	// Random keys differ between calls.
	_, _ = c.Execute(ctx, s, map[string]any{}, "")
	k1 := rec.last(t).Header.Get("Idempotency-Key")
	_, _ = c.Execute(ctx, s, map[string]any{}, "")
	assert.NotEqual(t, k1, rec.last(t).Header.Get("Idempotency-Key"))
}

func TestBodyEncodingSortedAndEscaped(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, `{}`))
	defer srv.Close()
	_, err := New(Options{}).Validate(context.Background(), sess(srv.URL), map[string]any{"verb": "v", "a": "x<y>&z"})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"x\u003cy\u003e\u0026z","verb":"v"}`, string(rec.last(t).Body))
}

func TestQueryAndPathEscaping(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(200, `{}`))
	defer srv.Close()
	c, ctx, s := New(Options{}), context.Background(), sess(srv.URL)

	_, err := c.PendingApprovals(ctx, s, url.Values{"states": {"WAITING,READY"}, "limit": {"50"}, "verb": {"  "}})
	require.NoError(t, err)
	assert.Equal(t, "limit=50&states=WAITING%2CREADY", rec.last(t).RawQuery)

	_, err = c.SlotBindings(ctx, s, "generic.http", "generic.http.request.v1", false)
	require.NoError(t, err)
	assert.Equal(t, "connector_id=generic.http&verb=generic.http.request.v1", rec.last(t).RawQuery)
	_, err = c.SlotBindings(ctx, s, "generic.http", "v", true)
	require.NoError(t, err)
	assert.Equal(t, "connector_id=generic.http&include_revoked=true&verb=v", rec.last(t).RawQuery)

	_, err = c.DocTypesLatest(ctx, s, "identity.passport", "")
	require.NoError(t, err)
	assert.Equal(t, "subject_id=self&type_id=identity.passport", rec.last(t).RawQuery)

	_, err = c.GetConnector(ctx, s, "a/b?c")
	require.NoError(t, err)
	assert.Equal(t, "/v0/connectors/a%2Fb%3Fc", rec.last(t).RawPath)
	_, err = c.JobGet(ctx, s, "job 1")
	require.NoError(t, err)
	assert.Equal(t, "/v0/jobs/job 1", rec.last(t).Path)
	_, err = c.PlanRunGet(ctx, s, "run/9")
	require.NoError(t, err)
	assert.Equal(t, "/v0/connectors/plans/runs/run%2F9", rec.last(t).RawPath)

	_, err = c.GetConnector(ctx, s, "  ")
	require.Error(t, err)
	assert.Equal(t, apperr.CodeValidation, apperr.As(err).Code)
}

func TestErrorNormalizationTable(t *testing.T) {
	for vcode, mcp := range MappedVaultCodes() {
		for _, status := range []int{400, 409, 503} {
			body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": " " + vcode + " ", "message": "m", "details": map[string]any{"k": "v"}}})
			srv := httptest.NewServer((&recorder{}).handler(status, string(body)))
			_, err := New(Options{}).GetConnector(context.Background(), sess(srv.URL), "x")
			srv.Close()
			ae := apperr.As(err)
			require.Equal(t, mcp, ae.Code, vcode)
			assert.Equal(t, apperr.CategoryOf(mcp), ae.Category)
			assert.Equal(t, vcode, ae.VaultCode)
			assert.Equal(t, status >= 500, ae.Retryable)
			assert.Equal(t, status, ae.Details["vault_http_status"])
			ve := ae.Details["vault_error"].(map[string]any)
			assert.Equal(t, "m", ve["message"])
			assert.Equal(t, map[string]any{"k": "v"}, ve["details"])
		}
	}
}

func TestErrorDefaults(t *testing.T) {
	cases := []struct {
		status             int
		body               string
		code, vcode, msg   string
		retryable          bool
		vaultErrorDetailed bool
	}{
		{404, ``, apperr.CodeInternal, "HTTP_ERROR", "Not Found", false, false},
		{503, `upstream down`, apperr.CodeNetwork, "HTTP_ERROR", "Service Unavailable", true, false},
		{429, `{"error":{"code":"rate_limited","message":"slow down"}}`, apperr.CodeInternal, "rate_limited", "slow down", true, false},
		{500, `{"error":{"code":"PLAN_RUN_NOT_FOUND"}}`, apperr.CodePlanRunNotFound, "PLAN_RUN_NOT_FOUND", "Internal Server Error", true, false},
		{409, `{"error":{"code":"DOCUMENT_SLOT_UNRESOLVED","message":"no doc","details":["x"]}}`, apperr.CodeInternal, "DOCUMENT_SLOT_UNRESOLVED", "no doc", false, false},
		{599, `{}`, apperr.CodeNetwork, "HTTP_ERROR", "request failed with status 599", true, false},
	}
	for _, tc := range cases {
		srv := httptest.NewServer((&recorder{}).handler(tc.status, tc.body))
		_, err := New(Options{}).ListConnectors(context.Background(), sess(srv.URL))
		srv.Close()
		ae := apperr.As(err)
		assert.Equal(t, tc.code, ae.Code, tc.body)
		assert.Equal(t, tc.vcode, ae.VaultCode)
		assert.Equal(t, tc.msg, ae.Message)
		assert.Equal(t, tc.retryable, ae.Retryable)
		ve := ae.Details["vault_error"].(map[string]any)
		assert.Equal(t, tc.vcode, ve["code"])
		assert.Nil(t, ve["details"])
		assert.Regexp(t, `^[0-9a-f]{32}$`, ae.Details["request_id"])
	}
}

func TestNetworkFailures(t *testing.T) {
	// Closed port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = New(Options{}).ListConnectors(context.Background(), sess("http://"+addr))
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeNetwork, ae.Code)
	assert.Equal(t, apperr.CatNetwork, ae.Category)
	assert.True(t, ae.Retryable)
	assert.Equal(t, CodeNetworkError, ae.VaultCode)
	assert.Equal(t, 0, ae.Details["vault_http_status"])
	assert.NotContains(t, ae.Message, "tok_secret")

	// Slow past the timeout: fails within timeout + 1s.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	s := sess(srv.URL)
	s.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err = New(Options{}).ListConnectors(context.Background(), s)
	assert.Less(t, time.Since(start), 1300*time.Millisecond)
	ae = apperr.As(err)
	assert.Equal(t, apperr.CodeNetwork, ae.Code)
	assert.Contains(t, ae.Message, "300 ms")
}

func TestResponseCap(t *testing.T) {
	srv := httptest.NewServer((&recorder{}).handler(200, `{"big":"`+string(bytes.Repeat([]byte("x"), 4096))+`"}`))
	defer srv.Close()
	_, err := New(Options{MaxResponseBytes: 1024}).ListConnectors(context.Background(), sess(srv.URL))
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeInternal, ae.Code)
	assert.Equal(t, "RESPONSE_TOO_LARGE", ae.VaultCode)
	assert.Equal(t, 200, ae.Details["vault_http_status"])
}

// An empty 2xx body where JSON is expected is MALFORMED_RESPONSE (D17);
// only 204 No Content may be empty.
func TestEmptyBodyIsMalformedUnless204(t *testing.T) {
	srv := httptest.NewServer((&recorder{}).handler(200, ""))
	defer srv.Close()
	_, err := New(Options{}).ListConnectors(context.Background(), sess(srv.URL))
	ae := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.CodeNetwork, ae.Code)
	assert.Equal(t, CodeMalformedResponse, ae.VaultCode)
	assert.True(t, ae.Retryable, "a read can be repeated")

	none := httptest.NewServer((&recorder{}).handler(204, ""))
	defer none.Close()
	resp, err := New(Options{}).ListConnectors(context.Background(), sess(none.URL))
	require.NoError(t, err)
	assert.Nil(t, resp.Body)
}

// A success status whose body is not a JSON object is an upstream fault,
// never an empty success.
func TestNonObjectBodyIsMalformed(t *testing.T) {
	for _, b := range []string{`[1,2]`, `hello`, `null`, `{"items":[`} {
		srv := httptest.NewServer((&recorder{}).handler(200, b))
		_, err := New(Options{}).ListConnectors(context.Background(), sess(srv.URL))
		srv.Close()
		ae := apperr.As(err)
		require.NotNil(t, ae, b)
		assert.Equal(t, apperr.CodeNetwork, ae.Code, b)
		assert.Equal(t, CodeMalformedResponse, ae.VaultCode, b)
		assert.True(t, ae.Retryable, b)
		assert.Equal(t, 200, ae.Details["vault_http_status"], b)
		assert.Len(t, ae.Details["request_id"], 32, b)
	}
}

func TestUnixSocketForms(t *testing.T) {
	dir, err := os.MkdirTemp("", "vc")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "vc.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	rec := &recorder{}
	srv := &http.Server{Handler: rec.handler(200, `{"items":[]}`)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	c := New(Options{})
	for _, s := range []Endpoint{
		{BaseURL: "unix://" + sock, Token: "t"},
		{BaseURL: "http+unix://" + url.PathEscape(sock), Token: "t"},
		{BaseURL: "http://vault.invalid:9", Token: "t", UnixSocket: sock},
	} {
		resp, err := c.ListConnectors(context.Background(), s)
		require.NoError(t, err, s.BaseURL)
		assert.Equal(t, 200, resp.Status)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.reqs, 3)
	assert.Equal(t, "localhost", rec.reqs[0].Host)
	assert.Equal(t, "localhost", rec.reqs[1].Host)
	assert.Equal(t, "vault.invalid:9", rec.reqs[2].Host)
	// One transport per socket, reused.
	c.mu.Lock()
	assert.Len(t, c.transports, 1)
	c.mu.Unlock()
}

func TestResolveEndpoint(t *testing.T) {
	home, _ := os.UserHomeDir()
	cases := []struct {
		s    Endpoint
		want Target
	}{
		{Endpoint{}, Target{Base: DefaultBaseURL}},
		{Endpoint{BaseURL: " http://x:1/// "}, Target{Base: "http://x:1"}},
		{Endpoint{BaseURL: "unix:///run/vc.sock", UnixSocket: "/other"}, Target{Base: "http://localhost", Socket: "/run/vc.sock"}},
		{Endpoint{BaseURL: "http+unix://%2Frun%2Fvc.sock"}, Target{Base: "http://localhost", Socket: "/run/vc.sock"}},
		{Endpoint{BaseURL: "http+unix://%2Frun%2Fvc.sock/api"}, Target{Base: "http://localhost/api", Socket: "/run/vc.sock"}},
		{Endpoint{BaseURL: "unix://~/vc.sock"}, Target{Base: "http://localhost", Socket: filepath.Join(home, "vc.sock")}},
		{Endpoint{BaseURL: "http://localhost", UnixSocket: "/run/a.sock"}, Target{Base: "http://localhost", Socket: "/run/a.sock"}},
	}
	for _, tc := range cases {
		got, err := ResolveEndpoint(tc.s)
		require.NoError(t, err, tc.s.BaseURL)
		assert.Equal(t, tc.want, got, tc.s.BaseURL)
	}
	_, err := ResolveEndpoint(Endpoint{BaseURL: "ftp://x"})
	assert.True(t, apperr.Is(err, apperr.CodeValidation))
}

func TestTokenNeverLogged(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer((&recorder{}).handler(403, `{"error":{"code":"INSUFFICIENT_SCOPE","message":"nope"}}`))
	c := New(Options{Logger: logger})
	_, _ = c.ListConnectors(context.Background(), sess(srv.URL))
	srv.Close()
	_, _ = c.ListConnectors(context.Background(), sess(srv.URL)) // now refused
	require.Contains(t, buf.String(), "vault call")
	assert.NotContains(t, buf.String(), "tok_secret_123")
	assert.NotContains(t, buf.String(), "Bearer")
}

func TestConnectionsReused(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewUnstartedServer((&recorder{}).handler(200, `{}`))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns[c.RemoteAddr().String()] = true
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(Options{})
	for range 10 {
		_, err := c.ListConnectors(context.Background(), sess(srv.URL))
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, conns, 1)
}

// D16: a Vault 404 naming a missing resource is the caller's wrong id,
// MCP_NOT_FOUND, unless the code has a mapping of its own; other statuses
// keep their old answer.
func TestNotFoundCodes(t *testing.T) {
	cases := []struct {
		status    int
		vcode     string
		want      string
		retryable bool
	}{
		{404, "NOT_FOUND", apperr.CodeNotFound, false},
		{404, "not_found", apperr.CodeNotFound, false},
		{404, "CONNECTOR_NOT_FOUND", apperr.CodeNotFound, false},
		{404, "JOB_NOT_FOUND", apperr.CodeNotFound, false},
		{404, "DOCUMENT_NOT_FOUND", apperr.CodeNotFound, false},
		{404, " Pending_Approval_Not_Found ", apperr.CodeNotFound, false},
		// Mapped codes keep their mapping.
		{404, "PLAN_RUN_NOT_FOUND", apperr.CodePlanRunNotFound, false},
		{404, "UNBOUNDED_PROFILE_NOT_FOUND", apperr.CodeUnboundedProfileInvalid, false},
		{404, "SECRET_SLOT_BINDING_NOT_FOUND", apperr.CodeSecretError, false},
		{404, "SECRET_INTENT_NOT_FOUND", apperr.CodeSecretError, false},
		// Not a not-found code, or not a 404.
		{404, "HTTP_ERROR", apperr.CodeInternal, false},
		{404, "NOT_FOUNDATION", apperr.CodeInternal, false},
		{409, "JOB_NOT_FOUND", apperr.CodeInternal, false},
		{400, "NOT_FOUND", apperr.CodeInternal, false},
		{503, "JOB_NOT_FOUND", apperr.CodeNetwork, true},
	}
	for _, tc := range cases {
		body := `{"error":{"code":"` + tc.vcode + `","message":"gone","details":{"id":"x"}}}`
		srv := httptest.NewServer((&recorder{}).handler(tc.status, body))
		_, err := New(Options{}).ListConnectors(context.Background(), sess(srv.URL))
		srv.Close()
		ae := apperr.As(err)
		assert.Equal(t, tc.want, ae.Code, "%d %s", tc.status, tc.vcode)
		assert.Equal(t, apperr.CategoryOf(tc.want), ae.Category, tc.vcode)
		assert.Equal(t, tc.retryable, ae.Retryable, tc.vcode)
		assert.Equal(t, strings.TrimSpace(tc.vcode), ae.VaultCode)
		assert.Equal(t, map[string]any{"code": tc.vcode, "message": "gone", "details": map[string]any{"id": "x"}}, ae.Details["vault_error"], tc.vcode)
		assert.Equal(t, tc.status, ae.Details["vault_http_status"])
		if tc.want == apperr.CodeNotFound {
			assert.Equal(t, apperr.CatValidation, ae.Category)
		}
	}
}

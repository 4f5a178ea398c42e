package tools_test

import (
	"bytes"
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

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type harness struct {
	t    *testing.T
	sim  *vaultsim.Server
	app  *app.App
	cs   *mcptest.Session
	logs *syncBuf
}

// newHarness starts a simulator and an accords-mcp app wired as in
// production, connected through in-memory MCP transports. env adds
// environment variables ({{SIM}} is replaced by the simulator URL).
func newHarness(t *testing.T, opts vaultsim.Options, env map[string]string) *harness {
	t.Helper()
	sim, err := vaultsim.Start("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	t.Cleanup(func() { requireKeysInLog(t, sim.Requests()) })
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "a.db"), "ACCORDS_MCP_SECRET_KEY": testKey}
	for k, v := range env {
		vars[k] = strings.ReplaceAll(v, "{{SIM}}", sim.URL)
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	logs := &syncBuf{}
	a, err := app.Open(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	return &harness{t: t, sim: sim, app: a, cs: cs, logs: logs}
}

func (h *harness) call(name string, args map[string]any) mcptest.Envelope {
	h.t.Helper()
	return mcptest.Call(h.t, h.cs, name, args)
}

// with returns the harness bound to a subtest's t.
func (h *harness) with(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

func (h *harness) configure(token string, timeoutMS int) {
	h.t.Helper()
	args := map[string]any{"base_url": h.sim.URL, "token": token}
	if timeoutMS > 0 {
		args["timeout_ms"] = timeoutMS
	}
	require.True(h.t, h.call("vaultclaw_session_configure", args).OK)
}

func (h *harness) configured() *harness {
	h.configure(h.sim.AgentToken(), 3000)
	return h
}

func (h *harness) calls(method, path string) []vaultsim.Request {
	return h.sim.RequestsTo(method, path)
}

func m(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

var vaultToolCalls = []struct {
	name string
	args map[string]any
}{
	{"vaultclaw_connectors_list", nil},
	{"vaultclaw_connector_get", m("connector_id", "google")},
	{"vaultclaw_connector_validate", m("request", m("connector_id", "generic.http", "verb", "generic.http.request.v1"))},
	{"vaultclaw_connector_execute", m("request", m("connector_id", "generic.http", "verb", "generic.http.request.v1"))},
	{"vaultclaw_document_types_suggest", m("query", "passport")},
	{"vaultclaw_document_types_latest", m("type_id", "identity.passport")},
	{"vaultclaw_slot_bindings_list", m("connector_id", "generic.http", "verb", "generic.http.request.v1")},
	{"vaultclaw_slot_bind", m("connector_id", "generic.http", "verb", "generic.http.request.v1", "slot", "k", "secret_id", "sec_demo_api_key")},
	{"vaultclaw_unbounded_profiles_list", nil},
	{"vaultclaw_unbounded_profile_get", m("profile_id", "p")},
	{"vaultclaw_unbounded_profile_upsert", m("profile", m("profile_id", "p"))},
}

// T1
func TestNoSessionNoVaultCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil)
	for _, tc := range vaultToolCalls {
		e := h.call(tc.name, tc.args)
		require.False(t, e.OK, tc.name)
		assert.Equal(t, apperr.CodeSessionNotConfigured, e.Error.Code, tc.name)
		assert.Equal(t, apperr.CatAuth, e.Error.Category)
	}
	assert.Empty(t, h.sim.Requests())
}

// Argument validation precedes the session check.
func TestArgumentValidationBeforeSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil)
	cases := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"vaultclaw_connector_get", m("connector_id", "  "), "connector_id"},
		{"vaultclaw_connector_get", nil, "connector_id"},
		{"vaultclaw_connector_validate", m("request", "not an object"), "request"},
		{"vaultclaw_connector_execute", nil, "request"},
		{"vaultclaw_document_types_suggest", m("query", " "), "query"},
		{"vaultclaw_document_types_suggest", m("query", "x", "top_k", "five"), "top_k"},
		{"vaultclaw_document_types_latest", m("subject_id", "self"), "type_id"},
		{"vaultclaw_slot_bindings_list", m("connector_id", "generic.http"), "verb"},
		{"vaultclaw_slot_bindings_list", m("connector_id", "g", "verb", "v", "include_revoked", "yes"), "include_revoked"},
		{"vaultclaw_slot_bind", m("connector_id", "g", "verb", "v", "slot", "s", "secret_id", " "), "secret_id"},
		{"vaultclaw_unbounded_profile_get", m("profile_id", ""), "profile_id"},
		{"vaultclaw_unbounded_profile_upsert", m("profile", []any{}), "profile"},
	}
	for _, tc := range cases {
		e := h.call(tc.name, tc.args)
		require.False(t, e.OK)
		assert.Equal(t, apperr.CodeValidation, e.Error.Code, "%s %v", tc.name, tc.args)
		assert.Equal(t, tc.field, e.Error.Details["field"], "%s %v", tc.name, tc.args)
	}
	assert.Empty(t, h.sim.Requests())
}

// T2
func TestEnvSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, map[string]string{"VC_AGENT_TOKEN": "tok_env", "VC_BASE_URL": "{{SIM}}", "VC_TIMEOUT_MS": "12345"})
	h.sim.AddToken("tok_env", vaultsim.AllScopes...)
	e := h.call("vaultclaw_connectors_list", nil)
	require.True(t, e.OK, e.Error)
	assert.Len(t, e.Object()["items"], 3)
	st := h.call("vaultclaw_session_status", nil)
	assert.Equal(t, true, st.Object()["configured"])
	assert.Equal(t, "tok***env", st.Object()["token"])
	assert.EqualValues(t, 12345, st.Object()["timeout_ms"])
}

// T3
func TestHeadersAndRequestID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil)
	h.sim.AddToken("token-a-123", vaultsim.AllScopes...)
	h.configure("token-a-123", 0)
	e := h.call("vaultclaw_connectors_list", nil)
	require.True(t, e.OK)
	reqs := h.calls("GET", "/v0/connectors")
	require.Len(t, reqs, 1)
	hd := reqs[0].Header
	assert.Equal(t, "Bearer token-a-123", hd.Get("Authorization"))
	assert.Equal(t, "accords-mcp/"+version.Version, hd.Get("User-Agent"))
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), hd.Get("X-Request-Id"))
	assert.Equal(t, hd.Get("X-Request-Id"), e.Meta["request_id"])
	assert.EqualValues(t, 200, e.Meta["vault_http_status"])
	assert.Equal(t, "", e.Meta["vault_code"])
}

// T4
func TestUnixSocketSessions(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "vt")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "vc.sock")
	usim, err := vaultsim.StartUnix(sock, vaultsim.Options{AgentToken: "tok_unix"})
	require.NoError(t, err)
	defer usim.Close()

	for _, base := range []string{"unix://" + sock, "http+unix://" + url.PathEscape(sock)} {
		h := newHarness(t, vaultsim.Options{}, nil)
		require.True(t, h.call("vaultclaw_session_configure", m("base_url", base, "token", "tok_unix")).OK, base)
		e := h.call("vaultclaw_connectors_list", nil)
		require.True(t, e.OK, "%s: %+v", base, e.Error)
	}
	h := newHarness(t, vaultsim.Options{}, map[string]string{"VC_AGENT_TOKEN": "tok_unix", "VC_UNIX_SOCKET": sock})
	e := h.call("vaultclaw_connectors_list", nil)
	require.True(t, e.OK, e.Error)
	reqs := usim.RequestsTo("GET", "/v0/connectors")
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		assert.Equal(t, "localhost", r.Host)
	}
}

// T5, T6, T7, T8 and garbage bodies: clean envelopes within timeout + 1s.
func TestTransportFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	ln.Close()

	t.Run("closed port", func(t *testing.T) {
		h := newHarness(t, vaultsim.Options{}, nil)
		require.True(t, h.call("vaultclaw_session_configure", m("base_url", closed, "token", "tok_secret_x", "timeout_ms", 1000)).OK)
		start := time.Now()
		e := h.call("vaultclaw_connectors_list", nil)
		assert.Less(t, time.Since(start), 2*time.Second)
		require.False(t, e.OK)
		// A deliberate difference from the predecessor, which said MCP_INTERNAL.
		assert.Equal(t, apperr.CodeNetwork, e.Error.Code)
		assert.Equal(t, apperr.CatNetwork, e.Error.Category)
		assert.True(t, e.Error.Retryable)
		assert.Equal(t, "NETWORK_ERROR", e.Error.VaultCode)
		assert.EqualValues(t, 0, e.Meta["vault_http_status"])
		assert.EqualValues(t, 0, e.Error.Details["vault_http_status"])
		assert.Regexp(t, `^[0-9a-f]{32}$`, e.Meta["request_id"])
		assert.Equal(t, "NETWORK_ERROR", e.Meta["vault_code"])
	})
	t.Run("slow past timeout", func(t *testing.T) {
		h := newHarness(t, vaultsim.Options{}, nil)
		h.configure(h.sim.AgentToken(), 1000)
		h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Latency: 5 * time.Second})
		start := time.Now()
		e := h.call("vaultclaw_connectors_list", nil)
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.Equal(t, apperr.CodeNetwork, e.Error.Code)
		assert.Equal(t, "NETWORK_ERROR", e.Error.VaultCode)
		assert.Contains(t, e.Error.Message, "1000 ms")
	})
	cases := []struct {
		name      string
		fault     vaultsim.Fault
		ok        bool
		code      string
		vcode     string
		msg       string
		retryable bool
		status    int
	}{
		{"503 text", vaultsim.Fault{Status: 503, Body: "upstream down"}, false, apperr.CodeNetwork, "HTTP_ERROR", "Service Unavailable", true, 503},
		{"429", vaultsim.Fault{Status: 429, Body: `{"error":{"code":"rate_limited","message":"slow down"}}`}, false, apperr.CodeInternal, "rate_limited", "slow down", true, 429},
		{"502 html", vaultsim.Fault{Status: 502, Body: "<html>bad gateway</html>"}, false, apperr.CodeNetwork, "HTTP_ERROR", "Bad Gateway", true, 502},
		{"200 garbage", vaultsim.Fault{Status: 200, Body: "\x00\x01not json"}, false, apperr.CodeNetwork, "MALFORMED_RESPONSE", "", true, 200},
		{"200 array", vaultsim.Fault{Status: 200, Body: `[1,2,3]`}, false, apperr.CodeNetwork, "MALFORMED_RESPONSE", "", true, 200},
		{"reset", vaultsim.Fault{Reset: true, Times: 2}, false, apperr.CodeNetwork, "NETWORK_ERROR", "", true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, vaultsim.Options{}, nil).configured()
			tc.fault.Path = "/v0/connectors"
			h.sim.InjectFault(tc.fault)
			start := time.Now()
			e := h.call("vaultclaw_connectors_list", nil)
			assert.Less(t, time.Since(start), 4*time.Second)
			assert.Equal(t, tc.ok, e.OK)
			assert.EqualValues(t, tc.status, e.Meta["vault_http_status"])
			if tc.ok {
				assert.Nil(t, e.Data)
				return
			}
			assert.Equal(t, tc.code, e.Error.Code)
			assert.Equal(t, tc.vcode, e.Error.VaultCode)
			assert.Equal(t, tc.retryable, e.Error.Retryable)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, e.Error.Message)
			}
		})
	}
}

// T9: HTTP bridge tenants isolate sessions; strict mode needs a header.
func TestHTTPBridgeTenants(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil)
	h.sim.AddToken("tok_tenant_a", vaultsim.AllScopes...)
	h.sim.AddToken("tok_tenant_b", vaultsim.AllScopes...)
	bridge := httptest.NewServer(h.app.HTTPHandler())
	defer bridge.Close()
	call := func(tenant string, name string, args map[string]any) mcptest.Envelope {
		return mcptest.PostCall(t, bridge.URL+"/v1/mcp", name, args, map[string]string{"X-Accords-Tenant-Id": tenant})
	}
	env := call("a", "vaultclaw_session_configure", m("base_url", h.sim.URL, "token", "tok_tenant_a"))
	require.Equal(t, true, env.Raw["ok"], env.Raw)
	env = call("b", "vaultclaw_session_configure", m("base_url", h.sim.URL, "token", "tok_tenant_b"))
	require.Equal(t, true, env.Raw["ok"])
	env = call("c", "vaultclaw_connectors_list", nil)
	assert.Equal(t, apperr.CodeSessionNotConfigured, env.Code())
	call("a", "vaultclaw_connectors_list", nil)
	call("b", "vaultclaw_connectors_list", nil)
	reqs := h.calls("GET", "/v0/connectors")
	require.Len(t, reqs, 2)
	assert.Equal(t, "Bearer tok_tenant_a", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "Bearer tok_tenant_b", reqs[1].Header.Get("Authorization"))

	strictCfg := h.app.Config
	strictCfg.RequireTenantHeader = true
	strictCfg.DBPath = filepath.Join(t.TempDir(), "strict.db")
	strict, err := app.Open(strictCfg, nil)
	require.NoError(t, err)
	defer strict.Close()
	sb := httptest.NewServer(strict.HTTPHandler())
	defer sb.Close()
	req, _ := http.NewRequest(http.MethodPost, sb.URL+"/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode)
	raw, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(raw), apperr.CodeTenantHeaderRequired)
}

// N1 (every Vault error code the normaliser maps), N2, N3.
func TestNormalizationThroughTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()

	codes := vault.MappedVaultCodes()
	codes["NOT_FOUND"] = apperr.CodeInternal
	codes["CONFLICT"] = apperr.CodeInternal
	codes["DOCUMENT_SLOT_UNRESOLVED"] = apperr.CodeInternal
	for vcode, want := range codes {
		t.Run(vcode, func(t *testing.T) {
			h := h.with(t)
			body, _ := json.Marshal(m("error", m("code", vcode, "message", "m", "details", m("k", "v"))))
			h.sim.InjectFault(vaultsim.Fault{Method: "GET", Path: "/v0/connectors/x", Status: 409, Body: string(body), ContentType: "application/json"})
			e := h.call("vaultclaw_connector_get", m("connector_id", "x"))
			require.False(t, e.OK)
			assert.Equal(t, want, e.Error.Code, vcode)
			assert.Equal(t, apperr.CategoryOf(want), e.Error.Category, vcode)
			assert.Equal(t, vcode, e.Error.VaultCode)
			assert.False(t, e.Error.Retryable, vcode)
			assert.Equal(t, m("code", vcode, "message", "m", "details", m("k", "v")), e.Error.Details["vault_error"])
			assert.EqualValues(t, 409, e.Meta["vault_http_status"])
			assert.Equal(t, vcode, e.Meta["vault_code"])
			assert.Equal(t, e.Error.Details["request_id"], e.Meta["request_id"])
			// Vault's message, then the next step where there is one.
			wantMsg := "m"
			if step := tools.NextStepOf(&apperr.Error{Code: want, VaultCode: vcode}); step != "" {
				wantMsg += "; " + step
			}
			assert.Equal(t, wantMsg, e.Error.Message)
		})
	}
	// N2
	h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors/x", Status: 404, EmptyBody: true})
	e := h.call("vaultclaw_connector_get", m("connector_id", "x"))
	assert.Equal(t, apperr.CodeInternal, e.Error.Code)
	assert.Equal(t, "HTTP_ERROR", e.Error.VaultCode)
	assert.Equal(t, "Not Found", e.Error.Message)
	// N3
	h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors/x", Status: 500, Body: `{"error":{"code":"PLAN_RUN_NOT_FOUND"}}`})
	e = h.call("vaultclaw_connector_get", m("connector_id", "x"))
	assert.Equal(t, apperr.CodePlanRunNotFound, e.Error.Code)
	assert.True(t, e.Error.Retryable)
	// Unknown code with 5xx is a network error.
	h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors/x", Status: 500, Body: `{"error":{"code":"WHATEVER","message":"boom"}}`})
	e = h.call("vaultclaw_connector_get", m("connector_id", "x"))
	assert.Equal(t, apperr.CodeNetwork, e.Error.Code)
	assert.True(t, e.Error.Retryable)
	// The real simulator's 404 for an unknown connector.
	e = h.call("vaultclaw_connector_get", m("connector_id", "no/such"))
	assert.Equal(t, "CONNECTOR_NOT_FOUND", e.Error.VaultCode)
	all := h.sim.Requests()
	assert.Equal(t, "/v0/connectors/no%2Fsuch", all[len(all)-1].EscapedPath)
}

// N4: a token without connectors.list.v1.
func TestInsufficientScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil)
	h.sim.AddToken("tok_narrow", vaultsim.ScopeConnectorsGet, vaultsim.ScopeProfilesRead)
	h.configure("tok_narrow", 0)
	e := h.call("vaultclaw_connectors_list", nil)
	assert.Equal(t, apperr.CodeAuthForbidden, e.Error.Code)
	assert.Equal(t, apperr.CatAuth, e.Error.Category)
	assert.EqualValues(t, 403, e.Meta["vault_http_status"])
	e = h.call("vaultclaw_unbounded_profile_upsert", m("profile", m("type", "connector.unbounded.profile.v1")))
	assert.Equal(t, "INSUFFICIENT_SCOPE", e.Error.VaultCode)
}

func genericGET() map[string]any {
	return m("connector_id", "generic.http", "verb", "generic.http.request.v1", "policy_version", "1",
		"request", m("endpoint_key", "request", "method", "GET", "url", "https://api.example.com/v1/status"))
}

// C1
func TestValidateGenericHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	e := h.call("vaultclaw_connector_validate", m("request", genericGET()))
	require.True(t, e.OK, e.Error)
	assert.Equal(t, true, e.Object()["validation"].(map[string]any)["validated"])
	assert.Equal(t, m("applied", false, "reason", "module_hash not required"), e.Object()["module_hash"])
	assert.Equal(t, genericGET(), e.Object()["request"])
	v := h.calls("POST", "/v0/connectors/validate")
	require.Len(t, v, 1)
	assert.Empty(t, v[0].Header.Get("Idempotency-Key"))
	assert.Equal(t, v[0].Header.Get("X-Request-Id"), e.Meta["request_id"])
	assert.Empty(t, h.calls("GET", "/v0/connectors/generic.http"))
}

func gmailSendTo(to any) map[string]any {
	return m("connector_id", "google", "verb", "google.gmail.send.v1", "policy_version", "1",
		"request", m("user_id", "me", "to", to, "subject", "Hello", "text_plain", "Hi there"))
}

// C2
func TestExecuteStopsOnValidationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	e := h.call("vaultclaw_connector_execute", m("request", gmailSendTo("bob@example.com")))
	require.False(t, e.OK)
	assert.Equal(t, apperr.CodeValidation, e.Error.Code)
	assert.Equal(t, "INVALID_ARGUMENT", e.Error.VaultCode)
	errs := e.Error.Details["vault_error"].(map[string]any)["details"].(map[string]any)["errors"].([]any)
	assert.Equal(t, m("path", "/to", "code", "TYPE_MISMATCH", "message", "to must be an array", "expected", "array", "actual", "string"), errs[0])
	assert.Len(t, h.calls("POST", "/v0/connectors/validate"), 1)
	assert.Empty(t, h.calls("POST", "/v0/connectors/execute"))
	assert.EqualValues(t, 400, e.Meta["vault_http_status"])
}

// C4
func TestExecuteGmailInjectsModuleHash(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	h.sim.SetApprovalRules() // no approval gate for this scenario
	hash := h.sim.PolicyHash("google")
	e := h.call("vaultclaw_connector_execute", m("request", gmailSendTo([]any{"bob@example.com"})))
	require.True(t, e.OK, e.Error)
	assert.Equal(t, "SUCCEEDED", e.Object()["status"])
	require.Len(t, h.calls("GET", "/v0/connectors/google"), 1)
	v, x := h.calls("POST", "/v0/connectors/validate"), h.calls("POST", "/v0/connectors/execute")
	require.Len(t, v, 1)
	require.Len(t, x, 1)
	assert.Equal(t, hash, v[0].Body["module_hash"])
	assert.Equal(t, hash, x[0].Body["module_hash"])
	assert.Regexp(t, `^[0-9a-f]{32}$`, x[0].Header.Get("Idempotency-Key"))
	assert.Equal(t, x[0].Header.Get("X-Request-Id"), e.Meta["request_id"])
	sent := h.sim.SentMessages()
	require.Len(t, sent, 1)
	assert.Equal(t, []string{"bob@example.com"}, sent[0].To)

	// The hash is cached in bbolt; a policy rotation is detected by
	// Vault's rejection, refetched once, and the call goes through.
	h.sim.ClearRequests()
	h.sim.SetPolicyHash("google", "ph_rotated")
	e = h.call("vaultclaw_connector_execute", m("request", gmailSendTo([]any{"carol@example.com"})))
	require.True(t, e.OK, e.Error)
	var seq []string
	for _, r := range h.sim.Requests() {
		seq = append(seq, r.Method+" "+r.Path+" "+itoa(r.Status))
	}
	assert.Equal(t, []string{
		"POST /v0/connectors/validate 400",
		"GET /v0/connectors/google 200",
		"POST /v0/connectors/validate 200",
		"POST /v0/connectors/execute 200",
	}, seq)
	assert.Equal(t, "ph_rotated", h.calls("POST", "/v0/connectors/execute")[0].Body["module_hash"])
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// C5
func TestModuleHashRequired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	h.sim.SetPolicyHash("google", "")
	e := h.call("vaultclaw_connector_execute", m("request", gmailSendTo([]any{"bob@example.com"})))
	require.False(t, e.OK)
	assert.Equal(t, apperr.CodeModuleHashRequired, e.Error.Code)
	assert.Equal(t, apperr.CatPolicy, e.Error.Category)
	assert.False(t, e.Error.Retryable)
	assert.Equal(t, "unable to derive module_hash: connector policy_hash missing", e.Error.Message)
	assert.Equal(t, "google", e.Error.Details["connector_id"])
	assert.EqualValues(t, 200, e.Error.Details["vault_http_status"])
	e2 := h.calls("GET", "/v0/connectors/google")
	require.Len(t, e2, 1)
	assert.Equal(t, e2[0].Header.Get("X-Request-Id"), e.Error.Details["request_id"])
	assert.Equal(t, e.Error.Details["request_id"], e.Meta["request_id"])
	assert.EqualValues(t, 200, e.Meta["vault_http_status"])
	assert.Empty(t, h.calls("POST", "/v0/connectors/validate"))
	assert.Empty(t, h.calls("POST", "/v0/connectors/execute"))
}

// C6
func TestModuleHashAlreadyProvided(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	h.sim.SetApprovalRules()
	req := gmailSendTo([]any{"bob@example.com"})
	req["module_hash"] = h.sim.PolicyHash("google")
	e := h.call("vaultclaw_connector_execute", m("request", req))
	require.True(t, e.OK, e.Error)
	assert.Empty(t, h.calls("GET", "/v0/connectors/google"))
	assert.Equal(t, req["module_hash"], h.calls("POST", "/v0/connectors/execute")[0].Body["module_hash"])

	// A caller-pinned stale hash is Vault's to reject; it is never replaced.
	req["module_hash"] = "pinned"
	h.sim.ClearRequests()
	e = h.call("vaultclaw_connector_validate", m("request", req))
	require.False(t, e.OK)
	assert.Equal(t, apperr.CodeValidation, e.Error.Code)
	assert.Empty(t, h.calls("GET", "/v0/connectors/google"))
	assert.Equal(t, "pinned", h.calls("POST", "/v0/connectors/validate")[0].Body["module_hash"])
}

// C7
func TestGmailListDefaultAST(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	req := m("connector_id", "google", "verb", "google.gmail.messages.list", "policy_version", "1", "request", m("user_id", "me", "page_limit", 10))
	e := h.call("vaultclaw_connector_execute", m("request", req))
	require.True(t, e.OK, e.Error)
	def := m("pred", m("field", "label", "op", "eq", "value", m("kind", "enum", "enum", "inbox")))
	assert.Equal(t, def, h.calls("POST", "/v0/connectors/validate")[0].Body["query_ast_v1"])
	assert.Equal(t, def, h.calls("POST", "/v0/connectors/execute")[0].Body["query_ast_v1"])
	assert.Len(t, e.Object()["result"].(map[string]any)["messages"], 3)

	own := m("pred", m("field", "from", "op", "contains", "value", "alice"))
	req["query_ast_v1"] = own
	e = h.call("vaultclaw_connector_execute", m("request", req))
	require.True(t, e.OK, e.Error)
	x := h.calls("POST", "/v0/connectors/execute")
	assert.Equal(t, own, x[len(x)-1].Body["query_ast_v1"])
	assert.Len(t, e.Object()["result"].(map[string]any)["messages"], 1)
}

// C8
func TestLegacySecretFieldsNeedModuleHash(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	req := genericGET()
	req["request"].(map[string]any)["token_secret_id"] = "sec_1"
	e := h.call("vaultclaw_connector_validate", m("request", req))
	require.True(t, e.OK, e.Error)
	mh := e.Object()["module_hash"].(map[string]any)
	assert.Equal(t, true, mh["applied"])
	assert.Equal(t, "legacy_secret_binding_fields", mh["reason"])
	assert.Equal(t, h.sim.PolicyHash("generic.http"), mh["module_hash"])
	assert.Equal(t, "generic.http", mh["connector_id"])
	assert.Len(t, h.calls("GET", "/v0/connectors/generic.http"), 1)
	assert.Equal(t, mh["module_hash"], e.Object()["request"].(map[string]any)["module_hash"])
}

// C9: the synchronous approval also carries a handle.
func TestSyncExecuteApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	e := h.call("vaultclaw_connector_execute", m("request", gmailSendTo([]any{"bob@example.com"})))
	require.False(t, e.OK)
	assert.Equal(t, apperr.CodeApprovalRequired, e.Error.Code)
	assert.Equal(t, apperr.CatApproval, e.Error.Category)
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", e.Error.VaultCode)
	assert.EqualValues(t, 409, e.Meta["vault_http_status"])
	pa := e.Error.Details["vault_error"].(map[string]any)["details"].(map[string]any)["pending_approval"].(map[string]any)
	pend := h.sim.PendingApprovals()
	require.Len(t, pend, 1)
	assert.Equal(t, pend[0].PendingID, pa["pending_id"])
	approval := e.Error.Details["approval"].(map[string]any)
	assert.Equal(t, "JOB", approval["kind"])
	assert.Equal(t, pend[0].JobID, approval["job_id"])
	assert.Equal(t, pend[0].ChallengeID, approval["challenge_id"])
	assert.Equal(t, pend[0].PendingID, approval["pending_id"])
	assert.Equal(t, true, approval["pending_id_resolved"])
	assert.Equal(t, "vaultclaw_approval_wait", approval["next_action"].(map[string]any)["tool"])
	require.Len(t, e.Result.Content, 1)
	assert.Contains(t, e.Result.Content[0].(*mcp.TextContent).Text, "pending_id "+pend[0].PendingID)
	assert.Empty(t, h.sim.SentMessages())

	require.NoError(t, h.sim.Approve(pend[0].PendingID))
	require.Len(t, h.sim.SentMessages(), 1)
}

// Document tools: envelope, validation naming the field, and a missing
// document as Vault reports it.
func TestDocumentTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	e := h.call("vaultclaw_document_types_suggest", m("query", " passport "))
	require.True(t, e.OK)
	s := h.calls("POST", "/v0/docs/types/suggest")
	require.Len(t, s, 1)
	assert.Equal(t, m("query", "passport", "top_k", 5.0), s[0].Body)
	assert.Empty(t, s[0].Header.Get("Idempotency-Key"))
	require.True(t, h.call("vaultclaw_document_types_suggest", m("query", "passport", "top_k", -3)).OK)
	assert.Equal(t, m("query", "passport", "top_k", 5.0), h.calls("POST", "/v0/docs/types/suggest")[1].Body)
	bad := h.call("vaultclaw_document_types_suggest", m("query", "passport", "top_k", 2.9))
	require.Equal(t, "MCP_VALIDATION_ERROR", bad.Code(), "a fraction is refused, not truncated")
	assert.Equal(t, "top_k", bad.Details()["field"])
	require.Len(t, h.calls("POST", "/v0/docs/types/suggest"), 2, "nothing reached Vault")
	first := e.Object()["suggestions"].([]any)[0].(map[string]any)
	assert.Equal(t, "identity.passport", first["type_id"])
	assert.EqualValues(t, 80, first["score"])

	e = h.call("vaultclaw_document_types_latest", m("type_id", "identity.passport"))
	require.True(t, e.OK)
	assert.Equal(t, "subject_id=self&type_id=identity.passport", h.calls("GET", "/v0/docs/types/latest")[0].RawQuery)
	assert.Equal(t, "doc_passport_self", e.Object()["document_id"])

	h.sim.RemoveDocument("doc_passport_self")
	e = h.call("vaultclaw_document_types_latest", m("type_id", "identity.passport", "subject_id", "self"))
	require.False(t, e.OK)
	assert.Equal(t, apperr.CodeInternal, e.Error.Code)
	assert.Equal(t, "DOCUMENT_SLOT_UNRESOLVED", e.Error.VaultCode)
	assert.Equal(t, "DOCUMENT_SLOT_UNRESOLVED", e.Error.Details["vault_error"].(map[string]any)["code"])
}

// S1, S2 and the profile tools.
func TestPrerequisiteTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	e := h.call("vaultclaw_slot_bind", m("connector_id", " generic.http ", "verb", "generic.http.request.v1", "slot", "api_key", "secret_id", "sec_demo_api_key"))
	require.True(t, e.OK, e.Error)
	b := h.calls("POST", "/v0/connectors/secrets/slots/bind")
	require.Len(t, b, 1)
	assert.Equal(t, m("connector_id", "generic.http", "verb", "generic.http.request.v1", "slot", "api_key", "secret_id", "sec_demo_api_key"), b[0].Body)
	assert.Regexp(t, `^[0-9a-f]{32}$`, b[0].Header.Get("Idempotency-Key"))

	e = h.call("vaultclaw_slot_bindings_list", m("connector_id", "generic.http", "verb", "generic.http.request.v1"))
	require.True(t, e.OK)
	assert.Len(t, e.Object()["items"], 1)
	e = h.call("vaultclaw_slot_bindings_list", m("connector_id", "generic.http", "verb", "generic.http.request.v1", "include_revoked", true))
	require.True(t, e.OK)
	q := h.calls("GET", "/v0/connectors/secrets/slots/bindings")
	assert.Equal(t, "connector_id=generic.http&verb=generic.http.request.v1", q[0].RawQuery)
	assert.Equal(t, "connector_id=generic.http&include_revoked=true&verb=generic.http.request.v1", q[1].RawQuery)

	prof := m("type", "connector.unbounded.profile.v1", "profile_id", "demo.api", "connector_id", "generic.http", "verb", "generic.http.request.v1",
		"slots", []any{m("slot", "api_key", "required", true, "allowed_modes", []any{"read"}, "allowed_targets", []any{"https://api.example.com"})})
	e = h.call("vaultclaw_unbounded_profile_upsert", m("profile", prof))
	require.True(t, e.OK, e.Error)
	up := h.calls("POST", "/v0/connectors/unbounded/profiles/upsert")
	assert.Equal(t, m("profile", prof), up[0].Body)
	assert.NotEmpty(t, up[0].Header.Get("Idempotency-Key"))

	e = h.call("vaultclaw_unbounded_profiles_list", m("connector_id", "generic.http"))
	require.True(t, e.OK)
	assert.Equal(t, "connector_id=generic.http", h.calls("GET", "/v0/connectors/unbounded/profiles/list")[0].RawQuery)
	assert.Len(t, e.Object()["items"], 1)
	e = h.call("vaultclaw_unbounded_profile_get", m("profile_id", "demo.api"))
	require.True(t, e.OK)
	assert.Equal(t, prof, e.Object()["profile"])
	e = h.call("vaultclaw_unbounded_profile_get", m("profile_id", "missing"))
	assert.Equal(t, apperr.CodeUnboundedProfileInvalid, e.Error.Code)

	// Forwarded unchanged: Vault's own validation answers.
	e = h.call("vaultclaw_unbounded_profile_upsert", m("profile", m("profile_id", "x", "weird", 1)))
	assert.Equal(t, apperr.CodeValidation, e.Error.Code)
	assert.Equal(t, m("profile", m("profile_id", "x", "weird", 1.0)), h.calls("POST", "/v0/connectors/unbounded/profiles/upsert")[1].Body)
}

// generic.http end to end: bind, profile, execute against a real upstream.
func TestExecuteGenericHTTPEndToEnd(t *testing.T) {
	t.Parallel()
	var gotAuth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"green"}`)
	}))
	defer up.Close()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	require.True(t, h.call("vaultclaw_slot_bind", m("connector_id", "generic.http", "verb", "generic.http.request.v1", "slot", "api_key", "secret_id", "sec_demo_api_key")).OK)
	require.True(t, h.call("vaultclaw_unbounded_profile_upsert", m("profile", m("type", "connector.unbounded.profile.v1", "profile_id", "status.api",
		"connector_id", "generic.http", "verb", "generic.http.request.v1", "slots", []any{m("slot", "api_key", "allowed_modes", []any{"read"}, "allowed_targets", []any{up.URL})}))).OK)
	req := m("connector_id", "generic.http", "verb", "generic.http.request.v1", "request", m("method", "GET", "url", up.URL+"/status", "profile_id", "status.api",
		"secret_attachments", []any{m("slot", "api_key", "mode", "read", "target", up.URL, "intent", "http.auth")}))
	e := h.call("vaultclaw_connector_execute", m("request", req))
	require.True(t, e.OK, e.Error)
	assert.Equal(t, "Bearer sk_demo_not_a_real_secret", gotAuth)
	res := e.Object()["result"].(map[string]any)
	assert.EqualValues(t, 200, res["http_status"])
	assert.Equal(t, m("status", "green"), res["body_json"])
}

func TestTokenNeverLogged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{AgentToken: "vc_tok_supersecret_42"}, nil)
	h.configure("vc_tok_supersecret_42", 1000)
	h.call("vaultclaw_connectors_list", nil)
	h.call("vaultclaw_connector_execute", m("request", gmailSendTo("scalar@example.com")))
	h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Status: 500})
	h.call("vaultclaw_connectors_list", nil)
	h.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Latency: 3 * time.Second})
	e := h.call("vaultclaw_connectors_list", nil)
	require.False(t, e.OK)
	logs := h.logs.String()
	assert.Contains(t, logs, "vault call")
	assert.NotContains(t, logs, "supersecret")
	raw, _ := json.Marshal(e)
	assert.NotContains(t, string(raw), "supersecret")
}

// D16 through the tools, against the simulator's own 404s: a wrong id is
// MCP_NOT_FOUND (validation, not retryable) with a message naming what to
// check; codes with a mapping of their own keep it.
func TestVaultNotFoundIsTheCallersWrongID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, vaultsim.Options{}, nil).configured()
	cases := []struct {
		tool  string
		args  map[string]any
		code  string
		vcode string
		step  string
	}{
		{"vaultclaw_connector_get", m("connector_id", "nope"), apperr.CodeNotFound, "CONNECTOR_NOT_FOUND", "vaultclaw_connectors_list"},
		{"vaultclaw_job_get", m("job_id", "job_nope"), apperr.CodeNotFound, "JOB_NOT_FOUND", "vaultclaw_approval_handles_list"},
		{"vaultclaw_approval_wait", m("handle", m("kind", "JOB", "job_id", "job_nope"), "timeout_ms", 1000), apperr.CodeNotFound, "JOB_NOT_FOUND", "check job_id"},
		{"vaultclaw_document_types_latest", m("type_id", "no.such.type"), apperr.CodeNotFound, "NOT_FOUND", "check the ids"},
		{"vaultclaw_plan_run_get", m("run_id", "run_nope"), apperr.CodePlanRunNotFound, "PLAN_RUN_NOT_FOUND", "check run_id"},
		{"vaultclaw_unbounded_profile_get", m("profile_id", "nope"), apperr.CodeUnboundedProfileInvalid, "UNBOUNDED_PROFILE_NOT_FOUND", ""},
	}
	for _, c := range cases {
		e := h.call(c.tool, c.args)
		require.False(t, e.OK, c.tool)
		assert.Equal(t, c.code, e.Error.Code, c.tool)
		assert.Equal(t, c.vcode, e.Error.VaultCode, c.tool)
		assert.Equal(t, apperr.CategoryOf(c.code), e.Error.Category, c.tool)
		assert.False(t, e.Error.Retryable, c.tool)
		assert.EqualValues(t, 404, e.Meta["vault_http_status"], c.tool)
		ve, _ := e.Error.Details["vault_error"].(map[string]any)
		assert.Equal(t, c.vcode, ve["code"], c.tool)
		assert.Contains(t, e.Error.Message, ve["message"], "%s: Vault's message stays first", c.tool)
		if c.step != "" {
			assert.Contains(t, e.Error.Message, c.step, c.tool)
		}
	}
	assert.Equal(t, apperr.CatValidation, apperr.CategoryOf(apperr.CodeNotFound))
}

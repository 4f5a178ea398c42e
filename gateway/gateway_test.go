package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// bleve (imported through the catalog tools) starts its analysis workers at
// package init; they are not ours to stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}

const (
	secretToken = "vc-agent-SECRET-token-4b1d"
	tokenA      = "bearer-token-of-acme-0123456789"
	tokenB      = "bearer-token-of-globex-9876543210"
)

func twoCallers() string {
	return `
[[callers]]
id = "acme-bot"
token_sha256 = "` + policy.HashToken(tokenA) + `"
tenant = "acme"

[[callers]]
id = "globex-bot"
token_sha256 = "` + policy.HashToken(tokenB) + `"
tenant = "globex"
capabilities = ["session_admin", "audit_view"]
`
}

func TestEveryStdioCallIsReceiptedAndTheChainVerifies(t *testing.T) {
	h := newHarness(t, setup{})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken, "base_url": "http://127.0.0.1:9"})
	require.True(t, env.OK, "%+v", env.Error)
	bad := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken, "timeout_ms": "soon"})
	require.Equal(t, apperr.CodeValidation, bad.Code())
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	require.Error(t, err, "unknown tools stay protocol errors")

	rs := h.receipts(audit.Filter{})
	require.Len(t, rs, 4)
	// Newest first: unknown, invalid, configure, status.
	assert.Equal(t, "no_such_tool", rs[0].Tool)
	assert.Equal(t, audit.OutcomeProtocolError, rs[0].Outcome)
	assert.Equal(t, apperr.CodeValidation, rs[1].Outcome)
	assert.Equal(t, "vaultclaw_session_configure", rs[2].Tool)
	assert.Equal(t, audit.OutcomeOK, rs[2].Outcome)
	assert.Equal(t, "vaultclaw_session_status", rs[3].Tool)
	for _, r := range rs {
		assert.Equal(t, audit.TypeToolCall, r.Type)
		assert.Equal(t, "local", r.Caller)
		assert.Equal(t, "stdio", r.Transport)
		assert.Equal(t, "default", r.Scope)
		assert.Regexp(t, `^call_[0-9a-f]{24}$`, r.CallID)
		assert.Regexp(t, `^hmac-sha256:[0-9a-f]{64}$`, r.ParamsHash)
		assert.Regexp(t, `^hmac-sha256:[0-9a-f]{64}$`, r.ResultHash)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, r.Hash)
		assert.Equal(t, "2026-05-01T12:00:00Z", r.Timestamp)
		assert.GreaterOrEqual(t, r.DurationMS, 0.0)
	}
	assert.Equal(t, "session_admin", rs[2].CapabilityUsed)
	assert.Equal(t, rs[1].ParamsHash != rs[2].ParamsHash, true, "different arguments, different digests")

	rep, err := audit.Verify(h.db, audit.VerifyOptions{Verifier: h.key.Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 4, rep.Count)

	// No token anywhere in the file: not in receipts, not in sessions.
	require.NoError(t, h.log.Close())
	require.NoError(t, h.db.Close())
	raw, err := os.ReadFile(h.dbPath)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secretToken)
	assert.NotContains(t, string(raw), "SECRET")
}

func TestReadOnlyOnStdio(t *testing.T) {
	h := newHarness(t, setup{readOnly: true})
	cs := h.stdio()
	names := mcptest.ToolNames(t, cs)
	assert.Contains(t, names, "vaultclaw_session_status")
	assert.Contains(t, names, "vaultclaw_audit_receipts_list")
	assert.NotContains(t, names, "vaultclaw_session_configure")
	assert.NotContains(t, names, "vaultclaw_session_clear")
	assertReadOnlyList(t, h, names)

	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, apperr.CatPolicy, env.Error.Category)
	assert.Equal(t, "read_only", env.Error.Details["reason"])
	env = call(t, cs, "vaultclaw_session_clear", nil)
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)

	rs := h.receipts(audit.Filter{Outcome: apperr.CodePermissionDenied})
	assert.Len(t, rs, 2, "refusals are audited")
}

func TestReadOnlyOverHTTP(t *testing.T) {
	h := newHarness(t, setup{readOnly: true})
	srv := h.httpServer()
	cs := h.httpClient(srv, nil)
	names := mcptest.ToolNames(t, cs)
	assert.NotContains(t, names, "vaultclaw_session_configure")
	assert.Contains(t, names, "vaultclaw_session_status")
	assertReadOnlyList(t, h, names)
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	rs := h.receipts(audit.Filter{Tool: "vaultclaw_session_configure"})
	require.Len(t, rs, 1)
	assert.Equal(t, "anonymous", rs[0].Caller)
	assert.Equal(t, "http", rs[0].Transport)
}

func TestToolsetsNarrowTheServer(t *testing.T) {
	h := newHarness(t, setup{toolsets: []string{"audit"}})
	cs := h.stdio()
	assert.Equal(t, []string{"vaultclaw_audit_receipts_list", "vaultclaw_receipt_emit", "vaultclaw_receipt_prove"}, mcptest.ToolNames(t, cs))
	env := call(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, "toolset_disabled", env.Error.Details["reason"])

	_, err := New(Options{Registry: h.gw.reg, Audit: h.log, Hasher: h.gw.opts.Hasher, Toolsets: []string{"sesion"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown toolset "sesion"`)
}

func TestCapabilityRefusalIsAuditedAndHiddenFromList(t *testing.T) {
	h := newHarness(t, setup{policy: "[stdio]\ncapabilities = [\"audit_view\"]\n"})
	cs := h.stdio()
	assert.Equal(t, []string{"vaultclaw_audit_receipts_list", "vaultclaw_receipt_prove", "vaultclaw_whoami"}, mcptest.ToolNames(t, cs), "whoami needs no capability")
	env := call(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, apperr.CatPolicy, env.Error.Category)
	assert.Equal(t, "missing_capability", env.Error.Details["reason"])
	assert.Equal(t, "session_admin", env.Error.Details["capability"])

	list := call(t, cs, "vaultclaw_audit_receipts_list", map[string]any{"outcome": apperr.CodePermissionDenied})
	require.True(t, list.OK, "%+v", list.Error)
	data := list.Data.(map[string]any)
	require.EqualValues(t, 1, data["count"])
	r := data["receipts"].([]any)[0].(map[string]any)
	assert.Equal(t, "vaultclaw_session_status", r["tool"])
	assert.Equal(t, "session_admin", r["capability_used"])
}

func TestRateLimitRefusalThenRecovery(t *testing.T) {
	h := newHarness(t, setup{policy: `
[stdio.tools.vaultclaw_session_status]
calls_per_minute = 60
burst = 2
`})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	env := call(t, cs, "vaultclaw_session_status", nil)
	require.Equal(t, apperr.CodeRateLimited, env.Code())
	assert.Equal(t, apperr.CatPolicy, env.Error.Category)
	assert.True(t, env.Error.Retryable)
	assert.EqualValues(t, 1000, env.Error.Details["retry_after_ms"])
	// Other tools of the stdio caller stay unlimited.
	for range 30 {
		require.True(t, call(t, cs, "vaultclaw_audit_receipts_list", map[string]any{"limit": 1}).OK)
	}
	h.clock.Advance(999 * time.Millisecond)
	require.Equal(t, apperr.CodeRateLimited, call(t, cs, "vaultclaw_session_status", nil).Code())
	h.clock.Advance(time.Millisecond)
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK, "a token is back after one second")
	assert.Len(t, h.receipts(audit.Filter{Outcome: apperr.CodeRateLimited}), 2)
}

func TestHTTPDefaultRateLimitIsPerTenantNotPerSession(t *testing.T) {
	h := newHarness(t, setup{})
	srv := h.httpServer()
	a := h.httpClient(srv, map[string]string{"X-Accords-Tenant-Id": "t1"})
	for i := range policy.DefaultBurst {
		require.True(t, call(t, a, "vaultclaw_session_status", nil).OK, "call %d", i)
	}
	env := call(t, a, "vaultclaw_session_status", nil)
	require.Equal(t, apperr.CodeRateLimited, env.Code())
	// A new connection (a new stateless session) does not reset the bucket.
	a2 := h.httpClient(srv, map[string]string{"X-Accords-Tenant-Id": "t1"})
	require.Equal(t, apperr.CodeRateLimited, call(t, a2, "vaultclaw_session_status", nil).Code())
	// Another tenant from the same address shares the address's bucket:
	// rotating tenant headers gets nothing more.
	b := h.httpClient(srv, map[string]string{"X-Accords-Tenant-Id": "t2"})
	require.Equal(t, apperr.CodeRateLimited, call(t, b, "vaultclaw_session_status", nil).Code())
	// From another address, t2 has buckets of its own, and t1 is still
	// limited by its tenant's bucket.
	other := h.httpClientFrom(srv, "127.0.0.2", map[string]string{"X-Accords-Tenant-Id": "t2"})
	require.True(t, call(t, other, "vaultclaw_session_status", nil).OK)
	otherT1 := h.httpClientFrom(srv, "127.0.0.3", map[string]string{"X-Accords-Tenant-Id": "t1"})
	require.Equal(t, apperr.CodeRateLimited, call(t, otherT1, "vaultclaw_session_status", nil).Code())
	h.clock.Advance(time.Second)
	require.True(t, call(t, a, "vaultclaw_session_status", nil).OK, "60/min refills a token per second")
}

func post(t *testing.T, url string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPAuthentication(t *testing.T) {
	h := newHarness(t, setup{policy: twoCallers()})
	srv := h.httpServer()
	url := srv.URL + "/v1/mcp"

	resp := post(t, url, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `Bearer realm="accords-mcp"`)
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), apperr.CodeAuthUnauthenticated)

	resp = post(t, url, map[string]string{"Authorization": "Bearer not-a-known-token"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	body, _ = io.ReadAll(resp.Body)
	assert.NotContains(t, string(body), "not-a-known-token", "tokens are never echoed")

	resp = post(t, url, map[string]string{"Authorization": "Basic " + tokenA})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	resp = post(t, url+"?access_token="+tokenA, map[string]string{"Authorization": "Bearer " + tokenA})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "query tokens are refused even with a valid header")

	resp = post(t, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer " + tokenA})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	body, _ = io.ReadAll(resp.Body)
	assert.Contains(t, string(body), "vaultclaw_session_status")

	resp = post(t, url, map[string]string{"Authorization": "Bearer " + tokenA, "X-Tenant-Id": "globex"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a tenant header cannot reach another tenant")
	resp = post(t, url, map[string]string{"Authorization": "Bearer " + tokenA, "X-Tenant-Id": "acme"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Health stays open.
	hr, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	hr.Body.Close()
	assert.Equal(t, http.StatusOK, hr.StatusCode)
}

func TestQueryTokenRefusedWithoutCallersToo(t *testing.T) {
	h := newHarness(t, setup{})
	srv := h.httpServer()
	resp := post(t, srv.URL+"/v1/mcp?token=abc", nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestTenantIsolationBetweenAuthenticatedCallers(t *testing.T) {
	h := newHarness(t, setup{policy: twoCallers()})
	srv := h.httpServer()
	a := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenA})
	b := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenB, "X-Accords-Tenant-Id": "globex"})

	require.True(t, call(t, a, "vaultclaw_session_configure", map[string]any{"token": secretToken}).OK)
	st := call(t, a, "vaultclaw_session_status", nil)
	require.True(t, st.OK)
	assert.Equal(t, true, st.Data.(map[string]any)["configured"])

	st = call(t, b, "vaultclaw_session_status", nil)
	require.True(t, st.OK)
	assert.Equal(t, false, st.Data.(map[string]any)["configured"], "globex does not see acme's session")

	// globex lacks nothing it needs here, but cannot clear acme's session:
	// its clear acts on its own tenant only.
	require.True(t, call(t, b, "vaultclaw_session_clear", nil).OK)
	st = call(t, a, "vaultclaw_session_status", nil)
	assert.Equal(t, true, st.Data.(map[string]any)["configured"])

	la := call(t, a, "vaultclaw_audit_receipts_list", nil)
	require.True(t, la.OK)
	for _, r := range la.Data.(map[string]any)["receipts"].([]any) {
		rm := r.(map[string]any)
		assert.Equal(t, "acme", rm["scope"])
		assert.Equal(t, "acme-bot", rm["caller"])
	}
	lb := call(t, b, "vaultclaw_audit_receipts_list", nil)
	require.True(t, lb.OK)
	recs := lb.Data.(map[string]any)["receipts"].([]any)
	require.Len(t, recs, 2, "globex sees its status and clear calls only")
	for _, r := range recs {
		assert.Equal(t, "globex", r.(map[string]any)["scope"])
	}
	// acme-bot holds "*": every tool but receipt_emit, whose capability "*"
	// grants the stdio caller only; globex-bot only its two capabilities
	// and whoami, which needs none.
	assert.Len(t, mcptest.ToolNames(t, a), len(h.gw.Visible().Tools())-1)
	assert.NotContains(t, mcptest.ToolNames(t, a), "vaultclaw_receipt_emit")
	assert.Equal(t, []string{"vaultclaw_audit_receipts_list", "vaultclaw_receipt_prove", "vaultclaw_session_clear", "vaultclaw_session_configure", "vaultclaw_session_status", "vaultclaw_whoami"}, mcptest.ToolNames(t, b))
}

func TestPolicyReload(t *testing.T) {
	h := newHarness(t, setup{policy: twoCallers()})
	srv := h.httpServer()
	a := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenA})
	require.True(t, call(t, a, "vaultclaw_session_status", nil).OK)
	assert.Contains(t, mcptest.ToolNames(t, a), "vaultclaw_session_status")

	// Broken file: the previous policy stays.
	h.writePolicy("[[callers]]\nid = \"x\"\ntoken_sha256 = \"nope\"\n")
	require.Error(t, h.gw.Reload())
	require.True(t, call(t, a, "vaultclaw_session_status", nil).OK)

	// acme-bot loses session_admin; a new caller appears.
	newToken := "bearer-token-of-initech-555"
	h.writePolicy(`
[[callers]]
id = "acme-bot"
token_sha256 = "` + policy.HashToken(tokenA) + `"
tenant = "acme"
capabilities = ["audit_view"]

[[callers]]
id = "initech"
token_sha256 = "` + policy.HashToken(newToken) + `"
`)
	require.NoError(t, h.gw.Reload())
	env := call(t, a, "vaultclaw_session_status", nil)
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	a2 := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenA})
	assert.Equal(t, []string{"vaultclaw_audit_receipts_list", "vaultclaw_receipt_prove", "vaultclaw_whoami"}, mcptest.ToolNames(t, a2))

	resp := post(t, srv.URL+"/v1/mcp", map[string]string{"Authorization": "Bearer " + tokenB})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "removed caller")
	c := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + newToken})
	require.True(t, call(t, c, "vaultclaw_session_status", nil).OK)
	rs := h.receipts(audit.Filter{Scope: "initech"})
	require.Len(t, rs, 1, "a caller without tenant gets its id as tenant")

	// Stdio sees reloads per call too.
	h.writePolicy("[stdio]\ncapabilities = []\n")
	require.NoError(t, h.gw.Reload())
	cs := h.stdio()
	assert.Equal(t, []string{"vaultclaw_whoami"}, mcptest.ToolNames(t, cs), "only the tool that needs no capability")
	require.Equal(t, apperr.CodePermissionDenied, call(t, cs, "vaultclaw_session_status", nil).Code())
}

func TestNonLoopbackListenRequiresCallers(t *testing.T) {
	h := newHarness(t, setup{})
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "127.0.0.5:1"} {
		assert.NoError(t, h.gw.CheckListen(addr), addr)
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "10.1.2.3:80", "[::]:80", "example.com:80"} {
		err := h.gw.CheckListen(addr)
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "requires bearer authentication")
	}
	h2 := newHarness(t, setup{policy: twoCallers()})
	require.NoError(t, h2.gw.CheckListen("0.0.0.0:8080"))
	// Once public, a reload may not remove every caller.
	h2.writePolicy("[stdio]\nread_only = true\n")
	err := h2.gw.Reload()
	require.Error(t, err)
	assert.True(t, h2.gw.Policy().HasCallers())
}

type brokenRecorder struct {
	*audit.Log
}

func (brokenRecorder) Healthy() (bool, string) { return false, "disk full" }
func (brokenRecorder) AppendSync(audit.Receipt) (audit.Ref, error) {
	return audit.Ref{}, errors.New("disk full")
}

func TestAuditFailureRefusesWritesOnly(t *testing.T) {
	h := newHarness(t, setup{recorder: func(l *audit.Log) Recorder { return brokenRecorder{l} }})
	cs := h.stdio()
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken})
	require.Equal(t, apperr.CodeInternal, env.Code())
	assert.Equal(t, "audit_unavailable", env.Error.Details["reason"])
	assert.True(t, env.Error.Retryable)
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK, "read tools go on")

	all := newHarness(t, setup{onFailure: OnAuditFailureRefuseAll, recorder: func(l *audit.Log) Recorder { return brokenRecorder{l} }})
	require.Equal(t, apperr.CodeInternal, call(t, all.stdio(), "vaultclaw_session_status", nil).Code())

	cont := newHarness(t, setup{onFailure: OnAuditFailureContinue, recorder: func(l *audit.Log) Recorder { return brokenRecorder{l} }})
	require.True(t, call(t, cont.stdio(), "vaultclaw_session_configure", map[string]any{"token": secretToken}).OK)

	_, err := New(Options{Registry: h.gw.reg, Audit: h.log, Hasher: h.gw.opts.Hasher, OnAuditFailure: "maybe"})
	require.Error(t, err)
}

func TestAuditListArguments(t *testing.T) {
	h := newHarness(t, setup{})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	env := call(t, cs, "vaultclaw_audit_receipts_list", map[string]any{"since": "yesterday"})
	require.Equal(t, apperr.CodeValidation, env.Code())
	assert.Equal(t, "since", env.Error.Details["field"])
	env = call(t, cs, "vaultclaw_audit_receipts_list", map[string]any{"limit": 501})
	require.Equal(t, apperr.CodeValidation, env.Code())
	env = call(t, cs, "vaultclaw_audit_receipts_list", map[string]any{"since": "2026-05-01T11:00:00Z", "tool": "vaultclaw_session_status"})
	require.True(t, env.OK)
	assert.EqualValues(t, 1, env.Data.(map[string]any)["count"])
}

func TestAuthenticatedCallerBucketsAndUnknownToolFlood(t *testing.T) {
	h := newHarness(t, setup{policy: twoCallers() + "calls_per_minute = 60\nburst = 2\n"})
	srv := h.httpServer()
	b1 := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenB})
	b2 := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenB})
	a := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenA})
	require.True(t, call(t, b1, "vaultclaw_session_status", nil).OK)
	require.True(t, call(t, b2, "vaultclaw_session_status", nil).OK)
	require.Equal(t, apperr.CodeRateLimited, call(t, b1, "vaultclaw_session_status", nil).Code(), "one bucket per caller across connections")
	require.True(t, call(t, a, "vaultclaw_session_status", nil).OK, "acme-bot has its own bucket (default burst 20)")

	// Unknown tool names share one bucket per caller.
	for range 2 {
		_, err := b1.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"})
		require.Error(t, err)
	}
	env := call(t, b1, "also_nope", nil)
	require.Equal(t, apperr.CodeRateLimited, env.Code())
	assert.Equal(t, "unknown tools", env.Error.Details["tool"])
}

// assertReadOnlyList checks every tool the server offers, including other
// teams' tools: listed exactly when it does not write.
func assertReadOnlyList(t *testing.T, h *harness, names []string) {
	t.Helper()
	for _, tl := range h.gw.reg.Filter(func(t tools.Tool) bool { return t.Toolset != tools.ToolsetDynamic }).Tools() {
		if tl.Writes() {
			assert.NotContains(t, names, tl.Name, "write tool listed in read-only mode")
		} else {
			assert.Contains(t, names, tl.Name, "read tool missing in read-only mode")
		}
	}
}

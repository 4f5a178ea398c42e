package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A token configured while log_params and log_results are on never reaches
// the database file, the export or the logs: the arguments and results
// receipts log are redacted by rule, and the digests still verify.
func TestLoggedParamsNeverHoldAConfiguredToken(t *testing.T) {
	const tok = "vc-agent-RECOGNISABLE-token-7f3a9c2e"
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, setup{policy: "[audit]\nlog_params = true\nlog_results = true\n", logger: logger})
	cs := h.stdio()
	env := call(t, cs, "vaultclaw_session_configure", map[string]any{"base_url": "http://127.0.0.1:9", "token": tok})
	require.True(t, env.OK, "%+v", env.Error)
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	require.True(t, call(t, cs, "vaultclaw_whoami", nil).OK)
	// The token where no field name gives it away: an Authorization value,
	// a secret-looking field of an event body.
	call(t, cs, "vaultclaw_connector_validate", map[string]any{"request": map[string]any{"connector_id": "generic.http",
		"verb": "generic.http.request.v1", "request": map[string]any{"headers": map[string]any{"X-Auth": "Bearer " + tok}}}})
	require.True(t, call(t, cs, "vaultclaw_receipt_emit", map[string]any{"type": "workflow.step",
		"body": map[string]any{"api_token": tok, "step": "send"}}).OK)

	configure := h.receipts(audit.Filter{Tool: "vaultclaw_session_configure"})
	require.Len(t, configure, 1)
	r := configure[0]
	assert.JSONEq(t, `{"base_url":"http://127.0.0.1:9","token":"[redacted]"}`, string(r.Params))
	assert.NotEmpty(t, r.Result, "log_results puts the result's data in the receipt")
	assert.Equal(t, []string{"session", "replaces_local", "mcp", "tool-call"}, r.Tags)
	assert.Equal(t, "mcptest/1", r.Client)
	assert.Equal(t, h.key.Hasher().SumArgs(json.RawMessage(`{"base_url":"http://127.0.0.1:9","token":"`+tok+`"}`)), r.ParamsHash,
		"the digest covers the arguments as sent")

	require.NoError(t, h.log.Flush())
	require.NoError(t, h.log.Checkpoint())
	rep, err := audit.Verify(h.db, audit.VerifyOptions{Verifier: h.key.Verifier()})
	require.NoError(t, err)
	require.Nil(t, rep.Problem)
	var export bytes.Buffer
	n, err := audit.Export(h.db, &export)
	require.NoError(t, err)
	require.Positive(t, n)
	assert.Contains(t, export.String(), `[redacted]`)
	assert.NotContains(t, export.String(), tok, "audit export")
	assert.NotContains(t, logs.String(), tok, "logs")
	raw, err := os.ReadFile(h.dbPath)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte(tok)), "the database file holds the token")
	assert.False(t, bytes.Contains(raw, []byte("RECOGNISABLE")), "the database file holds part of the token")
}

// Without an [audit] section receipts carry digests and tags only.
func TestParamsAreNotLoggedByDefault(t *testing.T) {
	h := newHarness(t, setup{})
	cs := h.stdio()
	require.True(t, call(t, cs, "vaultclaw_session_status", nil).OK)
	rs := h.receipts(audit.Filter{Tool: "vaultclaw_session_status"})
	require.Len(t, rs, 1)
	assert.Nil(t, rs[0].Params)
	assert.Nil(t, rs[0].Result)
	assert.Equal(t, []string{"session", "reads_local", "mcp", "tool-call"}, rs[0].Tags)
	assert.NotEmpty(t, rs[0].ParamsHash)
}

// An emitted event is a receipt of its own in the signed log, tied to the
// emitting call, with a keyed digest of its body (the body itself only
// with log_params), and proven like any other.
func TestReceiptEmitAppendsAProvableEventReceipt(t *testing.T) {
	h := newHarness(t, setup{policy: "[audit]\nlog_params = false\n"})
	cs := h.stdio()
	body := `{"step":"send","n":1.50}`
	env := call(t, cs, "vaultclaw_receipt_emit", map[string]any{"type": "workflow.step", "scroll": "automation",
		"tags": []any{"n8n", "mail"}, "body": json.RawMessage(body)})
	require.True(t, env.OK, "%+v", env.Error)
	data := env.Data.(map[string]any)
	seq := uint64(data["seq"].(float64))
	require.Positive(t, seq)
	ev, err := audit.FindCall(h.db, data["call_id"].(string))
	require.NoError(t, err)
	assert.Equal(t, audit.TypeExternal, ev.Type)
	assert.Equal(t, seq, ev.Seq)
	assert.Equal(t, "workflow.step", ev.EventType)
	assert.Equal(t, "automation", ev.Scroll)
	assert.Equal(t, []string{"n8n", "mail"}, ev.Tags)
	assert.Equal(t, "local", ev.Caller)
	assert.Equal(t, "default", ev.Scope)
	assert.Equal(t, "receipts_emit", ev.CapabilityUsed)
	assert.Equal(t, h.key.Hasher().SumArgs(json.RawMessage(body)), ev.BodyHash)
	assert.Nil(t, ev.Body, "the body is logged only with log_params")
	assert.Equal(t, env.Result.Meta["accords/call_id"], ev.ParentCallID)

	require.NoError(t, h.log.Checkpoint())
	p, err := audit.Prove(h.db, seq)
	require.NoError(t, err)
	_, err = audit.VerifyProof(p, h.key.Verifier(), data["leaf_hash"].(string))
	require.NoError(t, err, "audit prove works on an event receipt")

	bad := call(t, cs, "vaultclaw_receipt_emit", map[string]any{"type": "no spaces", "body": map[string]any{}})
	assert.Equal(t, apperr.CodeValidation, bad.Code())
	bad = call(t, cs, "vaultclaw_receipt_emit", map[string]any{"type": "x"})
	assert.Equal(t, apperr.CodeValidation, bad.Code())

	// With log_params, the body, redacted.
	h.writePolicy("[audit]\nlog_params = true\n")
	require.NoError(t, h.gw.Reload())
	env = call(t, cs, "vaultclaw_receipt_emit", map[string]any{"type": "workflow.step", "body": map[string]any{"password": "p", "step": "send"}})
	require.True(t, env.OK)
	ev, err = audit.FindCall(h.db, env.Data.(map[string]any)["call_id"].(string))
	require.NoError(t, err)
	assert.JSONEq(t, `{"password":"[redacted]","step":"send"}`, string(ev.Body))
}

// receipts_emit: "*" grants it to the stdio caller only; anonymous and
// authenticated HTTP callers hold it when their list names it; read-only
// callers never emit.
func TestReceiptsEmitIsElevated(t *testing.T) {
	h := newHarness(t, setup{})
	anon := h.httpClient(h.httpServer(), nil)
	env := call(t, anon, "vaultclaw_receipt_emit", map[string]any{"type": "t", "body": map[string]any{}})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, "missing_capability", env.Details()["reason"])
	assert.Equal(t, true, env.Details()["elevated"])
	assert.NotContains(t, listNames(t, anon), "vaultclaw_receipt_emit")

	h2 := newHarness(t, setup{policy: `
[anonymous]
capabilities = ["*", "receipts_emit"]

[[callers]]
id = "n8n"
token_sha256 = "` + policy.HashToken(tokenA) + `"
capabilities = ["receipts_emit"]

[[callers]]
id = "reader"
token_sha256 = "` + policy.HashToken(tokenB) + `"
capabilities = ["receipts_emit"]
read_only = true
`})
	srv := h2.httpServer()
	n8n := h2.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenA})
	assert.Equal(t, []string{"vaultclaw_receipt_emit", "vaultclaw_whoami"}, listNames(t, n8n))
	require.True(t, call(t, n8n, "vaultclaw_receipt_emit", map[string]any{"type": "t", "body": map[string]any{}}).OK)
	reader := h2.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenB})
	env = call(t, reader, "vaultclaw_receipt_emit", map[string]any{"type": "t", "body": map[string]any{}})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
	assert.Equal(t, "caller_read_only", env.Details()["reason"])

	ro := newHarness(t, setup{readOnly: true})
	env = call(t, ro.stdio(), "vaultclaw_receipt_emit", map[string]any{"type": "t", "body": map[string]any{}})
	require.Equal(t, apperr.CodePermissionDenied, env.Code())
}

func TestWhoami(t *testing.T) {
	h := newHarness(t, setup{})
	cs := h.stdio()
	env := call(t, cs, "vaultclaw_whoami", nil)
	require.True(t, env.OK, "%+v", env.Error)
	var id whoamiData
	decode := func(data any) {
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		id = whoamiData{}
		require.NoError(t, json.Unmarshal(raw, &id))
	}
	decode(env.Data)
	assert.Equal(t, "local", id.Caller)
	assert.Equal(t, "default", id.Tenant)
	assert.Equal(t, "stdio", id.Transport)
	assert.Equal(t, "mcptest", id.Client.Name)
	assert.Equal(t, "1", id.Client.Version)
	assert.Contains(t, id.Capabilities, "receipts_emit")
	assert.Contains(t, id.Capabilities, "identity")
	assert.False(t, id.ReadOnly)
	assert.Equal(t, []string{"session", "vault", "approvals", "audit"}, id.Toolsets)
	assert.True(t, id.RateLimits.Default.Unlimited, "stdio is unlimited but for the tools that start work in Vault")
	assert.Equal(t, 20.0, id.RateLimits.Tools["vaultclaw_connector_execute"].CallsPerMinute)
	assert.Equal(t, h.log.Origin(), id.Audit.Origin)
	assert.Equal(t, h.key.Verifier().Name(), id.Audit.KeyName)
	assert.False(t, id.Audit.LogParams)
	assert.False(t, id.Vault.Configured)

	require.True(t, call(t, cs, "vaultclaw_session_configure", map[string]any{"token": secretToken, "base_url": "http://127.0.0.1:9"}).OK)
	env = call(t, cs, "vaultclaw_whoami", nil)
	decode(env.Data)
	assert.True(t, id.Vault.Configured)
	raw, _ := json.Marshal(env.Raw)
	assert.NotContains(t, string(raw), secretToken, "never the token")

	// An anonymous HTTP caller: its limits, with what is left of a bucket
	// it used, and no receipts_emit.
	anon := h.httpClient(h.httpServer(), nil)
	require.True(t, call(t, anon, "vaultclaw_session_status", nil).OK)
	decode(call(t, anon, "vaultclaw_whoami", nil).Data)
	assert.Equal(t, "anonymous", id.Caller)
	assert.Equal(t, "http", id.Transport)
	assert.False(t, slices.Contains(id.Capabilities, "receipts_emit"))
	assert.Equal(t, 60.0, id.RateLimits.Default.CallsPerMinute)
	assert.Equal(t, 20, id.RateLimits.Default.Burst)
	left := id.RateLimits.Tools["vaultclaw_session_status"].TokensLeft
	require.NotNil(t, left)
	assert.InDelta(t, 19, *left, 0.01)
}

// whoamiData is what the tests read of vaultclaw_whoami's data.
type whoamiData struct {
	Caller       string `json:"caller"`
	Tenant       string `json:"tenant"`
	Transport    string `json:"transport"`
	Client       struct{ Name, Version string }
	Capabilities []string `json:"capabilities"`
	ReadOnly     bool     `json:"read_only"`
	Toolsets     []string `json:"toolsets"`
	RateLimits   struct {
		Default struct {
			Unlimited      bool    `json:"unlimited"`
			CallsPerMinute float64 `json:"calls_per_minute"`
			Burst          int     `json:"burst"`
		} `json:"default"`
		Tools map[string]struct {
			CallsPerMinute float64  `json:"calls_per_minute"`
			TokensLeft     *float64 `json:"tokens_left"`
		} `json:"tools"`
	} `json:"rate_limits"`
	Audit struct {
		Origin    string `json:"origin"`
		KeyName   string `json:"key_name"`
		LogParams bool   `json:"log_params"`
	} `json:"audit"`
	Vault struct {
		Configured bool `json:"configured"`
	} `json:"vault_session"`
}

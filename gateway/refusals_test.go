package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tokenMallory = "bearer-token-of-mallory-5555555555"

// floodPolicy: globex-bot configures sessions; mallory holds no
// capability at all.
func floodPolicy() string {
	return twoCallers() + `
[[callers]]
id = "mallory"
token_sha256 = "` + policy.HashToken(tokenMallory) + `"
tenant = "mallory-corp"
capabilities = []
`
}

// batch is a JSON-RPC batch of n tools/call of tool.
func batch(n int, tool string) []any {
	msgs := make([]any, n)
	for i := range msgs {
		msgs[i] = mcptest.ToolsCall(i+1, tool, map[string]any{})
	}
	return msgs
}

// postBatch posts msgs as mallory over the bridge (a protocol version
// that still has batches) and decodes the answers.
func postBatch(t *testing.T, url string, token string, msgs []any) (int, []json.RawMessage, []byte) {
	t.Helper()
	rep := mcptest.Post(t, url+"/v1/mcp", msgs, map[string]string{"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2025-03-26"})
	var answers []json.RawMessage
	if rep.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(rep.Body, &answers), string(rep.Body))
	}
	return rep.StatusCode, answers, rep.Body
}

// The attack of issue 37 through the HTTP bridge: a caller with no
// capability posts batches of refused calls against a small count bound.
// The other tenant's session_configure receipt and its others survive
// and verify; the flood is a few receipts and a summary.
func TestRefusalFloodDoesNotPushAnotherTenantsReceiptsOut(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy(), retention: audit.Retention{MaxCount: 40, Floor: 10}})
	srv := h.httpServer()
	victim := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenB})
	env := call(t, victim, "vaultclaw_session_configure", map[string]any{"token": secretToken, "base_url": "http://127.0.0.1:9"})
	require.True(t, env.OK, "%+v", env.Error)
	require.True(t, call(t, victim, "vaultclaw_session_status", nil).OK)
	before := h.receipts(audit.Filter{Scope: "globex"})
	require.Len(t, before, 2)

	const batches = 30
	for range batches {
		status, answers, body := postBatch(t, srv.URL, tokenMallory, batch(transport.DefaultMaxBatch, "vaultclaw_session_status"))
		require.Equal(t, http.StatusOK, status, string(body))
		require.Len(t, answers, transport.DefaultMaxBatch)
		for _, a := range answers {
			var rpc struct {
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal(a, &rpc))
			assert.Contains(t, string(rpc.Result), apperr.CodePermissionDenied)
			assert.Contains(t, string(rpc.Result), "accords/call_id", "every refused call still names the receipt that accounts for it")
		}
	}
	h.gw.FlushRefusals()
	require.NoError(t, h.log.Flush())
	require.NoError(t, h.log.Prune())

	after := h.receipts(audit.Filter{Scope: "globex"})
	require.Equal(t, before, after, "no caller's refusals push another tenant's receipts out")
	rep, err := audit.Verify(h.db, audit.VerifyOptions{Verifier: h.key.Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)

	flood := h.receipts(audit.Filter{Scope: "mallory-corp"})
	require.Len(t, flood, DefaultRefusalsEach+1, "the window's first refusals one by one, the rest in one summary")
	summary := flood[0]
	assert.Equal(t, audit.TypeRefusals, summary.Type)
	assert.Equal(t, apperr.CodePermissionDenied, summary.Outcome)
	assert.Equal(t, "mallory", summary.Caller)
	assert.Equal(t, "vaultclaw_session_status", summary.Tool)
	assert.EqualValues(t, batches*transport.DefaultMaxBatch-DefaultRefusalsEach, summary.Count)
}

// Batches count against the rate limit call by call: a batch bigger than
// the burst gets the burst, the rest refused.
func TestBatchCallsTakeOneRateLimitTokenEach(t *testing.T) {
	h := newHarness(t, setup{policy: twoCallers() + `
[callers.tools.vaultclaw_session_status]
calls_per_minute = 60
burst = 5
`})
	srv := h.httpServer()
	_, answers, body := postBatch(t, srv.URL, tokenB, batch(12, "vaultclaw_session_status"))
	require.Len(t, answers, 12, string(body))
	limited := 0
	for _, a := range answers {
		if strings.Contains(string(a), apperr.CodeRateLimited) {
			limited++
		}
	}
	assert.Equal(t, 7, limited, "5 of 12 calls fit the burst")
}

// Over the limit a batch is refused as a whole, clearly, and nothing in
// it runs or is receipted.
func TestOversizedBatchIsRefusedWhole(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy()})
	srv := h.httpServer()
	status, _, body := postBatch(t, srv.URL, tokenMallory, batch(8000, "vaultclaw_session_status"))
	require.Equal(t, http.StatusBadRequest, status, string(body))
	var rpc struct {
		ID    any `json:"id"`
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &rpc), string(body))
	assert.Nil(t, rpc.ID)
	assert.Equal(t, -32600, rpc.Error.Code)
	assert.Contains(t, rpc.Error.Message, "batch of 8000 messages exceeds the limit of 32")
	assert.Contains(t, rpc.Error.Message, "ACCORDS_MCP_HTTP_MAX_BATCH")
	assert.Equal(t, "batch_too_large", rpc.Error.Data["reason"])
	require.NoError(t, h.log.Flush())
	assert.Empty(t, h.receipts(audit.Filter{}), "nothing in the batch ran")
}

// The summary of a window is written when a refusal of the same key comes
// after the window, and every refusal before the threshold keeps a
// receipt of its own.
func TestRefusalSummaryWindows(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy()})
	srv := h.httpServer()
	cs := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenMallory})
	ids := map[string]bool{}
	for range 25 {
		env := call(t, cs, "vaultclaw_session_status", nil)
		require.Equal(t, apperr.CodePermissionDenied, env.Code())
		ids[env.Result.Meta["accords/call_id"].(string)] = true
	}
	require.NoError(t, h.log.Flush())
	assert.Len(t, h.receipts(audit.Filter{Scope: "mallory-corp"}), DefaultRefusalsEach, "the summary waits for the window's end")
	assert.Len(t, ids, DefaultRefusalsEach+1, "15 calls share the summary's call id")

	h.clock.Advance(DefaultRefusalWindow)
	call(t, cs, "vaultclaw_session_status", nil) // the next window's first refusal
	require.NoError(t, h.log.Flush())
	rs := h.receipts(audit.Filter{Scope: "mallory-corp"})
	require.Len(t, rs, DefaultRefusalsEach+2)
	assert.Equal(t, audit.TypeToolCall, rs[0].Type, "the new window's first refusal has its own receipt")
	assert.Equal(t, audit.TypeRefusals, rs[1].Type)
	assert.EqualValues(t, 15, rs[1].Count)
	assert.True(t, ids[rs[1].CallID], "the summarised calls named the summary")
	assert.Contains(t, rs[1].Note, "15 more calls refused with MCP_PERMISSION_DENIED")
}

// A summary pending when the gateway closes is written then.
func TestRefusalSummaryIsWrittenAtClose(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy()})
	srv := h.httpServer()
	cs := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenMallory})
	for range DefaultRefusalsEach + 3 {
		call(t, cs, "vaultclaw_session_status", nil)
	}
	h.gw.Close()
	require.NoError(t, h.log.Flush())
	rs := h.receipts(audit.Filter{Scope: "mallory-corp", Limit: 1})
	require.Len(t, rs, 1)
	assert.EqualValues(t, 3, rs[0].Count)
	// After Close every refusal has its own receipt again.
	call(t, cs, "vaultclaw_session_status", nil)
	require.NoError(t, h.log.Flush())
	assert.Equal(t, audit.TypeToolCall, h.receipts(audit.Filter{Scope: "mallory-corp", Limit: 1})[0].Type)
}

// With the window off every refusal has its own receipt (as before).
func TestRefusalSummariesOff(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy(), refusalWindow: -1})
	srv := h.httpServer()
	cs := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenMallory})
	for range 15 {
		call(t, cs, "vaultclaw_session_status", nil)
	}
	require.NoError(t, h.log.Flush())
	assert.Len(t, h.receipts(audit.Filter{Scope: "mallory-corp"}), 15)
}

// The flusher writes a window's summary once it has ended, with no
// further call needed.
func TestRefusalSummaryIsWrittenWhenTheWindowEnds(t *testing.T) {
	h := newHarness(t, setup{policy: floodPolicy(), refusalWindow: time.Second})
	srv := h.httpServer()
	cs := h.httpClient(srv, map[string]string{"Authorization": "Bearer " + tokenMallory})
	for range DefaultRefusalsEach + 2 {
		call(t, cs, "vaultclaw_session_status", nil)
	}
	h.clock.Advance(time.Second)
	require.Eventually(t, func() bool {
		_ = h.log.Flush()
		rs := h.receipts(audit.Filter{Scope: "mallory-corp", Limit: 1})
		return len(rs) == 1 && rs[0].Type == audit.TypeRefusals
	}, 10*time.Second, 20*time.Millisecond)
}

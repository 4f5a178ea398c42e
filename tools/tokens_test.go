package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"
)

// What the model reads of each result: every text content item, counted
// with the o200k tokenizer (the count is deterministic, so the budgets are
// tests). D22 says what the text holds.
const (
	// flowsBudget bounds the text of the six flows below together.
	flowsBudget = 7228
	// resultBudget bounds any single result's text.
	resultBudget = 10000
	// narrowBudget bounds a narrow search's answer.
	narrowBudget = 600
)

func o200k(t *testing.T) tokenizer.Codec {
	t.Helper()
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	require.NoError(t, err)
	return enc
}

// textTokens counts the tokens of every text item of res.
func textTokens(t *testing.T, enc tokenizer.Codec, res *mcp.CallToolResult) int {
	t.Helper()
	n := 0
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			k, err := enc.Count(tc.Text)
			require.NoError(t, err)
			n += k
		}
	}
	return n
}

// flowRecorder calls tools and adds up the tokens of what the model reads.
type flowRecorder struct {
	t       *testing.T
	e       *testEnv
	enc     tokenizer.Codec
	flow    string
	total   int
	perFlow map[string]int
	largest int
	log     strings.Builder
}

func (f *flowRecorder) call(name string, args any) mcptest.Envelope {
	f.t.Helper()
	r := f.e.call(name, args)
	n := textTokens(f.t, f.enc, r.Result)
	f.total += n
	f.perFlow[f.flow] += n
	f.largest = max(f.largest, n)
	fmt.Fprintf(&f.log, "  %-28s %-40s %5d tokens\n", f.flow, name, n)
	assertActionable(f.t, name, r)
	return r
}

// assertActionable holds every text to D22: an error's text names its code
// and carries the next step; a handoff's text carries the ids, one
// attestation link and the wait call's arguments.
func assertActionable(t *testing.T, name string, r mcptest.Envelope) {
	t.Helper()
	var text strings.Builder
	for _, c := range r.Result.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	s := text.String()
	require.NotEmpty(t, s, "%s: no text", name)
	if r.OK {
		return
	}
	assert.Contains(t, s, r.Code(), "%s: the text names the error code", name)
	if r.Code() != "MCP_APPROVAL_REQUIRED" {
		return
	}
	a := at(r.Details(), "approval").(map[string]any)
	for _, k := range []string{"job_id", "run_id", "challenge_id", "pending_id"} {
		if id, _ := a[k].(string); id != "" {
			assert.Contains(t, s, id, "%s: the text carries %s", name, k)
		}
	}
	assert.Contains(t, s, "vaultclaw_approval_wait", "%s: the text names the next step", name)
	handle, err := json.Marshal(at(a, "next_action", "arguments"))
	require.NoError(t, err)
	assert.Contains(t, s, string(handle), "%s: the text carries the wait's arguments", name)
	url, _ := a["remote_attestation_url"].(string)
	if url == "" {
		url, _ = at(a, "pending_approval", "remote_attestation_url").(string)
	}
	if url != "" {
		assert.Equal(t, 1, strings.Count(s, url), "%s: one attestation link", name)
	}
}

// decide approves the handoff of r in the simulator and waits for it.
func (f *flowRecorder) approveAndWait(sim *vaultsim.Sim, r mcptest.Envelope) mcptest.Envelope {
	f.t.Helper()
	require.Equal(f.t, "MCP_APPROVAL_REQUIRED", r.Code(), r.Raw)
	args := at(r.Details(), "approval", "next_action", "arguments").(map[string]any)
	pending, _ := at(args, "handle", "pending_id").(string)
	require.NotEmpty(f.t, pending, r.Raw)
	require.NoError(f.t, sim.Approve(pending))
	w := f.call("vaultclaw_approval_wait", map[string]any{"handle": args["handle"], "timeout_ms": 10000, "poll_interval_ms": 100})
	require.True(f.t, w.OK, w.Raw)
	return w
}

// TestResultTokens runs six flows an agent does, against vaultsim with the
// approvals decided, and holds the text the model reads to its budgets.
// go test ./tools -run TestResultTokens -v prints every call's count.
func TestResultTokens(t *testing.T) {
	sim, e := newSimEnv(t)
	f := &flowRecorder{t: t, e: e, enc: o200k(t), perFlow: map[string]int{}}

	// 1. Catalog send through a template: search, render, validate, execute, approve.
	f.flow = "catalog template send"
	s := f.call("vaultclaw_recipes_search", map[string]any{"query": "send an email"})
	require.True(t, s.OK, s.Raw)
	rr := f.call("vaultclaw_template_render", map[string]any{"cookbook_id": "google.workspace", "template_id": "gmail_tpl_plan_send_email_v1",
		"inputs": map[string]any{"to": []any{"bob@example.com"}, "subject": "Q3 numbers", "text_plain": "Attached."}})
	require.True(t, rr.OK, rr.Raw)
	plan := at(rr.Object(), "rendered").(map[string]any)
	v := f.call("vaultclaw_plan_validate", map[string]any{"plan": plan})
	require.True(t, v.OK, v.Raw)
	x := f.call("vaultclaw_plan_execute", map[string]any{"plan": plan})
	f.approveAndWait(sim, x)

	// 2. Direct verb send.
	f.flow = "direct verb send"
	x = f.call("vaultclaw_connector_execute_job", map[string]any{"request": gmailSend("carol@example.com")})
	f.approveAndWait(sim, x)

	// 3. Route resolve, missing facts, retry with them.
	f.flow = "route resolve + fact retry"
	r := f.call("vaultclaw_route_resolve", map[string]any{"request_text": "send email to dave@example.com"})
	require.True(t, r.OK, r.Raw)
	r = f.call("vaultclaw_route_resolve", map[string]any{"request_text": "send email to dave@example.com",
		"context": map[string]any{"facts": map[string]any{"email_subject": "Hello", "email_body": "See you at ten."}}})
	require.True(t, r.OK, r.Raw)

	// 4. Passport workflow: preview, then execute through its approval.
	f.flow = "passport workflow"
	p := f.call("vaultclaw_passport_email_workflow", map[string]any{"request_text": "email my passport to erin@example.com", "execute": false})
	require.True(t, p.OK, p.Raw)
	p = f.call("vaultclaw_passport_email_workflow", map[string]any{"request_text": "email my passport to erin@example.com"})
	if p.Code() == "MCP_APPROVAL_REQUIRED" {
		f.approveAndWait(sim, p)
	} else {
		require.True(t, p.OK, p.Raw)
	}

	// 5. generic.http with an api-key attachment.
	f.flow = "generic.http + api key"
	b := f.call("vaultclaw_slot_bind", map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "slot": "api_key", "secret_id": "sec_demo_api_key"})
	require.True(t, b.OK, b.Raw)
	req := echoRequest(e, "http.auth")
	v = f.call("vaultclaw_connector_validate", map[string]any{"request": req})
	require.True(t, v.OK, v.Raw)
	x = f.call("vaultclaw_connector_execute_job", map[string]any{"request": req})
	if x.Code() == "MCP_APPROVAL_REQUIRED" {
		f.approveAndWait(sim, x)
	} else {
		require.True(t, x.OK, x.Raw)
	}

	// 6. Searches and a listing.
	f.flow = "searches + listing"
	for _, q := range []string{"send gmail draft", "http get json with api key", "trash a message"} {
		s = f.call("vaultclaw_recipes_search", map[string]any{"query": q})
		require.True(t, s.OK, s.Raw)
	}
	l := f.call("vaultclaw_cookbooks_list", map[string]any{})
	require.True(t, l.OK, l.Raw)

	t.Logf("result text per call (o200k):\n%s", f.log.String())
	t.Logf("per flow: %v; total %d tokens (budget %d), largest result %d", f.perFlow, f.total, flowsBudget, f.largest)
	assert.LessOrEqual(t, f.total, flowsBudget, "the six flows' result text is over budget")
	assert.LessOrEqual(t, f.largest, resultBudget, "a result's text is over budget")
}

// TestNarrowSearchTokens: a narrow query over the predecessor's Gmail
// cookbook answers in a few hundred tokens.
func TestNarrowSearchTokens(t *testing.T) {
	_, e := newSimEnv(t)
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		imp := e.call("vaultclaw_cookbook_import", map[string]any{"bundle": obj(tools.PredecessorBundle(t, v)), "conflict_policy": "OVERWRITE"})
		require.True(t, imp.OK, imp.Raw)
	}
	enc := o200k(t)
	deadline := time.Now().Add(10 * time.Second)
	var r mcptest.Envelope
	for {
		r = e.call("vaultclaw_recipes_search", map[string]any{"query": "send gmail draft", "cookbook_id": "google.workspace"})
		require.True(t, r.OK, r.Raw)
		if len(at(r.Object(), "items").([]any)) > 0 || time.Now().After(deadline) {
			break
		}
	}
	n := textTokens(t, enc, r.Result)
	t.Logf("\"send gmail draft\": %d tokens, %d hits", n, len(at(r.Object(), "items").([]any)))
	assert.LessOrEqual(t, n, narrowBudget)
}

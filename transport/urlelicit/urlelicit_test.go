package urlelicit_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/transport/urlelicit"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	done := testenv.IsolateConfigDir()
	code := m.Run()
	done()
	os.Exit(code)
}

// urlCaps declares URL-mode elicitation.
func urlCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
}

// person plays the user: shown the attestation page, they approve (or
// deny) in Vaultclaw and tell the client they are done.
type person struct {
	t      *testing.T
	sim    *vaultsim.Server
	deny   bool
	action string // the client's answer (default accept)

	mu    sync.Mutex
	seen  []*mcp.ElicitParams
	done  []string // elicitation ids completed
	calls int
}

func (p *person) handler(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.seen = append(p.seen, req.Params)
	p.calls++
	p.mu.Unlock()
	w := approvaltest.Waiting(p.t, p.sim)
	assert.Equal(p.t, "url", req.Params.Mode, "never a form: the decision is made in Vaultclaw")
	assert.True(p.t, strings.HasSuffix(req.Params.URL, "/_sim/approvals/"+w.PendingID), req.Params.URL)
	assert.Equal(p.t, "vaultclaw-"+w.PendingID, req.Params.ElicitationID)
	assert.Contains(p.t, req.Params.Message, "google.gmail.send.v1")
	assert.Nil(p.t, req.Params.RequestedSchema)
	if p.action != "" && p.action != "accept" {
		return &mcp.ElicitResult{Action: p.action}, nil
	}
	if p.deny {
		require.NoError(p.t, p.sim.Deny(w.PendingID))
	} else {
		require.NoError(p.t, p.sim.Approve(w.PendingID))
	}
	return &mcp.ElicitResult{Action: "accept"}, nil
}

func (p *person) completed(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	p.mu.Lock()
	p.done = append(p.done, req.Params.ElicitationID)
	p.mu.Unlock()
}

func (p *person) client(tasksExt bool, opts *mcp.ClientOptions) *mcp.Client {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.ElicitationHandler = p.handler
	opts.ElicitationCompleteHandler = p.completed
	return approvaltest.NewClient(tasksExt, urlCaps(), opts)
}

func callJob(t *testing.T, c *approvaltest.Client) mcptest.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return mcptest.CallWith(t, ctx, c, &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: approvaltest.GmailSend("bob@example.com")})
}

func requireSent(t *testing.T, env mcptest.Envelope) {
	t.Helper()
	job := mcptest.RequireOK(t, env)["response"].(map[string]any)["job"].(map[string]any)
	assert.Equal(t, "SUCCEEDED", job["status"])
	assert.Equal(t, "SENT", job["result"].(map[string]any)["status"])
}

func TestURLElicitationRoundTripOn20260728(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	p := &person{t: t, sim: e.Sim}
	c := approvaltest.Connect(t, e.App.MCPServer(), p.client(false, nil), "")
	require.Equal(t, "2026-07-28", c.InitializeResult().ProtocolVersion)

	env := callJob(t, c)
	requireSent(t, env)
	assert.Equal(t, 1, p.calls)
	require.Len(t, e.Sim.SentMessages(), 1)
	assert.Len(t, e.Sim.RequestsTo("POST", "/v0/connectors/execute-job"), 1, "the retry does not run the tool again")

	// On the wire: input_required with one URL elicitation and a sealed
	// state, then the retry carrying the answer and the state back.
	var calls []map[string]any
	for _, m := range c.Rec.Messages() {
		var msg map[string]any
		require.NoError(t, json.Unmarshal(m.Raw, &msg))
		calls = append(calls, msg)
	}
	var first, retry map[string]any
	for i, m := range calls {
		if m["method"] != "tools/call" {
			continue
		}
		if first == nil {
			first = response(calls[i+1:], m["id"])
			continue
		}
		retry = m["params"].(map[string]any)
	}
	require.NotNil(t, first)
	require.NotNil(t, retry)
	assert.Equal(t, "input_required", first["resultType"])
	ir := first["inputRequests"].(map[string]any)[urlelicit.InputKey].(map[string]any)
	assert.Equal(t, "elicitation/create", ir["method"])
	assert.Equal(t, "url", ir["params"].(map[string]any)["mode"])
	st := first["requestState"].(string)
	assert.True(t, strings.HasPrefix(st, "rs1."))
	assert.NotContains(t, st, "bob@example.com", "sealed, not encoded")
	assert.Equal(t, st, retry["requestState"])
	assert.Equal(t, "accept", retry["inputResponses"].(map[string]any)[urlelicit.InputKey].(map[string]any)["action"])
}

// response finds the response with id among msgs.
func response(msgs []map[string]any, id any) map[string]any {
	for _, m := range msgs {
		if m["method"] == nil && m["id"] == id {
			r, _ := m["result"].(map[string]any)
			return r
		}
	}
	return nil
}

func TestURLElicitationRoundTripOn20251125(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	p := &person{t: t, sim: e.Sim}
	c := approvaltest.Connect(t, e.App.MCPServer(), p.client(false, nil), "2025-11-25")
	require.Equal(t, "2025-11-25", c.InitializeResult().ProtocolVersion)

	env := callJob(t, c)
	requireSent(t, env)
	require.Len(t, p.seen, 1, "elicitation/create in url mode on the session")
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.done) == 1
	}, 5*time.Second, 20*time.Millisecond, "notifications/elicitation/complete once decided")
	assert.Equal(t, p.seen[0].ElicitationID, p.done[0])
	assert.Len(t, e.Sim.RequestsTo("POST", "/v0/connectors/execute-job"), 1)
}

func TestURLElicitationDenied(t *testing.T) {
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("version "+v, func(t *testing.T) {
			e := approvaltest.NewEnv(t, vaultsim.Options{})
			p := &person{t: t, sim: e.Sim, deny: true}
			c := approvaltest.Connect(t, e.App.MCPServer(), p.client(false, nil), v)
			env := callJob(t, c)
			er := mcptest.RequireCode(t, env, "MCP_APPROVAL_DENIED")
			assert.Equal(t, "DENY", er.Details["decision_outcome"])
			assert.Empty(t, e.Sim.SentMessages())
		})
	}
}

func TestDeclinedElicitationGivesTheHandoff(t *testing.T) {
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("version "+v, func(t *testing.T) {
			e := approvaltest.NewEnv(t, vaultsim.Options{})
			p := &person{t: t, sim: e.Sim, action: "decline"}
			c := approvaltest.Connect(t, e.App.MCPServer(), p.client(false, nil), v)
			env := callJob(t, c)
			er := mcptest.RequireCode(t, env, "MCP_APPROVAL_REQUIRED")
			a := er.Details["approval"].(map[string]any)
			w := approvaltest.Waiting(t, e.Sim)
			assert.Equal(t, w.JobID, a["job_id"])
			assert.Equal(t, "vaultclaw_approval_wait", a["next_action"].(map[string]any)["tool"])
			require.Len(t, env.Result.Content, 1, "one text (D22)")
			assert.Contains(t, env.Result.Content[0].(*mcp.TextContent).Text, "vaultclaw_approval_wait", "the text names the next step")
			assert.Equal(t, vaultsim.StateWaiting, w.State, "declining the page decides nothing")
		})
	}
}

func TestTasksWinOverURLElicitation(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	p := &person{t: t, sim: e.Sim}
	c := approvaltest.Connect(t, e.App.MCPServer(), p.client(true, nil), "")
	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	assert.Equal(t, "task", res["resultType"])
	assert.Zero(t, p.calls, "no elicitation")
}

func TestRequestStateIsBoundToTheCall(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(false, urlCaps(),
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}), "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := approvaltest.GmailSend("bob@example.com")
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: args})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	st := res.RequestState
	accept := mcp.InputResponseMap{urlelicit.InputKey: &mcp.ElicitResult{Action: "accept"}}

	for name, p := range map[string]*mcp.CallToolParams{
		"other arguments": {Name: "vaultclaw_connector_execute_job", Arguments: approvaltest.GmailSend("eve@example.com"), InputResponses: accept, RequestState: st},
		"other tool":      {Name: "vaultclaw_plan_execute", Arguments: map[string]any{"plan": map[string]any{}}, InputResponses: accept, RequestState: st},
		"altered state":   {Name: "vaultclaw_connector_execute_job", Arguments: args, InputResponses: accept, RequestState: st[:len(st)-4] + "AAAA"},
		"foreign state":   {Name: "vaultclaw_connector_execute_job", Arguments: args, InputResponses: accept, RequestState: "rs1.bm90IG91cnM"},
	} {
		env := mcptest.CallWith(t, ctx, c, p)
		er := mcptest.RequireCode(t, env, "MCP_VALIDATION_ERROR")
		assert.Equal(t, "requestState", er.Details["field"], name)
	}
	assert.Len(t, e.Sim.RequestsTo("POST", "/v0/connectors/execute-job"), 1, "a refused retry runs nothing")

	// Key order and spacing of the same arguments do not matter.
	require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
	raw := json.RawMessage(`{ "request" : {"verb":"google.gmail.send.v1","policy_version":"1","connector_id":"google",
		"request":{"text_plain":"Attached.","subject":"Q3 numbers","to":["bob@example.com"],"user_id":"me"}}}`)
	env := mcptest.CallWith(t, ctx, c, &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: raw, InputResponses: accept, RequestState: st})
	requireSent(t, env)
}

func TestStatelessHTTPBeforeMRTRGetsTheHandoff(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	p := &person{t: t, sim: e.Sim}
	c := approvaltest.ConnectHTTP(t, e.HTTP(), p.client(false, nil), "2025-11-25", nil)
	env := callJob(t, c)
	mcptest.RequireCode(t, env, "MCP_APPROVAL_REQUIRED")
	assert.Zero(t, p.calls, "stateless HTTP cannot carry elicitation/create; the handoff still holds")
}

func TestURLElicitationOverHTTPOn20260728(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	p := &person{t: t, sim: e.Sim}
	c := approvaltest.ConnectHTTP(t, e.HTTP(), p.client(false, nil), "", nil)
	require.Equal(t, "2026-07-28", c.InitializeResult().ProtocolVersion)
	requireSent(t, callJob(t, c))
	assert.Equal(t, 1, p.calls)
}

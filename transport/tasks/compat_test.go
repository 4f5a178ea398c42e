package tasks_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// baseline is a server built from env's app without the Tasks extension
// and URL elicitation, gateway included: what they add must change no
// other answer.
func baseline(t *testing.T, e *approvaltest.Env) *mcp.Server {
	t.Helper()
	b := *e.App.Builder
	b.Extensions, b.WrapTool = nil, nil
	g, err := gateway.New(gateway.Options{Registry: e.App.Registry, Servers: &b, Audit: e.App.Audit, Hasher: e.App.AuditKey.Hasher()})
	require.NoError(t, err)
	b.Middleware = []mcp.Middleware{transport.Principal(g.Principal), transport.CallContext(), transport.Drain(e.App.Drain), g.ListFilter, g.Calls}
	return g.StdioServer()
}

// volatile are the values that differ between two identical calls: ids
// and digests chosen at random or from the clock, and the simulators'
// ports. Everything else must be equal byte for byte.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "HASH"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "REQUEST_ID"},
	{regexp.MustCompile(`call_[0-9a-f]{24}`), "CALL_ID"},
	{regexp.MustCompile(`\b((?:job|run|ach|apj|msg|thr|drf)_[0-9]+)_[0-9a-f]{6}\b`), "${1}_ID"},
	{regexp.MustCompile(`\bph_([a-z.]+)_[0-9a-f]{16}\b`), "ph_${1}_HASH"},
	{regexp.MustCompile(`127\.0\.0\.1:[0-9]+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`\b1[0-9]{12}\b`), "UNIX_MS"},
	{regexp.MustCompile(`"seq":[0-9]+`), `"seq":N`},
	{regexp.MustCompile(`accords-mcp/audit/[0-9a-f]{16}`), "accords-mcp/audit/LOG"},
}

func normalize(raw []byte) string {
	s := string(raw)
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// handoffCalls are the handoffs of the tools that may become tasks.
func handoffCalls() []struct {
	tool string
	args map[string]any
} {
	plan := map[string]any{"plan": map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "send", "steps": []any{
		map[string]any{"step_id": "send", "connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
			"request_base": map[string]any{"user_id": "me", "to": []any{"ops@example.com"}, "subject": "Status", "text_plain": "All green."}}}}}
	return []struct {
		tool string
		args map[string]any
	}{
		{"vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com")},
		{"vaultclaw_connector_execute", approvaltest.GmailSend("bob@example.com")},
		{"vaultclaw_plan_execute", plan},
		{"vaultclaw_passport_email_workflow", map[string]any{"recipient_email": "bob@example.com"}},
	}
}

// rawResults calls every handoff tool on srv and returns each raw
// tools/call result.
func rawResults(t *testing.T, srv *mcp.Server, version string) []string {
	t.Helper()
	c := approvaltest.Connect(t, srv, approvaltest.NewClient(false, nil, nil), version)
	var out []string
	for _, call := range handoffCalls() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
		cancel()
		require.NoError(t, err)
		env, err := mcptest.Decode(res)
		require.NoError(t, err)
		mcptest.RequireCode(t, env, "MCP_APPROVAL_REQUIRED")
		_, resp, err := c.Rec.LastResponse("tools/call")
		require.NoError(t, err)
		var rpc struct {
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(resp, &rpc))
		out = append(out, normalize(rpc.Result))
	}
	return out
}

// TestClientsWithoutEitherCapabilityGetTheHandoffUnchanged compares, on
// both protocol eras and on a bare HTTP post, what a client that declares
// neither the Tasks extension nor URL elicitation receives with what the
// server without either feature sends, for the same calls against
// identical simulators.
func TestClientsWithoutEitherCapabilityGetTheHandoffUnchanged(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2026-07-28", "2025-11-25", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			now := newEnvs(t)
			got := rawResults(t, now[0].App.MCPServer(), version)
			want := rawResults(t, baseline(t, now[1]), version)
			require.Len(t, got, len(handoffCalls()))
			for i := range got {
				require.Equal(t, want[i], got[i], "%s", handoffCalls()[i].tool)
			}
		})
	}
	t.Run("bare HTTP post", func(t *testing.T) {
		envs := newEnvs(t)
		url := envs[0].HTTP()
		for _, call := range handoffCalls() {
			rep := mcptest.Post(t, url, mcptest.ToolsCall(1, call.tool, call.args), nil)
			require.Equal(t, 200, rep.StatusCode, string(rep.Body))
			// The same call through the in-memory baseline of the second
			// environment (the bridge adds nothing to a result).
			var rpc struct {
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal(rep.Body, &rpc))
			got := normalize(rpc.Result)
			c := approvaltest.Connect(t, baseline(t, envs[1]), approvaltest.NewClient(false, nil, nil), "2025-11-25")
			_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
			require.NoError(t, err)
			_, resp, err := c.Rec.LastResponse("tools/call")
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(resp, &rpc))
			require.Equal(t, normalize(rpc.Result), got, call.tool)
		}
	})
}

// newEnvs are two identical environments, the same clock for both
// simulators so expiries match.
func newEnvs(t *testing.T) [2]*approvaltest.Env {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	opts := vaultsim.Options{Now: func() time.Time { return at }}
	return [2]*approvaltest.Env{approvaltest.NewEnv(t, opts), approvaltest.NewEnv(t, opts)}
}

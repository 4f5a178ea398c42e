package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

var ctxTimeout = 20 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), ctxTimeout)
	t.Cleanup(cancel)
	return c
}

// startTask calls execute-job for a Gmail send as a task-declaring client
// and checks the CreateTaskResult.
func startTask(t *testing.T, c *approvaltest.Client) (string, map[string]any) {
	t.Helper()
	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	require.Equal(t, "task", res["resultType"], "%v", res)
	require.Equal(t, "working", res["status"])
	id := approvaltest.Str(res, "taskId")
	require.Regexp(t, `^task_[A-Za-z0-9_-]{43}$`, id, "256 random bits, URL-safe")
	return id, res
}

func TestApproveCompletesWithTheExecutionResult(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	assert.Equal(t, "2026-07-28", c.InitializeResult().ProtocolVersion)
	assert.Contains(t, c.InitializeResult().Capabilities.Extensions, tasks.ExtensionID, "server/discover advertises the extension")

	id, res := startTask(t, c)
	p := approvaltest.Waiting(t, e.Sim)
	msg := approvaltest.Str(res, "statusMessage")
	assert.Contains(t, msg, "google.gmail.send.v1")
	assert.Contains(t, msg, "job "+p.JobID)
	assert.Contains(t, msg, "/_sim/approvals/"+p.PendingID, "the attestation link")
	assert.EqualValues(t, 250, res["pollIntervalMs"])
	ttl := int64(res["ttlMs"].(float64))
	assert.InDelta(t, time.Until(p.ExpiresAt).Milliseconds(), ttl, 3000, "ttlMs is the approval's expiry")
	meta := res["_meta"].(map[string]any)
	assert.NotEmpty(t, meta["accords/call_id"], "the call's receipt")
	handoff := meta["accords/approval"].(map[string]any)
	assert.Equal(t, p.PendingID, handoff["pending_id"], "the handoff, for the polling fallback")
	assert.Equal(t, "vaultclaw_approval_wait", handoff["next_action"].(map[string]any)["tool"])

	// Stored before the answer: it resolves at once, and stays working.
	got, err := c.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, "complete", got.ResultType)
	assert.Equal(t, task.StatusWorking, got.Status)
	// Still working after the task has polled Vault twice more.
	jobPath := "/v0/jobs/" + p.JobID
	seen := len(e.Sim.RequestsTo("GET", jobPath))
	require.Eventually(t, func() bool { return len(e.Sim.RequestsTo("GET", jobPath)) >= seen+2 }, 10*time.Second, 20*time.Millisecond, "the task polls Vault")
	got, err = c.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusWorking, got.Status, "nothing decided yet")

	// The durable handle lists the task.
	env := mcptest.Call(t, c, "vaultclaw_approval_handles_list", nil)
	items := mcptest.RequireOK(t, env)["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "working", items[0].(map[string]any)["task"].(map[string]any)["status"])

	require.NoError(t, e.Sim.Approve(p.PendingID))
	done := c.AwaitTask(t, id)
	require.Equal(t, task.StatusCompleted, done.Status, done.StatusMessage)
	assert.Contains(t, done.StatusMessage, "Approved")
	assert.Zero(t, done.PollIntervalMS, "nothing left to poll")
	res2, env := approvaltest.ToolResult(t, done.Result)
	assert.False(t, res2.IsError)
	data := mcptest.RequireOK(t, env)
	job := data["response"].(map[string]any)["job"].(map[string]any)
	assert.Equal(t, "SUCCEEDED", job["status"])
	assert.Equal(t, p.JobID, job["job_id"])
	assert.Equal(t, "SENT", job["result"].(map[string]any)["status"])
	assert.Equal(t, "google.gmail.send.v1", data["request"].(map[string]any)["verb"])
	assert.NotNil(t, data["preflight"].(map[string]any)["module_hash"])
	require.Len(t, e.Sim.SentMessages(), 1, "the mail went out once")

	// The same keys as a job that needs no approval answers with.
	e.Sim.SetApprovalRules(vaultsim.ApprovalRule{Action: vaultsim.ActionAllow})
	direct := mcptest.RequireOK(t, mcptest.Call(t, c, "vaultclaw_connector_execute_job", approvaltest.GmailSend("carol@example.com")))
	assert.ElementsMatch(t, keys(direct), keys(data))

	// A receipt for the completion, tied to the call that created it.
	assert.Equal(t, meta["accords/call_id"], findTaskReceipt(t, e, "ok").ParentCallID)
	assert.NotEmpty(t, res2.Meta["accords/call_id"], "the completion receipt is referenced from the result")

	// The handle follows the task.
	env = mcptest.Call(t, c, "vaultclaw_approval_handles_list", map[string]any{"states": "SUCCEEDED"})
	items = mcptest.RequireOK(t, env)["items"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, "completed", items[0].(map[string]any)["task"].(map[string]any)["status"])
	assert.Zero(t, e.App.Tasks.Following(), "the poller ended")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func findTaskReceipt(t *testing.T, e *approvaltest.Env, outcome string) audit.Receipt {
	t.Helper()
	require.NoError(t, e.App.Audit.Flush())
	rs, err := audit.List(e.App.DB, audit.Filter{Outcome: outcome, Limit: 500})
	require.NoError(t, err)
	for _, r := range rs {
		if r.Type == audit.TypeTask {
			assert.Equal(t, "vaultclaw_connector_execute_job", r.Tool)
			assert.NotEmpty(t, r.TaskRef)
			return r
		}
	}
	t.Fatalf("no task receipt with outcome %s", outcome)
	return audit.Receipt{}
}

func TestDenyCompletesWithTheDenyEnvelope(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	id, _ := startTask(t, c)
	p := approvaltest.Waiting(t, e.Sim)
	require.NoError(t, e.Sim.Deny(p.PendingID))

	done := c.AwaitTask(t, id)
	require.Equal(t, task.StatusCompleted, done.Status, "a denial is a tool result, not a failed task")
	res, env := approvaltest.ToolResult(t, done.Result)
	assert.True(t, res.IsError)
	e1 := mcptest.RequireCode(t, env, "MCP_APPROVAL_DENIED")
	assert.Equal(t, "approval", e1.Category)
	assert.False(t, e1.Retryable)
	assert.Equal(t, "CONNECTOR_APPROVAL_RULE_DENIED", e1.VaultCode)
	assert.Equal(t, "DENY", e1.Details["decision_outcome"])
	assert.Equal(t, "DENIED", e1.Details["terminal_status"])
	assert.Equal(t, false, e1.Details["expired"])
	assert.Equal(t, p.JobID, e1.Details["handle"].(map[string]any)["job_id"])
	assert.Contains(t, done.StatusMessage, "Denied")
	assert.Empty(t, e.Sim.SentMessages())
	findTaskReceipt(t, e, "MCP_APPROVAL_DENIED")
}

func TestExpiredCompletesWithTheExpiredEnvelope(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{ApprovalTTL: 1500 * time.Millisecond})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	id, res := startTask(t, c)
	assert.InDelta(t, 1500, res["ttlMs"], 500, "ttlMs follows the approval's expiry")

	done := c.AwaitTask(t, id)
	require.Equal(t, task.StatusCompleted, done.Status)
	_, env := approvaltest.ToolResult(t, done.Result)
	e1 := mcptest.RequireCode(t, env, "MCP_APPROVAL_DENIED")
	assert.Equal(t, "APPROVAL_DECISION_EXPIRED", e1.VaultCode)
	assert.Equal(t, "EXPIRED", e1.Details["terminal_status"])
	assert.Equal(t, true, e1.Details["expired"])
	assert.Equal(t, "DENY", e1.Details["decision_outcome"])
	assert.Contains(t, done.StatusMessage, "expired")
	assert.Greater(t, *done.TTLMS, int64(24*time.Hour/time.Millisecond), "a finished task is kept for the retention, and says so")
}

func TestCancelStopsPollingAndLeavesTheApproval(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	id, _ := startTask(t, c)
	p := approvaltest.Waiting(t, e.Sim)
	jobPath := "/v0/jobs/" + p.JobID
	require.Eventually(t, func() bool { return len(e.Sim.RequestsTo("GET", jobPath)) >= 2 }, 10*time.Second, 50*time.Millisecond, "the task polls Vault")

	require.NoError(t, c.CancelTask(ctx(t), id))
	got, err := c.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusCancelled, got.Status)
	assert.Contains(t, got.StatusMessage, "untouched in Vaultclaw")
	polls := len(e.Sim.RequestsTo("GET", jobPath))
	time.Sleep(1500 * time.Millisecond) // six poll intervals
	assert.Len(t, e.Sim.RequestsTo("GET", jobPath), polls, "no Vault polls after tasks/cancel")
	assert.Zero(t, e.App.Tasks.Following())

	// The approval is the person's to decide, still.
	assert.Equal(t, vaultsim.StateWaiting, approvaltest.Waiting(t, e.Sim).State)
	require.NoError(t, c.CancelTask(ctx(t), id), "a second cancel is acknowledged too")
	require.NoError(t, e.Sim.Approve(p.PendingID))
	time.Sleep(600 * time.Millisecond)
	got, err = c.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusCancelled, got.Status, "a cancelled task never changes again")
	findTaskReceipt(t, e, "cancelled")

	// The polling wait still follows the handle.
	handle := got.Wire
	_ = handle
	env := mcptest.Call(t, c, "vaultclaw_approval_wait", map[string]any{"handle": map[string]any{"kind": "JOB", "job_id": p.JobID}, "timeout_ms": 5000})
	assert.Equal(t, "ALLOW", mcptest.RequireOK(t, env)["decision_outcome"])
}

func TestTaskSurvivesARestart(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	id, _ := startTask(t, c)
	p := approvaltest.Waiting(t, e.Sim)
	_ = c.Close()

	e.Restart()
	c = approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	got, err := c.GetTask(ctx(t), id)
	require.NoError(t, err, "the task is still there")
	assert.Equal(t, task.StatusWorking, got.Status)
	assert.Equal(t, 1, e.App.Tasks.Following(), "and followed again")

	require.NoError(t, e.Sim.Approve(p.PendingID))
	done := c.AwaitTask(t, id)
	require.Equal(t, task.StatusCompleted, done.Status)
	_, env := approvaltest.ToolResult(t, done.Result)
	assert.Equal(t, "SUCCEEDED", mcptest.RequireOK(t, env)["response"].(map[string]any)["job"].(map[string]any)["status"])
}

// rpcCode is the JSON-RPC error code of err.
func rpcCode(t *testing.T, err error) int64 {
	t.Helper()
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je), "%v is not a JSON-RPC error", err)
	return je.Code
}

func TestAnotherTenantCannotSeeTheTask(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	url := e.HTTP()
	alpha := approvaltest.ConnectHTTP(t, url, approvaltest.NewClient(true, nil, nil), "", map[string]string{"X-Accords-Tenant-Id": "alpha"})
	beta := approvaltest.ConnectHTTP(t, url, approvaltest.NewClient(true, nil, nil), "", map[string]string{"X-Accords-Tenant-Id": "beta"})
	id, _ := startTask(t, alpha)

	got, err := alpha.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusWorking, got.Status)

	_, err = beta.GetTask(ctx(t), id)
	require.Error(t, err)
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, err), "refused as not found: the id reveals nothing")
	assert.Contains(t, err.Error(), "Task not found")
	err = beta.CancelTask(ctx(t), id)
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, err))
	got, err = alpha.GetTask(ctx(t), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusWorking, got.Status, "beta's cancel did nothing")

	_, err = alpha.GetTask(ctx(t), id+"x")
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, err), "an unknown id")

	// A client that does not declare the extension gets -32021.
	plain := approvaltest.ConnectHTTP(t, url, approvaltest.NewClient(false, nil, nil), "", map[string]string{"X-Accords-Tenant-Id": "alpha"})
	_, err = plain.GetTask(ctx(t), id)
	require.Error(t, err)
	assert.EqualValues(t, mcp.CodeMissingRequiredClientCapabilities, rpcCode(t, err))
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je))
	var data map[string]any
	require.NoError(t, json.Unmarshal(je.Data, &data))
	assert.Contains(t, data["requiredCapabilities"].(map[string]any)["extensions"], tasks.ExtensionID)
}

// TestEveryHandoffToolCompletesAsItsSynchronousPath runs a task for each
// tool that may hand off and checks the completed result against what the
// tool answers when no approval is needed.
func TestEveryHandoffToolCompletesAsItsSynchronousPath(t *testing.T) {
	t.Parallel()
	for _, call := range handoffCalls() {
		t.Run(call.tool, func(t *testing.T) {
			e := approvaltest.NewEnv(t, vaultsim.Options{})
			c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
			res := c.CallRaw(t, call.tool, call.args)
			require.Equal(t, "task", res["resultType"], "%v", res)
			require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
			done := c.AwaitTask(t, approvaltest.Str(res, "taskId"))
			require.Equal(t, task.StatusCompleted, done.Status, done.StatusMessage)
			_, env := approvaltest.ToolResult(t, done.Result)
			data := mcptest.RequireOK(t, env)

			e.Sim.SetApprovalRules(vaultsim.ApprovalRule{Action: vaultsim.ActionAllow})
			direct := mcptest.RequireOK(t, mcptest.Call(t, c, call.tool, call.args))
			require.ElementsMatch(t, keys(direct), keys(data), "the same data as without an approval")
			switch call.tool {
			case "vaultclaw_connector_execute":
				assert.Equal(t, "SUCCEEDED", data["status"])
				assert.Equal(t, "SENT", data["result"].(map[string]any)["status"])
			case "vaultclaw_plan_execute":
				assert.Equal(t, "SUCCEEDED", data["response"].(map[string]any)["run"].(map[string]any)["state"])
			case "vaultclaw_passport_email_workflow":
				assert.Equal(t, "SENT", data["status"])
			}
			assert.Equal(t, 2, countSent(e.Sim), "once through the task, once directly")
		})
	}
}

func countSent(sim *vaultsim.Server) int { return len(sim.SentMessages()) }

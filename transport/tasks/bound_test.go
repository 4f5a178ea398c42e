package tasks_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusalOf reads the envelope of a tools/call result that is not a task.
func refusalOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	require.NotEqual(t, "task", res["resultType"], "a task beyond the bound: %v", res)
	assert.Equal(t, true, res["isError"])
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	require.NotNil(t, e, "%v", res)
	return e
}

// TestWorkingTasksAreBoundedPerCaller opens tasks beyond the caller's
// bound: the call past it is refused before it runs (nothing reaches
// Vault, no task is stored or polled) with the retryable MCP_RATE_LIMITED,
// category policy, retry_after_ms and reason working_tasks, and receipted;
// a cancelled task frees its place.
func TestWorkingTasksAreBoundedPerCaller(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{}, "ACCORDS_MCP_TASK_MAX_WORKING=3")
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	var ids []string
	for range 3 {
		id, _ := startTask(t, c)
		ids = append(ids, id)
	}
	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("dave@example.com"))
	e4 := refusalOf(t, res)
	assert.Equal(t, apperr.CodeRateLimited, e4["code"])
	assert.Equal(t, apperr.CatPolicy, e4["category"])
	assert.Equal(t, true, e4["retryable"])
	d := e4["details"].(map[string]any)
	assert.EqualValues(t, 250, d["retry_after_ms"], "the poll interval: a place frees when a task's poll finds it decided")
	assert.Equal(t, tasks.ReasonWorkingTasks, d["reason"])
	assert.EqualValues(t, 3, d["working_tasks"])
	assert.EqualValues(t, 3, d["max_working_tasks"])
	assert.Equal(t, "vaultclaw_connector_execute_job", d["tool"])
	assert.Len(t, e.Sim.PendingApprovals(), 3, "the refused call never reached Vault")
	assert.Equal(t, 3, e.App.Tasks.Following())
	meta, _ := res["_meta"].(map[string]any)
	assert.NotEmpty(t, meta["accords/call_id"], "the gateway receipted the refusal")
	require.NoError(t, e.App.Audit.Flush())
	rs, err := audit.List(e.App.DB, audit.Filter{Outcome: apperr.CodeRateLimited, Limit: 10})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "vaultclaw_connector_execute_job", rs[0].Tool)

	// A client that does not declare the extension gets its handoff as
	// always: it starts no task, so no bound applies.
	plain := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(false, nil, nil), "")
	assert.Equal(t, apperr.CodeApprovalRequired, mcptest.Call(t, plain, "vaultclaw_connector_execute_job", approvaltest.GmailSend("erin@example.com")).Code())

	// Cancelling a task gives its place back.
	require.NoError(t, c.CancelTask(ctx(t), ids[0]))
	startTask(t, c)
	assert.Equal(t, 3, e.App.Tasks.Working("local"))
}

// Calls racing for the last places: exactly the bound become tasks, the
// rest are refused, and no reservation is left behind.
func TestWorkingTasksBoundHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{}, "ACCORDS_MCP_TASK_MAX_WORKING=3")
	c := approvaltest.Connect(t, e.App.MCPServer(), approvaltest.NewClient(true, nil, nil), "")
	const calls = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range calls {
		wg.Go(func() {
			_, err := c.CallTool(ctx(t), &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: approvaltest.GmailSend(fmt.Sprintf("r%d@example.com", i))})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				outcomes[err.Error()]++
				return
			}
			outcomes["answered"]++
		})
	}
	wg.Wait()
	assert.Equal(t, map[string]int{"answered": calls}, outcomes)
	assert.Equal(t, 3, e.App.Tasks.Following(), "exactly the bound became tasks")
	assert.Len(t, e.Sim.PendingApprovals(), 3, "the others never reached Vault")
	assert.Equal(t, 3, e.App.Tasks.Working("local"), "no reservation outlives its call")
}

package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTaskCompletesAfterApprove(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	c := connect(t, e.app.MCPServer(), newClient(true, nil, nil), "")

	res := c.callRaw(t, "vaultclaw_connector_execute_job", gmailSend("bob@example.com"))
	require.Equal(t, "task", res["resultType"], "%v", res)
	assert.Equal(t, "working", res["status"])
	id := str(res, "taskId")
	require.NotEmpty(t, id)
	t.Logf("%s", c.rec.Transcript())

	got := c.awaitStatus(t, id)
	require.Equal(t, task.StatusWorking, got.Status)

	job := ""
	for _, p := range e.sim.PendingApprovals() {
		job = p.JobID
	}
	require.NoError(t, e.sim.Approve(pendingFor(t, e.sim, job)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		got, err := c.getTask(ctx, id)
		require.NoError(t, err)
		if got.Status != task.StatusWorking {
			require.Equal(t, task.StatusCompleted, got.Status)
			_, env := toolResult(t, got.Result)
			assert.True(t, env.OK, "%v", env.Raw)
			t.Logf("%s", c.rec.Transcript())
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

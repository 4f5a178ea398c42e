package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The approval paths of a stdio launch attached to the shared daemon: the
// client speaks to a front end (transport/frontend, as `accords-mcp serve`
// runs it), which forwards to the daemon over its control socket.

// newDaemonEnv is a daemon in front of a simulator. The daemon itself has
// no Vault token: the launches bring theirs (hello.Env), so a task that
// polled with the daemon's environment instead of its launch's would fail.
func newDaemonEnv(t *testing.T) *approvaltest.Env {
	t.Helper()
	dir, err := os.MkdirTemp("", "i16") // socket paths are short
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := approvaltest.NewEnv(t, vaultsim.Options{}, "ACCORDS_MCP_DB="+filepath.Join(dir, "accords.db"), "VC_AGENT_TOKEN=")
	e.Daemon()
	return e
}

func TestAttachedLaunchTasksCompleteThroughTheFrontEnd(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	env := e.LaunchEnv(approvaltest.SimToken)
	c := e.Attach(t, env, approvaltest.NewClient(true, nil, nil), "")
	require.Equal(t, "2026-07-28", c.InitializeResult().ProtocolVersion)
	assert.Contains(t, c.InitializeResult().Capabilities.Extensions, tasks.ExtensionID)

	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	require.Equal(t, "task", res["resultType"], "%v", res)
	id := approvaltest.Str(res, "taskId")
	p := approvaltest.Waiting(t, e.Sim)

	// Another caller (the HTTP bridge's anonymous caller), and a launch
	// with another Vault identity on the same daemon: unknown task.
	other := approvaltest.ConnectHTTP(t, e.HTTP(), approvaltest.NewClient(true, nil, nil), "", nil)
	_, err := other.GetTask(context.Background(), id)
	require.Error(t, err, "another caller")
	stranger := e.Attach(t, e.LaunchEnv("vc_tok_someone_else"), approvaltest.NewClient(true, nil, nil), "")
	_, err = stranger.GetTask(context.Background(), id)
	require.Error(t, err, "another launch environment")
	assert.Contains(t, err.Error(), "task")
	require.Error(t, stranger.CancelTask(context.Background(), id))

	// The daemon restarts before Vault decides: the front end attaches to
	// the new one, and the task is still there and still followed with
	// the launch's own session.
	e.Restart()
	got, err := c.GetTask(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusWorking, got.Status)

	require.NoError(t, e.Sim.Approve(p.PendingID))
	done := c.AwaitTask(t, id)
	require.Equal(t, task.StatusCompleted, done.Status, done.StatusMessage)
	_, envl := approvaltest.ToolResult(t, done.Result)
	job := mcptest.RequireOK(t, envl)["response"].(map[string]any)["job"].(map[string]any)
	assert.Equal(t, "SUCCEEDED", job["status"])
	assert.Len(t, e.Sim.SentMessages(), 1)

	// A second launch with the same environment is the same identity: a
	// relaunched agent can still read its task.
	again := e.Attach(t, env, approvaltest.NewClient(true, nil, nil), "")
	got, err = again.GetTask(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusCompleted, got.Status)
}

func TestAttachedLaunchTaskCancel(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	c := e.Attach(t, e.LaunchEnv(approvaltest.SimToken), approvaltest.NewClient(true, nil, nil), "")
	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	id := approvaltest.Str(res, "taskId")
	require.NoError(t, c.CancelTask(context.Background(), id))
	got, err := c.GetTask(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, task.StatusCancelled, got.Status)
	assert.Equal(t, vaultsim.StateWaiting, approvaltest.Waiting(t, e.Sim).State, "cancelling never decides the approval")
}

// elicitor plays the person behind a URL-elicitation client: shown the
// page, they approve in Vaultclaw.
type elicitor struct {
	t    *testing.T
	sim  *vaultsim.Server
	mu   sync.Mutex
	seen []*mcp.ElicitParams
	done []string
}

func (p *elicitor) client() *mcp.Client {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	return approvaltest.NewClient(false, caps, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p.mu.Lock()
			p.seen = append(p.seen, req.Params)
			p.mu.Unlock()
			assert.Equal(p.t, "url", req.Params.Mode)
			require.NoError(p.t, p.sim.Approve(approvaltest.Waiting(p.t, p.sim).PendingID))
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			p.mu.Lock()
			p.done = append(p.done, req.Params.ElicitationID)
			p.mu.Unlock()
		},
	})
}

func TestAttachedLaunchURLElicitationBothEras(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version "+version, func(t *testing.T) {
			e := newDaemonEnv(t)
			p := &elicitor{t: t, sim: e.Sim}
			c := e.Attach(t, e.LaunchEnv(approvaltest.SimToken), p.client(), version)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			envl := mcptest.CallWith(t, ctx, c, &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: approvaltest.GmailSend("bob@example.com")})
			job := mcptest.RequireOK(t, envl)["response"].(map[string]any)["job"].(map[string]any)
			assert.Equal(t, "SENT", job["result"].(map[string]any)["status"])
			require.Len(t, p.seen, 1)
			if version == "2025-11-25" {
				// elicitation/create went daemon -> front end -> client and
				// back; the completion notice follows the decision.
				require.Eventually(t, func() bool {
					p.mu.Lock()
					defer p.mu.Unlock()
					return len(p.done) == 1
				}, 5*time.Second, 20*time.Millisecond)
			}
			assert.Len(t, e.Sim.RequestsTo("POST", "/v0/connectors/execute-job"), 1)
		})
	}
}

// rawLaunch drives a front end with JSON-RPC lines.
type rawLaunch struct {
	t   *testing.T
	out io.WriteCloser
	in  *bufio.Reader
}

func (r rawLaunch) send(id any, method string, params any) {
	m := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		m["id"] = id
	}
	b, err := json.Marshal(m)
	require.NoError(r.t, err)
	_, err = r.out.Write(append(b, '\n'))
	require.NoError(r.t, err)
}

func (r rawLaunch) next() map[string]any {
	line, err := r.in.ReadBytes('\n')
	require.NoError(r.t, err)
	var m map[string]any
	require.NoError(r.t, json.Unmarshal(line, &m), string(line))
	return m
}

var declareTasks = map[string]any{"capabilities": map[string]any{"extensions": map[string]any{tasks.ExtensionID: map[string]any{}}},
	"protocolVersion": "2025-11-25", "clientInfo": map[string]any{"name": "raw", "version": "1"}}

func TestAttachedLaunchTaskNotificationsAndEndOfInput(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	in, out, done, runErr := e.FrontEnd(t, e.LaunchEnv(approvaltest.SimToken))
	r := rawLaunch{t: t, out: out, in: bufio.NewReader(in)}
	r.send(1, "initialize", declareTasks)
	require.NotNil(t, r.next()["result"])
	r.send(nil, "notifications/initialized", map[string]any{})

	r.send(2, "tools/call", map[string]any{"name": "vaultclaw_connector_execute_job", "arguments": approvaltest.GmailSend("bob@example.com")})
	created := r.next()["result"].(map[string]any)
	require.Equal(t, "task", created["resultType"], "%v", created)
	id := created["taskId"].(string)

	r.send(3, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []any{id}}})
	ack := r.next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"], "%v", ack)
	assert.Equal(t, []any{id}, ack["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"])
	assert.Equal(t, "working", r.next()["params"].(map[string]any)["status"])

	require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
	for {
		m := r.next()
		require.Equal(t, "notifications/tasks", m["method"], "%v", m)
		if m["params"].(map[string]any)["status"] == "completed" {
			break
		}
	}

	// The input ends with the listen open: the front end cancels it on the
	// daemon and ends, instead of waiting for an answer that never comes.
	require.NoError(t, out.Close())
	select {
	case <-done:
		require.NoError(t, *runErr)
	case <-time.After(5 * time.Second):
		t.Fatal("the front end kept waiting on the listen after its input ended")
	}
}

package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	done := testenv.IsolateConfigDir()
	code := m.Run()
	done()
	os.Exit(code)
}

const simToken = "vc_tok_tasks"

// env is an app on a fresh database in front of a fresh simulator; it can
// be restarted on the same database.
type env struct {
	t   *testing.T
	sim *vaultsim.Server
	cfg config.Config
	app *app.App
}

func newEnv(t *testing.T, opts vaultsim.Options, extra ...string) *env {
	t.Helper()
	opts.AgentToken = simToken
	sim, err := vaultsim.Start("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	vars := append([]string{"VC_BASE_URL=" + sim.URL, "VC_AGENT_TOKEN=" + simToken, "VC_TIMEOUT_MS=5000",
		"ACCORDS_MCP_TASK_POLL_INTERVAL=250ms"}, extra...)
	e := &env{t: t, sim: sim, cfg: testenv.Config(t, vars...)}
	e.open()
	t.Cleanup(func() {
		if e.app != nil {
			_ = e.app.Close()
		}
	})
	return e
}

func (e *env) open() {
	a, err := app.Open(e.cfg, testenv.Logger())
	require.NoError(e.t, err)
	e.app = a
}

// restart closes the app (its pollers stop, tasks stay stored) and opens
// a new one on the same database.
func (e *env) restart() {
	require.NoError(e.t, e.app.Close())
	e.app = nil
	e.open()
}

// client is a go-sdk client connected in memory, recording the exchange.
type client struct {
	*mcp.ClientSession
	rec *mcptest.Recorder
}

// newClient makes a go-sdk client that declares the Tasks extension when
// tasksExt is set (go-sdk v1.8.0 negotiates 2026-07-28 and sends its
// capabilities with every request).
func newClient(tasksExt bool, caps *mcp.ClientCapabilities, opts *mcp.ClientOptions) *mcp.Client {
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	if tasksExt {
		caps.AddExtension(tasks.ExtensionID, nil)
	}
	opts.Capabilities = caps
	c := mcp.NewClient(&mcp.Implementation{Name: "tasks-test", Version: "1"}, opts)
	for _, m := range []string{tasks.MethodGet, tasks.MethodCancel} {
		if err := mcp.AddSendingCustomMethod[*tasks.GetParams, *tasks.GetResult](c, m); err != nil {
			panic(err)
		}
	}
	if err := mcp.AddSendingCustomMethod[*tasks.UpdateParams, *tasks.GetResult](c, tasks.MethodUpdate); err != nil {
		panic(err)
	}
	return c
}

// connect connects c to srv over in-memory transports.
func connect(t *testing.T, srv *mcp.Server, c *mcp.Client, version string) *client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	rec := mcptest.Record(ct)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), rec, so)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return &client{ClientSession: cs, rec: rec}
}

// callRaw calls a tool and returns the raw result object of the reply.
func (c *client) callRaw(t *testing.T, tool string, args any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	_, resp, err := c.rec.LastResponse("tools/call")
	require.NoError(t, err)
	var rpc struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp, &rpc))
	require.NotNil(t, rpc.Result, "no result: %s", resp)
	return rpc.Result
}

func (c *client) getTask(ctx context.Context, id string) (*tasks.GetResult, error) {
	return mcp.CallCustomMethod[*tasks.GetParams, *tasks.GetResult](ctx, c.ClientSession, tasks.MethodGet, &tasks.GetParams{TaskID: id})
}

func (c *client) cancelTask(ctx context.Context, id string) error {
	_, err := mcp.CallCustomMethod[*tasks.GetParams, *tasks.GetResult](ctx, c.ClientSession, tasks.MethodCancel, &tasks.GetParams{TaskID: id})
	return err
}

// awaitStatus polls tasks/get every pollIntervalMs until the task leaves
// working, and returns that answer.
func (c *client) awaitStatus(t *testing.T, id string) *tasks.GetResult {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.getTask(ctx, id)
		cancel()
		require.NoError(t, err)
		if res.Status != task.StatusWorking || time.Now().After(deadline) {
			return res
		}
		time.Sleep(time.Duration(max(res.PollIntervalMS, 50)) * time.Millisecond)
	}
}

// toolResult decodes a completed task's result as a tool result.
func toolResult(t *testing.T, raw json.RawMessage) (*mcp.CallToolResult, mcptest.Envelope) {
	t.Helper()
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(raw, &res), string(raw))
	env, err := mcptest.Decode(&res)
	require.NoError(t, err, string(raw))
	return &res, env
}

func gmailSend(to string) map[string]any {
	return map[string]any{"request": map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{to}, "subject": "Q3 numbers", "text_plain": "Attached."}}}
}

// pendingFor returns the simulator's waiting approval of job.
func pendingFor(t *testing.T, sim *vaultsim.Server, job string) string {
	t.Helper()
	for _, p := range sim.PendingApprovals() {
		if p.JobID == job && p.State == vaultsim.StateWaiting {
			return p.PendingID
		}
	}
	t.Fatalf("no waiting approval for %s in %+v", job, sim.PendingApprovals())
	return ""
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// Package approvaltest runs an app in front of a fresh Vault simulator and
// connects go-sdk clients to it that record the exchange, for the tests of
// the approval paths (tasks, URL elicitation, the polling wait) on every
// protocol version and transport. It is imported only by tests.
package approvaltest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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

// SimToken is the simulator's agent token.
const SimToken = "vc_tok_approvals"

// Env is an app on a fresh database in front of a fresh simulator; it can
// be restarted on the same database.
type Env struct {
	t   testing.TB
	Sim *vaultsim.Server
	Cfg config.Config
	App *app.App
	// owner is set while the app owns its database as a daemon (Daemon).
	owner *app.Owner
}

// NewEnv starts a simulator with opts and an app pointed at it (tasks poll
// every 250 ms); extra are more "KEY=value" settings. Both stop when the
// test ends.
func NewEnv(t testing.TB, opts vaultsim.Options, extra ...string) *Env {
	t.Helper()
	opts.AgentToken = SimToken
	sim, err := vaultsim.Start("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	vars := append([]string{"VC_BASE_URL=" + sim.URL, "VC_AGENT_TOKEN=" + SimToken, "VC_TIMEOUT_MS=5000",
		"ACCORDS_MCP_TASK_POLL_INTERVAL=250ms"}, extra...)
	e := &Env{t: t, Sim: sim, Cfg: testenv.Config(t, vars...)}
	e.open()
	t.Cleanup(func() {
		if e.App != nil {
			_ = e.App.Close()
		}
	})
	return e
}

func (e *Env) open() {
	a, err := app.Open(e.Cfg, testenv.Logger())
	require.NoError(e.t, err)
	e.App = a
}

// Restart closes the app (its pollers stop, tasks stay stored) and opens a
// new one on the same database; a daemon (Daemon) is stopped first and
// started again on the new app, and its front ends attach to it at their
// next request.
func (e *Env) Restart() {
	daemon := e.owner != nil
	if daemon {
		e.owner.Close(time.Second)
		e.owner = nil
	}
	require.NoError(e.t, e.App.Close())
	e.App = nil
	e.open()
	if daemon {
		e.own()
	}
}

// HTTP serves the app's HTTP bridge and returns its MCP endpoint.
func (e *Env) HTTP() string {
	srv := httptest.NewServer(e.App.HTTPHandler())
	e.t.Cleanup(srv.Close)
	return srv.URL + "/v1/mcp"
}

// Client is a go-sdk client session that records its exchange.
type Client struct {
	*mcp.ClientSession
	Rec *mcptest.Recorder
}

// NewClient makes a go-sdk client with caps (none when nil), declaring the
// Tasks extension when tasksExt is set (go-sdk v1.8.0 negotiates
// 2026-07-28 and then sends its capabilities with every request), with
// the tasks/* methods registered.
func NewClient(tasksExt bool, caps *mcp.ClientCapabilities, opts *mcp.ClientOptions) *mcp.Client {
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
	c := mcp.NewClient(&mcp.Implementation{Name: "approvaltest", Version: "1"}, opts)
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

// Connect connects c to srv over in-memory transports at version ("" for
// the newest).
func Connect(t testing.TB, srv *mcp.Server, c *mcp.Client, version string) *Client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	// Cleanups run last first: the client closes before the server is
	// waited for.
	t.Cleanup(func() { _ = ss.Wait() })
	return ConnectTransport(t, c, ct, version)
}

// ConnectHTTP connects c to a Streamable HTTP endpoint at version, setting
// headers on every request and Mcp-Name on tasks/* as the extension asks.
func ConnectHTTP(t testing.TB, endpoint string, c *mcp.Client, version string, headers map[string]string) *Client {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: taskHeaders{headers: headers}}}
	return ConnectTransport(t, c, tr, version)
}

// ConnectTransport connects c over tr at version ("" for the newest),
// recording the exchange.
func ConnectTransport(t testing.TB, c *mcp.Client, tr mcp.Transport, version string) *Client {
	t.Helper()
	rec := mcptest.Record(tr)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), rec, so)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &Client{ClientSession: cs, Rec: rec}
}

// taskHeaders sets fixed headers, and Mcp-Name to params.taskId on tasks/*
// requests (go-sdk does not know the extension's methods).
type taskHeaders struct{ headers map[string]string }

func (h taskHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Params.TaskID != "" && len(msg.Method) > 6 && msg.Method[:6] == "tasks/" {
			r.Header.Set("Mcp-Name", msg.Params.TaskID)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// CallRaw calls a tool and returns the raw result object of the reply (a
// CreateTaskResult is not a CallToolResult the SDK's types can hold).
func (c *Client) CallRaw(t testing.TB, tool string, args any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	_, resp, err := c.Rec.LastResponse("tools/call")
	require.NoError(t, err)
	var rpc struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp, &rpc))
	require.NotNil(t, rpc.Result, "no result: %s", resp)
	return rpc.Result
}

// GetTask sends tasks/get.
func (c *Client) GetTask(ctx context.Context, id string) (*tasks.GetResult, error) {
	return mcp.CallCustomMethod[*tasks.GetParams, *tasks.GetResult](ctx, c.ClientSession, tasks.MethodGet, &tasks.GetParams{TaskID: id})
}

// CancelTask sends tasks/cancel.
func (c *Client) CancelTask(ctx context.Context, id string) error {
	_, err := mcp.CallCustomMethod[*tasks.GetParams, *tasks.GetResult](ctx, c.ClientSession, tasks.MethodCancel, &tasks.GetParams{TaskID: id})
	return err
}

// AwaitTask polls tasks/get every pollIntervalMs, as a client should, until
// the task is no longer working (at most a minute), and returns that
// answer.
func (c *Client) AwaitTask(t testing.TB, id string) *tasks.GetResult {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.GetTask(ctx, id)
		cancel()
		require.NoError(t, err)
		if res.Status != task.StatusWorking {
			return res
		}
		require.True(t, time.Now().Before(deadline), "task %s still working after a minute", id)
		time.Sleep(time.Duration(max(res.PollIntervalMS, 50)) * time.Millisecond)
	}
}

// ToolResult decodes a completed task's result as a tool result and its
// envelope.
func ToolResult(t testing.TB, raw json.RawMessage) (*mcp.CallToolResult, mcptest.Envelope) {
	t.Helper()
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(raw, &res), string(raw))
	env, err := mcptest.Decode(&res)
	require.NoError(t, err, string(raw))
	return &res, env
}

// GmailSend are execute-job arguments for a Gmail send (the simulator holds
// it for approval).
func GmailSend(to string) map[string]any {
	return map[string]any{"request": map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{to}, "subject": "Q3 numbers", "text_plain": "Attached."}}}
}

// Waiting returns the simulator's one waiting approval.
func Waiting(t testing.TB, sim *vaultsim.Server) vaultsim.PendingApproval {
	t.Helper()
	var out []vaultsim.PendingApproval
	for _, p := range sim.PendingApprovals() {
		if p.State == vaultsim.StateWaiting {
			out = append(out, p)
		}
	}
	require.Len(t, out, 1, "waiting approvals: %+v", sim.PendingApprovals())
	return out[0]
}

// Str reads a string field.
func Str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

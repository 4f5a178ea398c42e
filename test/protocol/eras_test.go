// Package protocol tests accords-mcp as MCP clients of both protocol eras
// see it: go-sdk clients on 2026-07-28 (per-request _meta, server/discover)
// and on 2025-11-25 and 2024-11-05 (initialize), over in-memory, stdio,
// Streamable HTTP and a stdio launch attached to the shared daemon; with the protocol build tag, the TypeScript SDK client
// and the official conformance suite too (conformance_test.go).
package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	done := testenv.IsolateConfigDir()
	code := m.Run()
	done()
	testbin.Remove()
	os.Exit(code)
}

// versions are the eras tested: the stateless one and the two oldest and
// newest initialize-based ones.
var versions = []string{"2026-07-28", "2025-11-25", "2024-11-05"}

// transports connect a client to e's server.
var transports = map[string]func(t *testing.T, e *approvaltest.Env, c *mcp.Client, version string) *approvaltest.Client{
	"in-memory": func(t *testing.T, e *approvaltest.Env, c *mcp.Client, version string) *approvaltest.Client {
		return approvaltest.Connect(t, e.App.MCPServer(), c, version)
	},
	"stdio": connectStdio,
	"http": func(t *testing.T, e *approvaltest.Env, c *mcp.Client, version string) *approvaltest.Client {
		return approvaltest.ConnectHTTP(t, e.HTTP(), c, version, nil)
	},
	// A stdio launch attached to the shared daemon through its front end.
	"daemon": func(t *testing.T, e *approvaltest.Env, c *mcp.Client, version string) *approvaltest.Client {
		return e.Attach(t, e.LaunchEnv(approvaltest.SimToken), c, version)
	},
}

// connectStdio serves the app's stdio transport (newline-delimited JSON-RPC
// on a pipe pair, as a launched process would) and connects c to it.
func connectStdio(t *testing.T, e *approvaltest.Env, c *mcp.Client, version string) *approvaltest.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.App.ServeStdio(ctx, inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("stdio server did not stop")
		}
	})
	return approvaltest.ConnectTransport(t, c, &mcp.IOTransport{Reader: outR, Writer: inW}, version)
}

// listed is how many tools a session over transport lists: the visible
// ones (the discovery tools come with dynamic toolsets), less, over HTTP,
// those of an elevated capability, which "*" grants the stdio caller only.
func listed(e *approvaltest.Env, transport string) int {
	n := 0
	for _, tl := range e.App.Gateway.Visible().Tools() {
		if transport != "http" || !slices.Contains(tools.ElevatedCapabilities, tl.Capability) {
			n++
		}
	}
	return n
}

// TestEveryToolOnEveryEraAndTransport lists the tools and calls each one
// (with no arguments: a validation error is an answer too) on each
// transport and protocol version; every call comes back as an envelope,
// never as a protocol error.
func TestEveryToolOnEveryEraAndTransport(t *testing.T) {
	// Every tool listed (D23: a start without a selection lists the agent's).
	e := approvaltest.NewEnv(t, vaultsim.Options{}, "ACCORDS_MCP_TOOLSETS=all")
	for name, connect := range transports {
		want := listed(e, name)
		for _, v := range versions {
			t.Run(name+"/"+v, func(t *testing.T) {
				c := connect(t, e, approvaltest.NewClient(false, nil, nil), v)
				require.Equal(t, v, c.InitializeResult().ProtocolVersion)
				res, err := c.ListTools(context.Background(), nil)
				require.NoError(t, err)
				require.Len(t, res.Tools, want)
				for _, tool := range res.Tools {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					env, err := mcptest.TryCall(ctx, c, tool.Name, map[string]any{})
					cancel()
					require.NoError(t, err, "%s: a tool answers with an envelope", tool.Name)
					assert.Equal(t, env.OK, env.Error == nil, tool.Name)
				}
			})
		}
	}
}

// TestTasksOnEveryEraAndTransport creates a task and completes it on each
// transport and version. Before 2026-07-28 the client declares the
// extension at initialize; stateless HTTP keeps no session, so there it
// is declared in each request's _meta instead.
func TestTasksOnEveryEraAndTransport(t *testing.T) {
	for name, connect := range transports {
		for _, v := range versions {
			t.Run(name+"/"+v, func(t *testing.T) {
				e := approvaltest.NewEnv(t, vaultsim.Options{})
				c := connect(t, e, approvaltest.NewClient(true, nil, nil), v)
				args := approvaltest.GmailSend("bob@example.com")
				p := &mcp.CallToolParams{Name: "vaultclaw_connector_execute_job", Arguments: args}
				if name == "http" && v != "2026-07-28" {
					p.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{tasks.ExtensionID: map[string]any{}}}}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := c.CallTool(ctx, p)
				require.NoError(t, err)
				id := createdTask(t, c)
				require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
				for {
					gp := &tasks.GetParams{TaskID: id}
					if name == "http" && v != "2026-07-28" {
						gp.Meta = p.Meta
					}
					got, err := mcp.CallCustomMethod[*tasks.GetParams, *tasks.GetResult](ctx, c.ClientSession, tasks.MethodGet, gp)
					require.NoError(t, err)
					if got.Status != task.StatusWorking {
						require.Equal(t, task.StatusCompleted, got.Status)
						_, env := approvaltest.ToolResult(t, got.Result)
						assert.True(t, env.OK)
						return
					}
					select {
					case <-ctx.Done():
						t.Fatal(ctx.Err())
					case <-time.After(100 * time.Millisecond):
					}
				}
			})
		}
	}
}

func createdTask(t *testing.T, c *approvaltest.Client) string {
	t.Helper()
	_, resp, err := c.Rec.LastResponse("tools/call")
	require.NoError(t, err)
	var rpc struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp, &rpc))
	require.Equal(t, "task", rpc.Result["resultType"], "%v", rpc.Result)
	id, _ := rpc.Result["taskId"].(string)
	if id == "" {
		t.Fatal(errors.New("no taskId"))
	}
	return id
}

// TestModernHTTPHeadersAndCacheableLists checks 2026-07-28 over HTTP with
// raw posts: list results say how long they may be cached, and a tasks/*
// request whose Mcp-Name header names another task is refused (-32020).
func TestModernHTTPHeadersAndCacheableLists(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	url := e.HTTP()
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasks.ExtensionID: map[string]any{}}}}
	post := func(method string, params map[string]any, name string) map[string]any {
		params["_meta"] = meta
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		rep := mcptest.Post(t, url, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, h)
		var msg map[string]any
		require.NoError(t, json.Unmarshal(rep.Body, &msg), string(rep.Body))
		return msg
	}
	list := post("tools/list", map[string]any{}, "")["result"].(map[string]any)
	assert.Contains(t, list, "ttlMs")
	assert.Contains(t, list, "cacheScope")
	disc := post("server/discover", map[string]any{}, "")["result"].(map[string]any)
	assert.Contains(t, disc["capabilities"].(map[string]any)["extensions"], tasks.ExtensionID)

	call := post("tools/call", map[string]any{"name": "vaultclaw_connector_execute_job", "arguments": approvaltest.GmailSend("bob@example.com")}, "vaultclaw_connector_execute_job")
	id := call["result"].(map[string]any)["taskId"].(string)
	got := post("tasks/get", map[string]any{"taskId": id}, id)
	assert.Equal(t, "working", got["result"].(map[string]any)["status"])
	bad := post("tasks/get", map[string]any{"taskId": id}, "task_someone_else")
	assert.EqualValues(t, mcp.CodeHeaderMismatch, bad["error"].(map[string]any)["code"])
}

// TestPendingElicitationDoesNotOutliveTheClient: a 2025-11-25 client over
// stdio that leaves while the server waits for its answer to
// elicitation/create still gets the handoff for its call, and the server
// stops at once instead of waiting for an answer that cannot come.
func TestPendingElicitationDoesNotOutliveTheClient(t *testing.T) {
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- e.App.ServeStdio(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	dec := json.NewDecoder(outR)
	send := func(v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		_, err = inW.Write(append(b, '\n'))
		require.NoError(t, err)
	}
	read := func() map[string]any {
		var m map[string]any
		require.NoError(t, dec.Decode(&m))
		return m
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	read()
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "vaultclaw_connector_execute_job", "arguments": approvaltest.GmailSend("bob@example.com")}})
	el := read()
	require.Equal(t, "elicitation/create", el["method"])
	go func() { _ = inW.Close() }() // the client goes away without answering

	resp := read()
	for resp["id"] == nil { // notifications (cancelled elicitation) first
		t.Logf("%v", resp)
		resp = read()
	}
	assert.EqualValues(t, 2, resp["id"])
	env := resp["result"].(map[string]any)["structuredContent"].(map[string]any)
	assert.Equal(t, "MCP_APPROVAL_REQUIRED", env["error"].(map[string]any)["code"], "the handle is not lost")
	// What follows the answer (the SDK's notifications/cancelled for the
	// elicitation may come after it) is read and dropped, as a pipe's
	// buffer would take it: an unread io.Pipe would block the server's
	// write, and with it the end of the session.
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stdio server waits for an answer that cannot come")
	}
}

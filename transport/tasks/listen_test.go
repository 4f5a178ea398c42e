package tasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/approvaltest"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernMeta is the per-request _meta of a 2026-07-28 client declaring the
// extension (or not).
func modernMeta(declare bool) map[string]any {
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{tasks.ExtensionID: map[string]any{}}
	}
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps}
}

// rawConn is a client connection without an SDK session, for messages
// go-sdk's client cannot send (a listen with taskIds).
type rawConn struct {
	t *testing.T
	c mcp.Connection
}

func (r rawConn) send(id any, method string, params map[string]any) {
	r.t.Helper()
	raw, err := json.Marshal(params)
	require.NoError(r.t, err)
	msg := &jsonrpc.Request{Method: method, Params: raw}
	if n, ok := id.(int); ok {
		id = float64(n)
	}
	if id != nil {
		msg.ID, err = jsonrpc.MakeID(id)
		require.NoError(r.t, err)
	}
	require.NoError(r.t, r.c.Write(context.Background(), msg))
}

// next reads the next message as generic JSON.
func (r rawConn) next() map[string]any {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg, err := r.c.Read(ctx)
	require.NoError(r.t, err)
	data, err := jsonrpc.EncodeMessage(msg)
	require.NoError(r.t, err)
	var out map[string]any
	require.NoError(r.t, json.Unmarshal(data, &out))
	return out
}

func TestTaskNotificationsOnAStream(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.App.MCPServer().Connect(context.Background(), e.App.StreamTransport(st), nil)
	require.NoError(t, err)
	c, err := ct.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(); _ = ss.Wait() })
	r := rawConn{t: t, c: c}

	r.send(1, "tools/call", map[string]any{"name": "vaultclaw_connector_execute_job", "arguments": approvaltest.GmailSend("bob@example.com"), "_meta": modernMeta(true)})
	created := r.next()["result"].(map[string]any)
	id := created["taskId"].(string)

	r.send(2, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []any{id, "task_not_mine"}}, "_meta": modernMeta(true)})
	ack := r.next()
	assert.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	params := ack["params"].(map[string]any)
	assert.Equal(t, []any{id}, params["notifications"].(map[string]any)["taskIds"], "only the caller's own tasks")
	assert.EqualValues(t, 2, params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])
	first := r.next()
	assert.Equal(t, "notifications/tasks", first["method"])
	assert.Equal(t, "working", first["params"].(map[string]any)["status"])

	// The other requests go on while the listen is open.
	r.send(3, "tools/list", map[string]any{"_meta": modernMeta(true)})
	assert.NotNil(t, r.next()["result"])

	require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
	var done map[string]any
	for done == nil {
		m := r.next()
		require.Equal(t, "notifications/tasks", m["method"], "%v", m)
		if p := m["params"].(map[string]any); p["status"] == "completed" {
			done = p
		}
	}
	assert.Equal(t, id, done["taskId"])
	_, env := approvaltest.ToolResult(t, mustRaw(t, done["result"]))
	assert.True(t, env.OK, "the notification carries the whole task, result included")

	r.send(nil, "notifications/cancelled", map[string]any{"requestId": 2})
	end := r.next()
	assert.EqualValues(t, 2, end["id"])
	assert.EqualValues(t, 2, end["result"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])

	// Without the extension declared: -32021.
	r.send(4, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []any{id}}, "_meta": modernMeta(false)})
	refused := r.next()
	assert.EqualValues(t, mcp.CodeMissingRequiredClientCapabilities, refused["error"].(map[string]any)["code"])
}

func mustRaw(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestTaskNotificationsOverHTTP(t *testing.T) {
	t.Parallel()
	e := approvaltest.NewEnv(t, vaultsim.Options{})
	url := e.HTTP()
	headers := map[string]string{"X-Accords-Tenant-Id": "alpha"}
	c := approvaltest.ConnectHTTP(t, url, approvaltest.NewClient(true, nil, nil), "", headers)
	res := c.CallRaw(t, "vaultclaw_connector_execute_job", approvaltest.GmailSend("bob@example.com"))
	id := res["taskId"].(string)

	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"taskIds": []any{id}}, "_meta": modernMeta(true)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("X-Accords-Tenant-Id", "alpha")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	events := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil {
					events <- m
				}
			}
		}
		close(events)
	}()
	next := func() map[string]any {
		select {
		case m := <-events:
			return m
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
			return nil
		}
	}
	assert.Equal(t, "notifications/subscriptions/acknowledged", next()["method"])
	assert.Equal(t, "working", next()["params"].(map[string]any)["status"])
	require.NoError(t, e.Sim.Approve(approvaltest.Waiting(t, e.Sim).PendingID))
	for {
		m := next()
		if m["params"].(map[string]any)["status"] == "completed" {
			break
		}
	}
	cancel() // the client ends the listen by closing the stream

	// Another tenant is not told about the task.
	other, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 10, "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"taskIds": []any{id}}, "_meta": modernMeta(true)}})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	req2, _ := http.NewRequestWithContext(ctx2, http.MethodPost, url, bytes.NewReader(other))
	req2.Header.Set("Content-Type", "application/json")
	req2.Header.Set("Accept", "application/json, text/event-stream")
	req2.Header.Set("X-Accords-Tenant-Id", "beta")
	resp2, err := http.DefaultClient.Do(req2)
	require.NoError(t, err)
	defer resp2.Body.Close()
	br := bufio.NewReader(resp2.Body)
	line := ""
	for !strings.HasPrefix(line, "data: ") {
		line, err = br.ReadString('\n')
		require.NoError(t, err)
	}
	var ack map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "data: ")), &ack))
	assert.Equal(t, []any{}, ack["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"])
}

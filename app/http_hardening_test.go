package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const simToken = "vc_tok_app_hardening"

// served is an app serving HTTP on a real loopback listener.
type served struct {
	a      *app.App
	url    string
	addr   string
	cancel context.CancelFunc
	done   chan error
}

func serveHTTP(t *testing.T, env ...string) *served {
	t.Helper()
	a := testenv.Open(t, testenv.Config(t, env...))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	s := &served{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.ServeHTTP(ctx, "127.0.0.1:0", func(ad net.Addr) { ready <- ad }) }()
	select {
	case ad := <-ready:
		s.addr = ad.String()
		s.url = "http://" + s.addr
	case err := <-s.done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-s.done:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("ServeHTTP did not return")
		}
	})
	return s
}

// closedWithin reads from c until it is closed by the server, failing if
// that takes longer than d.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open longer than %s", d)
	}
}

// TestHTTPSlowClientsAreCut: a body sent one byte at a time, an idle
// keep-alive connection and a crowd of half-sent requests all stayed open
// forever; now each is closed by its deadline, and the connection cap
// keeps the server answering.
func TestHTTPSlowClientsAreCut(t *testing.T) {
	t.Parallel()
	s := serveHTTP(t, "ACCORDS_MCP_HTTP_HEADER_TIMEOUT=400ms", "ACCORDS_MCP_HTTP_BODY_TIMEOUT=400ms",
		"ACCORDS_MCP_HTTP_IDLE_TIMEOUT=400ms", "ACCORDS_MCP_HTTP_MAX_CONNS=4")

	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = fmt.Fprintf(c, "POST /v1/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n{", s.addr)
		require.NoError(t, err)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
		require.NoError(t, err)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		closedWithin(t, c, 5*time.Second)
	})

	t.Run("half-sent requests beyond the cap", func(t *testing.T) {
		var conns []net.Conn
		for range 12 {
			c, err := net.Dial("tcp", s.addr)
			require.NoError(t, err)
			_, _ = fmt.Fprintf(c, "POST /v1/mcp HTTP/1.1\r\nHost: %s\r\nContent-Le", s.addr)
			conns = append(conns, c)
		}
		for _, c := range conns {
			closedWithin(t, c, 10*time.Second)
			c.Close()
		}
		// The server answers again once the crowd is gone.
		resp, err := http.Get(s.url + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

// TestHTTPTricklersDoNotLockOthersOut: clients that kept trickling a
// body got 408 but kept their connections, so as many of them as the
// connection cap locked every other client out. Each trickler's
// connection now closes at the body timeout, and a client waiting behind
// a full cap is served.
func TestHTTPTricklersDoNotLockOthersOut(t *testing.T) {
	t.Parallel()
	const maxConns = 4
	s := serveHTTP(t, "ACCORDS_MCP_HTTP_BODY_TIMEOUT=200ms", fmt.Sprintf("ACCORDS_MCP_HTTP_MAX_CONNS=%d", maxConns))

	stop := make(chan struct{})
	defer close(stop)
	var tricklers []net.Conn
	for range maxConns {
		c, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		defer c.Close()
		// A body of 200,000 bytes (under the body limit) sent a byte at a
		// time: it never finishes.
		_, err = fmt.Fprintf(c, "POST /v1/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 200000\r\n\r\n{", s.addr)
		require.NoError(t, err)
		go func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		tricklers = append(tricklers, c)
	}

	// Dialled after the tricklers, so it waits behind them for a slot.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(s.url + "/healthz")
	require.NoError(t, err, "a fresh client is served once the tricklers' body timeout has passed")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	for _, c := range tricklers {
		br := bufio.NewReader(c)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "each trickler held a slot until its body timeout")
		closedWithin(t, c, 10*time.Second)
	}
}

// pendingHandle asks Vault for an action that needs approval and returns
// the handle of the handoff.
func pendingHandle(t *testing.T, url string) map[string]any {
	t.Helper()
	env := mcptest.PostCall(t, url+"/v1/mcp", "vaultclaw_connector_execute_job", map[string]any{"request": map[string]any{
		"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1",
		"request": map[string]any{"user_id": "me", "to": []any{"bob@example.com"}, "subject": "s", "text_plain": "t"}}}, nil)
	mcptest.RequireCode(t, env, "MCP_APPROVAL_REQUIRED")
	a, _ := env.Details()["approval"].(map[string]any)
	na, _ := a["next_action"].(map[string]any)
	args, _ := na["arguments"].(map[string]any)
	h, _ := args["handle"].(map[string]any)
	require.NotNil(t, h, "%v", env.Raw)
	return h
}

func waitBody(id int, handle map[string]any) []byte {
	b, _ := json.Marshal(mcptest.ToolsCall(id, "vaultclaw_approval_wait", map[string]any{"handle": handle, "timeout_ms": 60000, "poll_interval_ms": 250}))
	return b
}

func jobPolls(sim *vaultsim.Server) int {
	n := 0
	for _, r := range sim.Requests() {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v0/jobs/") {
			n++
		}
	}
	return n
}

// requirePollingStops waits until the wait has polled at least once, lets
// stop end it, and checks that Vault hears no more polls.
func requirePollingStops(t *testing.T, sim *vaultsim.Server, stop func()) {
	t.Helper()
	require.Eventually(t, func() bool { return jobPolls(sim) >= 2 }, 10*time.Second, 20*time.Millisecond, "the wait polls")
	stop()
	time.Sleep(300 * time.Millisecond) // a poll already on the wire may land
	settled := jobPolls(sim)
	time.Sleep(1200 * time.Millisecond) // more than four poll intervals
	assert.Equal(t, settled, jobPolls(sim), "an abandoned wait must stop polling Vault")
}

// TestHTTPAbandonedWaitStopsPolling: a client that closes its connection,
// or cancels with notifications/cancelled, ends the wait.
func TestHTTPAbandonedWaitStopsPolling(t *testing.T) {
	t.Parallel()
	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: simToken})
	require.NoError(t, err)
	defer sim.Close()
	s := serveHTTP(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL)

	t.Run("client closes the connection", func(t *testing.T) {
		h := pendingHandle(t, s.url)
		sim.ClearRequests()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/mcp", bytes.NewReader(waitBody(5, h)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		requirePollingStops(t, sim, cancel)
		<-done
	})

	t.Run("notifications/cancelled", func(t *testing.T) {
		h := pendingHandle(t, s.url)
		sim.ClearRequests()
		got := make(chan mcptest.Reply, 1)
		go func() { got <- mcptest.Post(t, s.url+"/v1/mcp", string(waitBody(41, h)), nil) }()
		requirePollingStops(t, sim, func() {
			rep := mcptest.Post(t, s.url+"/v1/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}}`, nil)
			assert.Equal(t, http.StatusAccepted, rep.StatusCode)
		})
		select {
		case rep := <-got:
			assert.NotContains(t, string(rep.Body), `"result"`, "a cancelled request gets no result")
		case <-time.After(5 * time.Second):
			t.Fatal("the cancelled POST did not end")
		}
	})
}

// TestHTTPShutdownDuringWait: SIGTERM (the serve context ending) while a
// wait runs answers the wait at once with a retryable envelope carrying
// the handle, and the server is gone within 2 s.
func TestHTTPShutdownDuringWait(t *testing.T) {
	t.Parallel()
	sim, err := vaultsim.Start("", vaultsim.Options{AgentToken: simToken})
	require.NoError(t, err)
	defer sim.Close()
	s := serveHTTP(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL)
	h := pendingHandle(t, s.url)
	sim.ClearRequests()

	got := make(chan mcptest.Envelope, 1)
	go func() {
		rep := mcptest.Post(t, s.url+"/v1/mcp", string(waitBody(9, h)), nil)
		var rpc struct {
			Result struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		_ = json.Unmarshal(rep.Body, &rpc)
		var env mcptest.Envelope
		_ = json.Unmarshal(rpc.Result.StructuredContent, &env)
		got <- env
	}()
	require.Eventually(t, func() bool { return jobPolls(sim) >= 1 }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	s.cancel()
	select {
	case err := <-s.done:
		require.NoError(t, err)
		s.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown hangs")
	}
	assert.Less(t, time.Since(start), 2*time.Second, "shutdown finishes within 2 s")
	env := <-got
	require.NotNil(t, env.Error, "%v", env)
	assert.Equal(t, "MCP_WAIT_TIMEOUT", env.Error.Code)
	assert.True(t, env.Error.Retryable)
	assert.Equal(t, "server_shutting_down", env.Error.Details["reason"])
	assert.Equal(t, h["job_id"], env.Error.Details["handle"].(map[string]any)["job_id"], "the handle is kept")
}

// TestAnonymousRateLimitFollowsTheAddress: rotating tenant headers let 60
// of 60 calls through; the address's own bucket now stops them at the
// burst.
func TestAnonymousRateLimitFollowsTheAddress(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_MAX_ANON_TENANTS=100"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	limited := 0
	for i := range 60 {
		env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, map[string]string{"X-Tenant-Id": fmt.Sprintf("rotating-%d", i)})
		if env.Code() == "MCP_RATE_LIMITED" {
			limited++
		}
	}
	assert.GreaterOrEqual(t, limited, 30, "beyond the burst of 20, calls from one address are limited whatever the tenant")
}

// TestAnonymousTenantsAreBounded: any tenant header made a new scope; now
// anonymous callers get at most ACCORDS_MCP_HTTP_MAX_ANON_TENANTS of them,
// counting the ones that already hold data, and those stay usable.
func TestAnonymousTenantsAreBounded(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t, "ACCORDS_MCP_HTTP_MAX_ANON_TENANTS=3")
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	srv := httptest.NewServer(a.HTTPHandler())
	post := func(url, tenant string) mcptest.Reply {
		return mcptest.Post(t, url+"/v1/mcp", mcptest.ToolsCall(1, "vaultclaw_session_configure", map[string]any{"token": "tok-" + tenant}), map[string]string{"X-Tenant-Id": tenant})
	}
	for _, tn := range []string{"a", "b", "c"} {
		require.Equal(t, http.StatusOK, post(srv.URL, tn).StatusCode)
	}
	rep := post(srv.URL, "d")
	require.Equal(t, http.StatusForbidden, rep.StatusCode, string(rep.Body))
	var env mcptest.Envelope
	require.NoError(t, json.Unmarshal(rep.Body, &env))
	assert.Equal(t, "MCP_PERMISSION_DENIED", env.Error.Code)
	assert.Equal(t, "tenant_limit", env.Error.Details["reason"])
	assert.Equal(t, http.StatusOK, post(srv.URL, "a").StatusCode, "a tenant in use stays usable")
	assert.Equal(t, http.StatusOK, mcptest.Post(t, srv.URL+"/v1/mcp", mcptest.ToolsCall(2, "vaultclaw_session_status", map[string]any{}), nil).StatusCode, "the default tenant is always there")
	srv.Close()
	require.NoError(t, a.Close())

	// After a restart the tenants holding sessions still count.
	a2 := testenv.Open(t, cfg)
	srv2 := httptest.NewServer(a2.HTTPHandler())
	defer srv2.Close()
	assert.Equal(t, http.StatusForbidden, post(srv2.URL, "e").StatusCode)
	assert.Equal(t, http.StatusOK, post(srv2.URL, "b").StatusCode)
}

// TestInvalidTenantHeadersDoNotUseUpTheBound: a refused tenant header never
// counts as a tenant in use.
func TestInvalidTenantHeadersDoNotUseUpTheBound(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_HTTP_MAX_ANON_TENANTS=2"))
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	for i := range 5 {
		rep := mcptest.Post(t, srv.URL+"/v1/mcp", mcptest.ToolsCall(1, "vaultclaw_session_status", map[string]any{}), map[string]string{"X-Tenant-Id": fmt.Sprintf("bad tenant %d", i)})
		require.Equal(t, http.StatusBadRequest, rep.StatusCode)
	}
	for _, tn := range []string{"good-1", "good-2"} {
		env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, map[string]string{"X-Tenant-Id": tn})
		require.True(t, env.OK, "%v", env.Error)
	}
}

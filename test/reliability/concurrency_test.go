package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// statusCounter records every HTTP status the clients see.
type statusCounter struct {
	base   http.RoundTripper
	tenant string
	s5xx   *atomic.Int64
}

func (c *statusCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Accords-Tenant-Id", c.tenant)
	resp, err := c.base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 500 {
		c.s5xx.Add(1)
	}
	return resp, err
}

// clientLog is one client's successful writes. Each client owns its
// cookbook ids and its tenant's session and issues calls one at a time, so
// the log is exactly the state the server must end in.
type clientLog struct {
	bundles map[key]string // hash, or "" once deleted
	session string         // "configured:<base_url>", "cleared" or ""
}

// TestConcurrentHTTPClients runs clients mixing upsert, delete, search,
// render and session calls against the in-process HTTP bridge (gateway,
// audit and all). No 5xx, no MCP_INTERNAL, no transport error; afterwards
// every client's bundles, their index entries and its session are exactly
// what its log of successful writes says; no goroutine outlives the app.
func TestConcurrentHTTPClients(t *testing.T) {
	clients, dur := 4, 2*time.Second
	if heavy {
		clients, dur = 16, 20*time.Second
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte("version = 1\n\n[anonymous]\ncalls_per_minute = 0\n"), 0o600))
	cfg := testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+policy)
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	hs := httptest.NewServer(a.HTTPHandler())
	transport := &http.Transport{MaxIdleConnsPerHost: clients + 2}
	defer func() {
		transport.CloseIdleConnections()
		hs.Close()
		require.NoError(t, a.Close())
	}()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d clients for %s", seed, clients, dur)
	corpus := workload.Corpus{Seed: seed}
	var s5xx atomic.Int64
	sessions := make([]*mcp.ClientSession, clients)
	for c := range clients {
		sessions[c] = mcptest.ConnectHTTP(t, hs.URL+"/v1/mcp", mcptest.HTTPOptions{
			Transport: &statusCounter{base: transport, tenant: fmt.Sprintf("tenant-%d", c), s5xx: &s5xx},
		})
	}

	logs := make([]*clientLog, clients)
	failures := make(chan string, 1000)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	var calls atomic.Int64
	// Calls are never cancelled: a client stops starting calls at the
	// deadline but lets the one in flight finish, so its log stays exact.
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := range clients {
		logs[c] = &clientLog{bundles: map[key]string{}}
		wg.Go(func() {
			runClient(deadline, c, sessions[c], corpus, rand.New(rand.NewPCG(seed, uint64(c)+1)), logs[c], fail, &calls)
		})
	}
	wg.Wait()
	close(failures)
	var msgs []string
	for m := range failures {
		msgs = append(msgs, m)
	}
	require.Empty(t, msgs, "calls failed")
	assert.Zero(t, s5xx.Load(), "HTTP 5xx responses")
	t.Logf("%d calls", calls.Load())
	require.Greater(t, calls.Load(), int64(clients*5), "the clients hardly ran")

	// Final state against the logs.
	vctx, vcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer vcancel()
	for c, l := range logs {
		cs := sessions[c]
		present := map[string]map[string]bool{}
		ids := map[string]bool{}
		for k, hash := range l.bundles {
			ids[k.id] = true
			assert.Equal(t, hash, storedHash(t, cs, vctx, k.id, k.version), "client %d %s@%s", c, k.id, k.version)
			if hash != "" {
				if present[k.id] == nil {
					present[k.id] = map[string]bool{}
				}
				present[k.id][k.version] = true
			}
		}
		for id := range ids {
			want := present[id]
			if want == nil {
				want = map[string]bool{}
			}
			assert.Equal(t, want, indexedVersions(t, vctx, cs, id), "client %d: index and store disagree on %s", c, id)
		}
		env, err := mcptest.TryCall(vctx, cs, workload.ToolStatus, map[string]any{})
		require.NoError(t, err)
		require.Empty(t, env.Code())
		st, _ := env.Data.(map[string]any)
		switch l.session {
		case "", "cleared":
			assert.Equal(t, false, st["configured"], "client %d session after %q: %v", c, l.session, st)
		default:
			assert.Equal(t, true, st["configured"], "client %d session: %v", c, st)
			assert.Equal(t, "configured:"+fmt.Sprint(st["base_url"]), l.session, "client %d session", c)
		}
	}
	for _, cs := range sessions {
		require.NoError(t, cs.Close())
	}
}

// concClient is one client of TestConcurrentHTTPClients: its session, its
// random source and its log of successful writes.
type concClient struct {
	c      int
	cs     *mcp.ClientSession
	corpus workload.Corpus
	r      *rand.Rand
	l      *clientLog
	fail   func(string, ...any)
	calls  *atomic.Int64
}

var concVersions = []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}

func runClient(deadline time.Time, c int, cs *mcp.ClientSession, corpus workload.Corpus, r *rand.Rand, l *clientLog, fail func(string, ...any), calls *atomic.Int64) {
	cl := &concClient{c: c, cs: cs, corpus: corpus, r: r, l: l, fail: fail, calls: calls}
	for time.Now().Before(deadline) {
		var ok bool
		switch x := r.IntN(100); {
		case x < 30:
			ok = cl.upsert()
		case x < 40:
			ok = cl.delete()
		case x < 65:
			ok = cl.search()
		case x < 80:
			ok = cl.render()
		default:
			ok = cl.session()
		}
		if !ok {
			return
		}
	}
}

// call makes one call and returns its envelope and error code; false
// means the client must stop (the exchange failed, no envelope, or
// MCP_INTERNAL), which is recorded as a failure.
func (cl *concClient) call(tool string, args map[string]any) (mcptest.Envelope, string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := mcptest.TryCall(ctx, cl.cs, tool, args)
	cl.calls.Add(1)
	if err != nil || env.Code() == "MCP_INTERNAL" {
		cl.fail("client %d %s: %s %v %+v", cl.c, tool, env.Code(), err, env.Error)
		return env, env.Code(), false
	}
	return env, env.Code(), true
}

// ownKey is one of the six cookbook ids this client owns, at a random version.
func (cl *concClient) ownKey() key {
	return key{fmt.Sprintf("conc.c%02d.cookbook-%d", cl.c, cl.r.IntN(6)), concVersions[cl.r.IntN(len(concVersions))]}
}

// upsert creates or overwrites one of the client's own keys.
func (cl *concClient) upsert() bool {
	c, r := cl.c, cl.r
	k := cl.ownKey()
	b, _ := cl.corpus.Bundle(c*1000+r.IntN(1000), k.version)
	b["cookbook_id"] = k.id
	b["title"] = fmt.Sprintf("Client %d cookbook rev %d", c, r.IntN(1_000_000))
	env, code, ok := cl.call(workload.ToolUpsert, map[string]any{"bundle": b, "conflict_policy": "OVERWRITE"})
	if !ok {
		return false
	}
	if code != "" {
		cl.fail("client %d upsert %v: %s %+v", c, k, code, env.Error)
		return true
	}
	cl.l.bundles[k], _ = env.Data.(map[string]any)["content_hash"].(string)
	return true
}

// delete removes one of its keys; the outcome must match its log.
func (cl *concClient) delete() bool {
	c := cl.c
	k := cl.ownKey()
	env, code, ok := cl.call(workload.ToolDelete, map[string]any{"cookbook_id": k.id, "version": k.version})
	if !ok {
		return false
	}
	switch code {
	case "":
		if cl.l.bundles[k] == "" {
			cl.fail("client %d deleted %v which its log says is absent", c, k)
		}
		cl.l.bundles[k] = ""
	case "MCP_CATALOG_NOT_FOUND":
		if cl.l.bundles[k] != "" {
			cl.fail("client %d: %v not found though its log has it", c, k)
		}
	default:
		cl.fail("client %d delete %v: %s %+v", c, k, code, env.Error)
	}
	return true
}

func (cl *concClient) search() bool {
	env, code, ok := cl.call(workload.ToolSearch, cl.corpus.SearchQuery(cl.r, 1000))
	if !ok {
		return false
	}
	if code != "" {
		cl.fail("client %d search: %s %+v", cl.c, code, env.Error)
	}
	return true
}

// render renders a template of a key the client holds.
func (cl *concClient) render() bool {
	c := cl.c
	var held []key
	for k, h := range cl.l.bundles {
		if h != "" {
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		return true
	}
	k := held[cl.r.IntN(len(held))]
	// The bundle content came from some corpus index; any of its
	// templates renders with inputs from the same index only when
	// ids match, so render the one template every bundle has and
	// read its id from the stored bundle.
	env, code, ok := cl.call(workload.ToolGet, map[string]any{"cookbook_id": k.id, "version": k.version})
	if !ok {
		return false
	}
	if code != "" {
		cl.fail("client %d get %v: %s %+v", c, k, code, env.Error)
		return true
	}
	tid, inputs := sendTemplate(env.Data)
	if tid == "" {
		cl.fail("client %d: stored %v has no send template", c, k)
		return true
	}
	env, code, ok = cl.call(workload.ToolRender, map[string]any{"cookbook_id": k.id, "version": k.version, "template_id": tid, "inputs": inputs})
	if !ok {
		return false
	}
	if code != "" {
		cl.fail("client %d render %v/%s: %s %+v", c, k, tid, code, env.Error)
	}
	return true
}

// session configures, clears or reads the session of the client's own
// tenant; status must match its log.
func (cl *concClient) session() bool {
	c, r := cl.c, cl.r
	switch r.IntN(3) {
	case 0:
		base := fmt.Sprintf("http://127.0.0.1:%d", 20000+r.IntN(1000))
		_, code, ok := cl.call(workload.ToolConfig, map[string]any{"base_url": base, "token": fmt.Sprintf("tok-%d-%d", c, r.IntN(1000))})
		if !ok {
			return false
		}
		if code != "" {
			cl.fail("client %d session configure: %s", c, code)
			return true
		}
		cl.l.session = "configured:" + base
	case 1:
		_, code, ok := cl.call(workload.ToolSessClr, map[string]any{})
		if !ok {
			return false
		}
		if code != "" {
			cl.fail("client %d session clear: %s", c, code)
			return true
		}
		cl.l.session = "cleared"
	default:
		env, code, ok := cl.call(workload.ToolStatus, map[string]any{})
		if !ok {
			return false
		}
		if code != "" {
			cl.fail("client %d session status: %s", c, code)
			return true
		}
		st, _ := env.Data.(map[string]any)
		configured := st["configured"] == true
		if configured != (cl.l.session != "" && cl.l.session != "cleared") {
			cl.fail("client %d session status %v, log %q", c, st, cl.l.session)
		}
	}
	return true
}

// sendTemplate finds the corpus's e-mail template in a stored bundle and
// the inputs it needs.
func sendTemplate(data any) (string, map[string]any) {
	m, _ := data.(map[string]any)
	b, _ := m["bundle"].(map[string]any)
	entries, _ := b["entries"].([]any)
	for _, e := range entries {
		em, _ := e.(map[string]any)
		id, _ := em["entry_id"].(string)
		if len(id) > len("_send_template") && id[len(id)-len("_send_template"):] == "_send_template" {
			return id, map[string]any{"to": []any{"ops@example.com"}, "subject": "Status"}
		}
	}
	return "", nil
}

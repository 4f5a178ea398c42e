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
	"github.com/accordsai/accords-mcp/bench/loadgen"
	"github.com/accordsai/accords-mcp/test/testenv"
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
	corpus := loadgen.Corpus{Seed: seed}
	var s5xx atomic.Int64
	sessions := make([]*mcp.ClientSession, clients)
	for c := range clients {
		hc := &http.Client{Transport: &statusCounter{base: transport, tenant: fmt.Sprintf("tenant-%d", c), s5xx: &s5xx}}
		cl := mcp.NewClient(&mcp.Implementation{Name: "reliability", Version: "1"}, nil)
		cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: hs.URL + "/v1/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
		}, nil)
		require.NoError(t, err)
		sessions[c] = cs
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
		env, code, err := loadgen.Call(vctx, cs, loadgen.ToolStatus, map[string]any{})
		require.NoError(t, err)
		require.Empty(t, code)
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

func runClient(deadline time.Time, c int, cs *mcp.ClientSession, corpus loadgen.Corpus, r *rand.Rand, l *clientLog, fail func(string, ...any), calls *atomic.Int64) {
	ownID := func(k int) string { return fmt.Sprintf("conc.c%02d.cookbook-%d", c, k) }
	versions := []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}
	call := func(tool string, args map[string]any) (loadgen.Envelope, string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		env, code, err := loadgen.Call(ctx, cs, tool, args)
		calls.Add(1)
		if code == loadgen.CodeTransport || code == loadgen.CodeNoEnvelope || code == "MCP_INTERNAL" {
			fail("client %d %s: %s %v %+v", c, tool, code, err, env.Error)
			return env, code, false
		}
		return env, code, true
	}
	for time.Now().Before(deadline) {
		switch x := r.IntN(100); {
		case x < 30: // upsert (create or overwrite) one of the client's own keys
			k := key{ownID(r.IntN(6)), versions[r.IntN(len(versions))]}
			b, _ := corpus.Bundle(c*1000+r.IntN(1000), k.version)
			b["cookbook_id"] = k.id
			b["title"] = fmt.Sprintf("Client %d cookbook rev %d", c, r.IntN(1_000_000))
			env, code, ok := call(loadgen.ToolUpsert, map[string]any{"bundle": b, "conflict_policy": "OVERWRITE"})
			if !ok {
				return
			}
			if code != "" {
				fail("client %d upsert %v: %s %+v", c, k, code, env.Error)
				continue
			}
			l.bundles[k], _ = env.Data.(map[string]any)["content_hash"].(string)
		case x < 40: // delete one of its keys
			k := key{ownID(r.IntN(6)), versions[r.IntN(len(versions))]}
			env, code, ok := call(loadgen.ToolDelete, map[string]any{"cookbook_id": k.id, "version": k.version})
			if !ok {
				return
			}
			switch code {
			case "":
				if l.bundles[k] == "" {
					fail("client %d deleted %v which its log says is absent", c, k)
				}
				l.bundles[k] = ""
			case "MCP_CATALOG_NOT_FOUND":
				if l.bundles[k] != "" {
					fail("client %d: %v not found though its log has it", c, k)
				}
			default:
				fail("client %d delete %v: %s %+v", c, k, code, env.Error)
			}
		case x < 65: // search
			env, code, ok := call(loadgen.ToolSearch, corpus.SearchQuery(r, 1000))
			if !ok {
				return
			}
			if code != "" {
				fail("client %d search: %s %+v", c, code, env.Error)
			}
		case x < 80: // render a template of a key it holds
			var held []key
			for k, h := range l.bundles {
				if h != "" {
					held = append(held, k)
				}
			}
			if len(held) == 0 {
				continue
			}
			k := held[r.IntN(len(held))]
			// The bundle content came from some corpus index; any of its
			// templates renders with inputs from the same index only when
			// ids match, so render the one template every bundle has and
			// read its id from the stored bundle.
			env, code, ok := call(loadgen.ToolGet, map[string]any{"cookbook_id": k.id, "version": k.version})
			if !ok {
				return
			}
			if code != "" {
				fail("client %d get %v: %s %+v", c, k, code, env.Error)
				continue
			}
			tid, inputs := sendTemplate(env.Data)
			if tid == "" {
				fail("client %d: stored %v has no send template", c, k)
				continue
			}
			env, code, ok = call(loadgen.ToolRender, map[string]any{"cookbook_id": k.id, "version": k.version, "template_id": tid, "inputs": inputs})
			if !ok {
				return
			}
			if code != "" {
				fail("client %d render %v/%s: %s %+v", c, k, tid, code, env.Error)
			}
		default: // session calls on its own tenant
			switch r.IntN(3) {
			case 0:
				base := fmt.Sprintf("http://127.0.0.1:%d", 20000+r.IntN(1000))
				_, code, ok := call(loadgen.ToolConfig, map[string]any{"base_url": base, "token": fmt.Sprintf("tok-%d-%d", c, r.IntN(1000))})
				if !ok {
					return
				}
				if code != "" {
					fail("client %d session configure: %s", c, code)
					continue
				}
				l.session = "configured:" + base
			case 1:
				_, code, ok := call(loadgen.ToolSessClr, map[string]any{})
				if !ok {
					return
				}
				if code != "" {
					fail("client %d session clear: %s", c, code)
					continue
				}
				l.session = "cleared"
			default:
				env, code, ok := call(loadgen.ToolStatus, map[string]any{})
				if !ok {
					return
				}
				if code != "" {
					fail("client %d session status: %s", c, code)
					continue
				}
				st, _ := env.Data.(map[string]any)
				configured := st["configured"] == true
				if configured != (l.session != "" && l.session != "cleared") {
					fail("client %d session status %v, log %q", c, st, l.session)
				}
			}
		}
	}
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

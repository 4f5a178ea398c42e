package tools_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// vaultCall is one request the scripted Vault received.
type vaultCall struct {
	Method, Path string
	Query        string
	Header       http.Header
	Body         map[string]any
	Raw          string
}

type scriptedReply struct {
	status int
	body   string
}

// scriptVault is a scripted fake Vaultclaw for exact request/reply
// exchanges: replies per "METHOD path" (a queue whose last entry repeats),
// 404 for anything unscripted, and a log of every request.
type scriptVault struct {
	mu     sync.Mutex
	routes map[string][]scriptedReply
	calls  []vaultCall
}

func newScript() *scriptVault { return &scriptVault{routes: map[string][]scriptedReply{}} }

// on scripts replies for route ("GET /v0/jobs/job_1"); a query can be part
// of the key for E16 ("GET /v0/connectors/unbounded/profiles/get?profile_id=x").
func (s *scriptVault) on(route string, status int, body string, more ...any) *scriptVault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[route] = append(s.routes[route], scriptedReply{status, body})
	for i := 0; i+1 < len(more); i += 2 {
		s.routes[route] = append(s.routes[route], scriptedReply{more[i].(int), more[i+1].(string)})
	}
	return s
}

func (s *scriptVault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.calls = append(s.calls, vaultCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Raw: string(raw)})
	key := r.Method + " " + r.URL.Path
	q, ok := s.routes[key+"?"+r.URL.RawQuery]
	if ok {
		key = key + "?" + r.URL.RawQuery
	} else {
		q, ok = s.routes[key]
	}
	var rep scriptedReply
	if ok && len(q) > 0 {
		rep = q[0]
		if len(q) > 1 {
			s.routes[key] = q[1:]
		}
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (s *scriptVault) callsTo(method, path string) []vaultCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []vaultCall
	for _, c := range s.calls {
		if c.Method == method && c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

func (s *scriptVault) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.Method+" "+c.Path)
	}
	return out
}

// testEnv is an app on a temp database, connected to a Vault handler, with
// an MCP client over an in-memory transport.
type testEnv struct {
	t      *testing.T
	dbPath string
	vault  *httptest.Server
	app    *app.App
	cs     *mcp.ClientSession
	token  string
	// progress collects progress notifications.
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	closeFn  func()
}

func testConfig(t *testing.T, dbPath, vaultURL, token string) config.Config {
	env := map[string]string{
		"ACCORDS_MCP_DB":         dbPath,
		"ACCORDS_MCP_SECRET_KEY": strings.Repeat("ab", 32),
		"VC_AGENT_TOKEN":         token,
		"VC_BASE_URL":            vaultURL,
		"VC_TIMEOUT_MS":          "5000",
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	return cfg
}

func newEnv(t *testing.T, vault http.Handler) *testEnv {
	return newEnvAt(t, vault, filepath.Join(t.TempDir(), "accords.db"), "tok_test")
}

func newEnvAt(t *testing.T, vault http.Handler, dbPath, token string) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dbPath: dbPath, token: token}
	e.vault = httptest.NewServer(keyGuard(t, vault))
	t.Cleanup(e.vault.Close)
	e.open()
	return e
}

// open starts the app and an in-memory MCP client session. The app is
// closed after the session, at the end of the test or on restart.
func (e *testEnv) open() {
	t := e.t
	a, err := app.Open(testConfig(t, e.dbPath, e.vault.URL, e.token), nil)
	require.NoError(t, err)
	e.app = a
	closed := false
	closeApp := func() error {
		if closed {
			return nil
		}
		closed = true
		return a.Close()
	}
	t.Cleanup(func() { _ = closeApp() })
	s := mcptest.Connect(t, a.MCPServer(), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			e.mu.Lock()
			e.progress = append(e.progress, r.Params)
			e.mu.Unlock()
		},
	})
	e.cs = s.ClientSession
	e.closeFn = func() {
		_ = s.Close()
		require.NoError(t, closeApp())
	}
}

// restart closes the app and opens it again on the same database.
func (e *testEnv) restart() {
	e.closeFn()
	e.open()
}

func (e *testEnv) call(name string, args any) mcptest.Envelope {
	e.t.Helper()
	return mcptest.Call(e.t, e.cs, name, args)
}

func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

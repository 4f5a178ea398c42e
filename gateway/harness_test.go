package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t      testing.TB
	dbPath string
	db     *store.DB
	log    *audit.Log
	key    *audit.Key
	gw     *Gateway
	clock  *fakeClock
	policy string
}

type setup struct {
	policy     string // TOML; "" = no policy file
	policyJSON bool
	readOnly   bool
	toolsets   []string
	recorder   func(*audit.Log) Recorder
	onFailure  string
	dynamic    bool
	tracer     trace.Tracer
	shared     bool // the audit log as replicas on etcd open it
	// vault is the environment session (a simulator's URL and token);
	// none by default, and then Vault is never reached.
	vault     session.Defaults
	retention audit.Retention
	// refusalWindow is the gateway's RefusalWindow (0: the default).
	refusalWindow time.Duration
	// logger is the gateway's logger (none: discarded).
	logger *slog.Logger
}

func newHarness(t testing.TB, s setup) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dbPath: filepath.Join(dir, "accords.db"), clock: &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}}
	var err error
	h.db, err = store.Open(h.dbPath, store.Options{})
	require.NoError(t, err)
	keys, err := keyring.New(make([]byte, 32))
	require.NoError(t, err)
	sessions := session.New(h.db, keys, s.vault)
	h.key, err = audit.NewKey(make([]byte, audit.KeySize), "test")
	require.NoError(t, err)
	h.log, err = audit.Open(h.db, audit.Options{Key: h.key, Now: h.clock.Now, Shared: s.shared, Retention: s.retention})
	require.NoError(t, err)
	// Every toolset but the catalog ones (they need the bleve index and
	// add nothing here): session, vault, approvals and audit, bound to real
	// services. Vault is never reached, so no Vaultclaw runs.
	client := vault.New(vault.Options{})
	mh := vault.NewModuleHash(client, nil)
	exec := &execution.Service{Vault: client, ModuleHash: mh, Handles: approval.NewStore(h.db, 0)}
	reg, err := tools.Select(tools.Deps{
		Sessions: sessions, Vault: client, Execution: exec, Handles: exec.Handles, Audit: receiptLister{h.log},
		Passport: &passport.Service{Sessions: sessions, Vault: client, ModuleHash: mh, Exec: exec},
	}, tools.InToolsets(tools.ToolsetSession, tools.ToolsetVault, tools.ToolsetApprovals, tools.ToolsetAudit, tools.ToolsetDynamic))
	require.NoError(t, err)
	hasher := h.key.Hasher()
	if s.policy != "" {
		name := "policy.toml"
		if s.policyJSON {
			name = "policy.json"
		}
		h.policy = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(h.policy, []byte(s.policy), 0o600))
	}
	var rec Recorder = h.log
	if s.recorder != nil {
		rec = s.recorder(h.log)
	}
	servers := &transport.Builder{}
	h.gw, err = New(Options{
		Registry: reg, Servers: servers, PolicyFile: h.policy, ReadOnly: s.readOnly, Toolsets: s.toolsets,
		Audit: rec, Hasher: hasher, OnAuditFailure: s.onFailure, Now: h.clock.Now, DynamicToolsets: s.dynamic, Tracer: s.tracer,
		RefusalWindow: s.refusalWindow, Logger: s.logger,
	})
	require.NoError(t, err)
	servers.Middleware = []mcp.Middleware{transport.Principal(h.gw.Principal), h.gw.ListFilter, h.gw.Calls}
	t.Cleanup(func() {
		h.gw.Close()
		h.log.Close()
		client.Close()
		h.db.Close()
	})
	return h
}

func (h *harness) writePolicy(toml string) {
	require.NoError(h.t, os.WriteFile(h.policy, []byte(toml), 0o600))
}

// stdio connects an in-memory client to the stdio server.
func (h *harness) stdio() *mcp.ClientSession {
	h.t.Helper()
	return mcptest.Connect(h.t, h.gw.StdioServer(), nil).ClientSession
}

// watched connects an in-memory client to srv that counts the
// notifications/tools/list_changed it receives.
func (h *harness) watched(srv *mcp.Server) (*mcp.ClientSession, chan struct{}) {
	h.t.Helper()
	changed := make(chan struct{}, 16)
	cs := mcptest.Connect(h.t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}).ClientSession
	return cs, changed
}

// httpServer serves the bridge with the gateway's auth and servers.
func (h *harness) httpServer() *httptest.Server {
	srv := httptest.NewServer(transport.NewHTTPHandler(transport.HTTPOptions{GetServer: h.gw.GetServer, Wrap: h.gw.Wrap}))
	h.t.Cleanup(srv.Close)
	return srv
}

// httpClient connects a Streamable HTTP client sending headers.
func (h *harness) httpClient(srv *httptest.Server, headers map[string]string) *mcp.ClientSession {
	h.t.Helper()
	return mcptest.ConnectHTTP(h.t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{Headers: headers})
}

// httpClientFrom is httpClient connecting from another loopback address
// (all of 127.0.0.0/8 is the loopback interface on Linux).
func (h *harness) httpClientFrom(srv *httptest.Server, ip string, headers map[string]string) *mcp.ClientSession {
	h.t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	h.t.Cleanup(tr.CloseIdleConnections)
	return mcptest.ConnectHTTP(h.t, srv.URL+"/v1/mcp", mcptest.HTTPOptions{Headers: headers, Transport: tr})
}

// call is mcptest.Call plus what the gateway adds to every result: the id
// of the call's receipt.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) mcptest.Envelope {
	t.Helper()
	env := mcptest.Call(t, cs, name, args)
	require.NotEmpty(t, env.Result.Meta["accords/call_id"], "every call carries its receipt id")
	return env
}

func (h *harness) receipts(f audit.Filter) []audit.Receipt {
	h.t.Helper()
	if f.Limit == 0 {
		f.Limit = 1000
	}
	rs, err := h.log.List(f)
	require.NoError(h.t, err)
	return rs
}

func envelopeOK() envelope.Envelope {
	return envelope.Success(map[string]any{"configured": false}, envelope.Meta{})
}

// receiptLister is the audit log as the tools list it.
type receiptLister struct{ l *audit.Log }

func (receiptLister) ProveReceipt(tools.ReceiptQuery) (any, error) {
	return nil, tools.ErrReceiptNotFound
}

func (r receiptLister) ListReceipts(q tools.AuditQuery) ([]any, error) {
	rs, err := r.l.List(audit.Filter{Scope: q.Scope, Tool: q.Tool, Outcome: q.Outcome, Since: q.Since, Limit: q.Limit})
	out := make([]any, len(rs))
	for i := range rs {
		out[i] = rs[i]
	}
	return out, err
}

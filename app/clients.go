package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// client is one attached stdio launch: its own MCP session on the daemon,
// with its view and its environment session.
type client struct {
	id    string
	hello control.Hello
	since time.Time
	view  gateway.View
	ss    atomic.Pointer[mcp.ServerSession]
	at    atomic.Pointer[transport.AttachTransport]
}

// context is ctx as the client's calls see it: the principal names the
// session, the client's view and environment session apply.
func (c *client) context(ctx context.Context) context.Context {
	p := caller.From(ctx)
	p.Session = c.id
	ctx = caller.With(ctx, p)
	ctx = gateway.WithView(ctx, c.view)
	return session.WithDefaults(ctx, c.hello.Env)
}

func (c *client) status() control.ClientStatus {
	st := control.ClientStatus{Session: c.id, PID: c.hello.PID, Since: c.since,
		View: control.View{ReadOnly: c.view.ReadOnly, Toolsets: c.view.Toolsets, Dynamic: c.view.Dynamic}}
	if ss := c.ss.Load(); ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			st.Name, st.Version = ip.ClientInfo.Name, ip.ClientInfo.Version
		}
	}
	return st
}

// clientRegistry holds the attached clients.
type clientRegistry struct {
	mu       sync.Mutex
	byID     map[string]*client
	onChange func(n int) // told the number of clients after each change
}

func (r *clientRegistry) add(c *client) {
	r.mu.Lock()
	if r.byID == nil {
		r.byID = map[string]*client{}
	}
	r.byID[c.id] = c
	n, cb := len(r.byID), r.onChange
	r.mu.Unlock()
	if cb != nil {
		cb(n)
	}
}

func (r *clientRegistry) remove(id string) {
	r.mu.Lock()
	delete(r.byID, id)
	n, cb := len(r.byID), r.onChange
	r.mu.Unlock()
	if cb != nil {
		cb(n)
	}
}

func (r *clientRegistry) get(id string) *client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

func (r *clientRegistry) all() []*client {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*client, 0, len(r.byID))
	for _, c := range r.byID {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *client) int { return a.since.Compare(b.since) })
	return out
}

// middleware applies the attached client's context to its requests; other
// sessions (stdio of this process, HTTP) pass unchanged.
func (r *clientRegistry) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			if id := ss.ID(); strings.HasPrefix(id, sessionPrefix) {
				if c := r.get(id); c != nil {
					ctx = c.context(ctx)
				}
			}
		}
		return next(ctx, method, req)
	}
}

const sessionPrefix = "c-"

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return sessionPrefix + hex.EncodeToString(b[:])
}

// Attach accepts a stdio launch's hello: it checks the view, registers the
// client and returns serve, which runs the client's MCP session on the
// upgraded connection until either side ends it. ctx bounds the session
// (the daemon's lifetime).
func (a *App) Attach(ctx context.Context, h control.Hello) (control.Welcome, func(net.Conn), error) {
	view := gateway.View{ReadOnly: h.View.ReadOnly, Toolsets: h.View.Toolsets, Dynamic: h.View.Dynamic}
	if err := a.Gateway.CheckView(view); err != nil {
		return control.Welcome{}, nil, fmt.Errorf("%w: %w", control.ErrBadHello, err)
	}
	c := &client{id: newSessionID(), hello: h, since: time.Now().UTC(), view: view}
	w := control.Welcome{Session: c.id, DaemonPID: pid(), Version: version.Version, Build: version.ID()}
	switch {
	case h.Build != "" && h.Build != w.Build:
		// The launch warns its client (control.BuildMismatch); the
		// daemon keeps serving it, since other clients may be attached.
		a.Logger.Warn("a launch of another build attached", "session", c.id, "client_pid", h.PID, "client_build", h.Build, "daemon_build", w.Build)
	case h.Build == "" && h.Version != "" && h.Version != version.Version:
		// A launch that predates build comparison learns it here.
		w.Warnings = append(w.Warnings, fmt.Sprintf("the running daemon is version %s and this launch %s; stop it (accords-mcp stop) to run the new version", version.Version, h.Version))
	}
	if diff := control.Differing(control.Digests(a.Config.DaemonWide()), h.Settings); len(diff) > 0 {
		w.Warnings = append(w.Warnings, "the running daemon was started with other values of "+strings.Join(diff, ", ")+"; this launch's values are ignored (stop the daemon to change them)")
	}
	a.clients.add(c)
	serve := func(conn net.Conn) {
		defer a.clients.remove(c.id)
		if conn == nil {
			return
		}
		// Task listens on this stream are the launch's: the local caller
		// with its environment session, like its requests.
		at := &transport.AttachTransport{Conn: conn, Session: c.id, MaxMessageBytes: a.Config.StdioMaxMessageBytes}
		c.at.Store(at)
		t := a.Tasks.Transport(at, func() context.Context { return c.context(a.localCaller()) })
		// A server of its own (the daemon's read-only and toolsets applied,
		// the client's view on top): list_changed reaches this client
		// alone, and a dynamic client gets the instructions that say so.
		ss, err := a.Gateway.ClientServer(c.view).Connect(ctx, t, nil)
		if err != nil {
			conn.Close()
			a.Logger.Warn("attached client could not connect", "session", c.id, "error", err.Error())
			return
		}
		c.ss.Store(ss)
		a.Logger.Info("client attached", "session", c.id, "client_pid", h.PID)
		stop := context.AfterFunc(ctx, func() { ss.Close() })
		defer stop()
		_ = ss.Wait()
		a.Logger.Info("client detached", "session", c.id, "client_pid", h.PID)
	}
	return w, serve, nil
}

// Clients describes the attached clients, oldest first.
func (a *App) Clients() []control.ClientStatus {
	var out []control.ClientStatus
	for _, c := range a.clients.all() {
		out = append(out, c.status())
	}
	return out
}

// AwaitAnswers waits, until timeout at most, for the attached clients'
// answers to calls that have returned to be written (at shutdown, after
// the gate emptied and before the sessions close, which would drop them).
func (a *App) AwaitAnswers(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, c := range a.clients.all() {
		at := c.at.Load()
		for at != nil && at.Unanswered() > 0 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// CloseClients ends every attached session (at shutdown, after the drain).
func (a *App) CloseClients() {
	for _, c := range a.clients.all() {
		if ss := c.ss.Load(); ss != nil {
			ss.Close()
		}
	}
}

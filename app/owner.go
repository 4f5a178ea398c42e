package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/version"
)

// OwnerOptions say how this process owns the database.
type OwnerOptions struct {
	// Mode is control.ModeAuto, ModeExplicit or ModeStandalone.
	Mode string
	// IdleTimeout is how long an auto-started daemon waits with no client
	// attached (and no operator request) before it exits.
	IdleTimeout time.Duration
	// Transport is how this process serves besides attached clients
	// ("stdio", "http", or "attach" when it serves only those).
	Transport string
	// Log is the daemon's log file ("" when it logs to its stderr).
	Log string
}

// Owner is the serving side of the one-owner rule: the control socket
// beside the database through which operator commands and stdio launches
// reach this process, the attached clients, and (auto mode) the idle exit.
type Owner struct {
	a    *App
	o    OwnerOptions
	path string

	sessCtx    context.Context // bounds the attached sessions
	sessCancel context.CancelFunc
	ctlCancel  context.CancelFunc
	ctlDone    chan struct{}

	mu       sync.Mutex
	closing  bool
	clients  int
	requests int
	idle     *time.Timer
	stop     chan struct{}
	reason   string
	err      error
}

// ErrShuttingDown is what an attach gets while the daemon stops.
var ErrShuttingDown = errors.New("the daemon is shutting down")

// Own listens on the control socket beside the database. The socket
// serves status, stop, metrics, the operator commands and attached MCP
// streams; Stopping is closed when the daemon should end (idle timeout,
// or a stop request), and Close ends it.
func (a *App) Own(o OwnerOptions) (*Owner, error) {
	path := control.SocketPath(a.Config.DBPath)
	ln, err := control.Listen(path)
	if err != nil {
		return nil, err
	}
	w := &Owner{a: a, o: o, path: path, stop: make(chan struct{}), ctlDone: make(chan struct{})}
	w.sessCtx, w.sessCancel = context.WithCancel(context.Background())
	transports := []string{"attach"}
	switch o.Transport {
	case "stdio":
		transports = append(transports, "stdio")
	case "http":
		transports = append(transports, "http "+a.Config.HTTPAddr)
	}
	st := control.Status{
		PID: pid(), Version: version.Version, DB: a.Config.DBPath, Mode: o.Mode,
		Transport: o.Transport, StartedAt: time.Now().UTC(), Transports: transports, Log: o.Log,
	}
	if o.Transport == "http" {
		st.Addr = a.Config.HTTPAddr
	}
	if o.Mode == control.ModeAuto {
		st.IdleTimeout = o.IdleTimeout.String()
	}
	// The build ID may hash the executable: computed once, off the start.
	go version.ID()
	srv := &control.Server{
		Status: st,
		DB:     a.DB,
		Describe: func(s *control.Status) {
			s.Build = version.ID()
			s.Clients = a.Clients()
			if addr, ok := a.listenAddr.Load().(string); ok && o.Transport == "http" {
				s.Addr = addr
				s.Transports = []string{"attach", "http " + addr}
			}
		},
		Ops:     admin.Handler(a.Backend()),
		Metrics: a.Metrics.Registry.Handler(),
		Attach:  w.attach,
		Shutdown: func(reason string) error {
			if o.Mode == control.ModeStandalone {
				return errors.New("this process serves its own stdin (standalone): it stops when its client closes it")
			}
			w.requestStop(reasonOr(reason, "stop requested"))
			return nil
		},
		Track:  w.track,
		Logger: a.Logger,
	}
	a.clients.onChange = w.setClients
	ctx, cancel := context.WithCancel(context.Background())
	w.ctlCancel = cancel
	go func() {
		defer close(w.ctlDone)
		if err := srv.Serve(ctx, ln, config.ShutdownGrace); err != nil {
			a.Logger.Warn("control socket stopped", "error", err.Error())
		}
	}()
	w.mu.Lock()
	w.armIdleLocked()
	w.mu.Unlock()
	go w.watchSocket(ctx, ln)
	a.Logger.Info("control socket listening", "socket", path, "mode", o.Mode)
	return w, nil
}

// socketCheck is how often the daemon checks that its socket is still
// there: one lstat.
const socketCheck = time.Second

// watchSocket keeps the socket file in place. When it is removed or
// replaced, the daemon binds it again and logs so, as long as the
// database file it serves is still the one at its path (bbolt); when it
// cannot (the folder was deleted, another process answers there, the
// database file is gone), the daemon stops with that error, which makes it
// exit non-zero: a supervisor (systemd's Restart=on-failure) restarts it.
func (w *Owner) watchSocket(ctx context.Context, ln *control.Listener) {
	fi, err := os.Lstat(w.path)
	if err != nil {
		return
	}
	t := time.NewTicker(socketCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := os.Lstat(w.path)
		if err == nil && os.SameFile(fi, now) {
			continue
		}
		err = w.a.DB.OnDisk()
		if err == nil {
			err = ln.Rebind()
		}
		if err == nil {
			fi, err = os.Lstat(w.path)
		}
		if err != nil {
			w.a.Logger.Error("the control socket was removed or replaced and cannot be bound again; stopping", "socket", w.path, "error", err.Error())
			w.fail(fmt.Errorf("the control socket %s was removed or replaced and cannot be bound again: %w", w.path, err))
			return
		}
		w.a.Logger.Warn("the control socket was removed or replaced; bound it again", "socket", w.path)
	}
}

func reasonOr(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

// Socket is the control socket's path.
func (w *Owner) Socket() string { return w.path }

// Stopping is closed when the daemon should stop; Reason says why.
func (w *Owner) Stopping() <-chan struct{} { return w.stop }

// Reason is why Stopping was closed.
func (w *Owner) Reason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *Owner) attach(_ context.Context, h control.Hello) (control.Welcome, func(net.Conn), error) {
	w.mu.Lock()
	closing := w.closing
	w.mu.Unlock()
	if closing {
		return control.Welcome{}, nil, ErrShuttingDown
	}
	welcome, serve, err := w.a.Attach(w.sessCtx, h)
	welcome.Mode = w.o.Mode
	return welcome, serve, err
}

func (w *Owner) requestStop(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(reason, nil)
}

// fail stops the daemon because it cannot go on serving: Err returns err.
func (w *Owner) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(err.Error(), err)
}

func (w *Owner) stopLocked(reason string, err error) {
	if w.reason != "" {
		return
	}
	w.reason = reason
	w.err = err
	w.closing = true
	close(w.stop)
}

// Err is why the daemon stopped when it had to (its socket could not be
// bound again); nil when it was asked to stop or has not stopped.
func (w *Owner) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Owner) setClients(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clients = n
	w.armIdleLocked()
}

// track counts an operator request in flight: the daemon does not exit
// under it, though requests (a status poll) do not restart the idle clock.
func (w *Owner) track() func() {
	w.mu.Lock()
	w.requests++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.requests--
		w.mu.Unlock()
	}
}

// armIdleLocked starts the idle clock of an auto daemon when the last
// client detaches, and stops it when one attaches.
func (w *Owner) armIdleLocked() {
	if w.o.Mode != control.ModeAuto || w.o.IdleTimeout <= 0 || w.closing {
		return
	}
	if w.clients > 0 {
		if w.idle != nil {
			w.idle.Stop()
			w.idle = nil
		}
		return
	}
	if w.idle == nil {
		w.startIdleLocked(w.o.IdleTimeout)
	}
}

// idleRecheck is how soon an idle daemon looks again when an operator
// request was in flight as its idle time ran out.
const idleRecheck = time.Second

func (w *Owner) startIdleLocked(d time.Duration) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		w.mu.Lock()
		current := w.idle == t && w.clients == 0 && !w.closing
		if current && w.requests > 0 {
			w.startIdleLocked(idleRecheck)
			current = false
		}
		w.mu.Unlock()
		if current {
			w.a.Logger.Info("no client attached for the idle timeout; stopping", "idle_timeout", w.o.IdleTimeout.String())
			w.requestStop("idle")
		}
	})
	w.idle = t
}

// Close stops the daemon: no new attach; calls in flight get grace to
// finish while new ones are answered "not started" (front ends send them
// to the next daemon); then the attached sessions and the socket close.
func (w *Owner) Close(grace time.Duration) {
	w.mu.Lock()
	w.closing = true
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	w.mu.Unlock()
	// Waits and elicitations in flight answer with their handle now rather
	// than running out the grace: their clients can resume on the next daemon.
	w.a.Drain.Begin()
	w.a.elicit.Stop()
	if n := w.a.Gate.Close(grace); n > 0 {
		w.a.Logger.Warn("calls still running after the shutdown grace are cut off", "calls", n)
	}
	// The calls that returned are answered before the sessions close.
	w.a.AwaitAnswers(time.Second)
	w.sessCancel()
	w.a.CloseClients()
	w.ctlCancel()
	<-w.ctlDone
	w.a.Logger.Info("control socket closed", "socket", w.path)
}

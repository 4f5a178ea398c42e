// Package control is the daemon's local socket: HTTP on a 0600 Unix socket
// in the 0700 database folder, for status, stop, metrics, the operator
// commands and attached MCP streams (an HTTP Upgrade). Only the daemon's
// own user may connect (peer uid checked on every connection).
package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/accordsai/accords-mcp/store"
)

// SocketPath is where the daemon serving dbPath listens.
func SocketPath(dbPath string) string { return dbPath + ".sock" }

// Protocol is the version of the attach stream and the operations API; a
// launch refuses to attach to a daemon speaking another one.
const Protocol = 1

// Modes of a daemon.
const (
	// ModeAuto is a daemon a stdio launch started: it exits when no client
	// has been attached for its idle timeout.
	ModeAuto = "auto"
	// ModeExplicit is `accords-mcp daemon` or `serve --http`: it runs until
	// stopped.
	ModeExplicit = "explicit"
	// ModeStandalone is `serve --standalone` serving its own stdin; it ends
	// with that input.
	ModeStandalone = "standalone"
)

// Status describes the daemon.
type Status struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Build is the daemon's version.ID (version, commit, …).
	Build         string    `json:"build,omitempty"`
	Protocol      int       `json:"protocol"`
	DB            string    `json:"db"`
	Mode          string    `json:"mode"`
	Transport     string    `json:"transport"`
	Addr          string    `json:"addr,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	SchemaVersion int       `json:"schema_version"`
	// Transports lists how clients reach it: "attach" (stdio launches over
	// this socket), "stdio" (its own stdin), "http ADDR".
	Transports []string `json:"transports"`
	// IdleTimeout is set for an auto-started daemon.
	IdleTimeout string `json:"idle_timeout,omitempty"`
	// Clients are the attached stdio clients.
	Clients []ClientStatus `json:"clients"`
	// Log is the daemon's log file, when it writes one.
	Log string `json:"log,omitempty"`
}

// ClientStatus is one attached client.
type ClientStatus struct {
	Session string    `json:"session"`
	PID     int       `json:"pid,omitempty"`
	Name    string    `json:"name,omitempty"`
	Version string    `json:"client_version,omitempty"`
	Since   time.Time `json:"since"`
	View    View      `json:"view"`
}

// View is what an attached client asked to see (its --read-only,
// --toolsets and --dynamic-toolsets).
type View struct {
	ReadOnly bool     `json:"read_only,omitempty"`
	Toolsets []string `json:"toolsets,omitempty"`
	Dynamic  bool     `json:"dynamic,omitempty"`
}

// Hello is what a stdio launch tells the daemon when it attaches.
type Hello struct {
	Protocol int    `json:"protocol"`
	PID      int    `json:"pid"`
	Version  string `json:"version"`
	// Build is the launch's version.ID; the launch compares it with the
	// welcome's (BuildMismatch).
	Build string `json:"build,omitempty"`
	View  View   `json:"view"`
	// Env is the launch's environment session, which its calls fall back to;
	// it holds a token, crosses only this socket and is never logged.
	Env session.Defaults `json:"env"`
	// Settings are digests of the launch's daemon-wide settings, so the
	// daemon can say which ones it was started with differently.
	Settings map[string]string `json:"settings,omitempty"`
}

// Welcome is the daemon's answer to an accepted Hello.
type Welcome struct {
	Session   string `json:"session"`
	DaemonPID int    `json:"daemon_pid"`
	Version   string `json:"version"`
	// Build is the daemon's version.ID; a daemon that predates it sends none.
	Build string `json:"build,omitempty"`
	Mode  string `json:"mode"`
	// Warnings are for the launch's stderr (settings the daemon ignores).
	Warnings []string `json:"warnings,omitempty"`
}

// Attach and shutdown wire names.
const (
	PathStatus   = "/v1/status"
	PathAttach   = "/v1/attach"
	PathShutdown = "/v1/shutdown"
	// UpgradeToken is the Upgrade header value of an attach.
	UpgradeToken   = "accords-mcp-attach"
	HeaderWelcome  = "Accords-Welcome"
	maxHelloBytes  = 64 << 10
	refusedMessage = "connection refused: this socket belongs to uid %d; uid %d may not use it (run the command as the daemon's user)"
)

// Server answers on the control socket.
type Server struct {
	// Status is the static part of the status; Describe fills in the rest
	// (clients, uptime) at each request.
	Status   Status
	Describe func(*Status)
	// DB, when set, reports the schema version; with no Ops it also serves
	// backups (the minimal daemon of older tests).
	DB *store.DB
	// Ops serves the operator commands (admin.Handler of the daemon's
	// backend).
	Ops http.Handler
	// Metrics serves /metrics (optional).
	Metrics http.Handler
	// Attach accepts or refuses a stream; on acceptance serve runs it on the
	// upgraded connection (serve owns conn).
	Attach func(ctx context.Context, h Hello) (Welcome, func(conn net.Conn), error)
	// Shutdown asks the daemon to stop (it drains and exits); nil refuses.
	Shutdown func(reason string) error
	// Track is called at the start of every request; the returned func at
	// its end (a daemon with requests in flight is not idle).
	Track  func() func()
	Logger *slog.Logger
}

// Handler routes the control API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathStatus, func(w http.ResponseWriter, r *http.Request) {
		st := s.Status
		st.Protocol = Protocol
		if !st.StartedAt.IsZero() {
			st.UptimeSeconds = time.Since(st.StartedAt).Seconds()
		}
		if s.DB != nil {
			st.SchemaVersion, _ = s.DB.SchemaVersion()
		}
		if s.Describe != nil {
			s.Describe(&st)
		}
		if st.Clients == nil {
			st.Clients = []ClientStatus{}
		}
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST "+PathShutdown, func(w http.ResponseWriter, r *http.Request) {
		if s.Shutdown == nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": "this process cannot be stopped over its socket"})
			return
		}
		reason := r.URL.Query().Get("reason")
		if err := s.Shutdown(reason); err != nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"stopping": true, "pid": os.Getpid()})
	})
	mux.HandleFunc("POST "+PathAttach, s.serveAttach)
	if s.Metrics != nil {
		mux.Handle("GET /metrics", s.Metrics)
	}
	ops := s.Ops
	if ops == nil && s.DB != nil {
		ops = admin.Handler(&admin.Services{DB: s.DB})
	}
	if ops != nil {
		mux.Handle("/v1/", ops)
	}
	if s.Track == nil {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done := s.Track()
		defer done()
		mux.ServeHTTP(w, r)
	})
}

// serveAttach upgrades the connection to an MCP stream.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	if s.Attach == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this process does not accept attached clients"})
		return
	}
	if r.Header.Get("Upgrade") != UpgradeToken {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "attach needs Upgrade: " + UpgradeToken})
		return
	}
	var h Hello
	if err := json.NewDecoder(io.LimitReader(r.Body, maxHelloBytes)).Decode(&h); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad hello: " + err.Error()})
		return
	}
	if h.Protocol != Protocol {
		writeJSON(w, http.StatusConflict, map[string]string{"error": fmt.Sprintf("this daemon speaks attach protocol %d, the launch %d: stop the daemon (accords-mcp stop) so a matching one starts", Protocol, h.Protocol)})
		return
	}
	welcome, serve, err := s.Attach(r.Context(), h)
	if err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, ErrBadHello) {
			status = http.StatusBadRequest
		}
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	rc := http.NewResponseController(w)
	conn, brw, err := rc.Hijack()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "cannot take over the connection: " + err.Error()})
		return
	}
	_ = conn.SetDeadline(time.Time{})
	raw, _ := json.Marshal(welcome)
	_, err = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n\r\n", UpgradeToken, HeaderWelcome, raw)
	if err == nil {
		err = brw.Flush()
	}
	if err != nil {
		conn.Close()
		serve(nil)
		return
	}
	// Anything the client sent after its request is in brw's buffer.
	serve(&bufferedConn{Conn: conn, r: brw.Reader})
}

// ErrBadHello marks an attach refused for what the launch asked (an
// unknown toolset, say): the launch reports it and exits.
var ErrBadHello = errors.New("attach refused")

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ErrUnsupported is Listen's error where there is no control socket
// (Supported is false).
var ErrUnsupported = fmt.Errorf("no control socket on this platform (it cannot identify the user of a connection): %w", errors.ErrUnsupported)

// ErrInUse means a live daemon already answers on the socket.
var ErrInUse = errors.New("control socket is in use by a running daemon")

// Listener is the control socket: connections from another uid get 403;
// Rebind binds the path again when the file was removed.
type Listener struct {
	path string
	uid  int

	mu     sync.Mutex
	cur    *net.UnixListener
	closed bool
}

// Listen creates the 0600 socket at path in a private folder
// (privdir.Check). A dead daemon's socket is removed; a live one, or a
// non-socket file, is reported.
func Listen(path string) (*Listener, error) {
	if !Supported {
		return nil, ErrUnsupported
	}
	ul, err := bind(path)
	if err != nil {
		return nil, err
	}
	return &Listener{path: path, uid: os.Getuid(), cur: ul}, nil
}

func bind(path string) (*net.UnixListener, error) {
	if err := privdir.Check(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away", path)
		}
		if c, err := net.DialTimeout("unix", path, 300*time.Millisecond); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale control socket %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict control socket %s: %w", path, err)
	}
	return ln, nil
}

// Path is the socket file.
func (l *Listener) Path() string { return l.path }

// Rebind binds a new socket at the path under Listen's rules and closes the
// old one without removing what the path names now.
func (l *Listener) Rebind() error {
	ul, err := bind(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		ul.Close()
		return net.ErrClosed
	}
	old := l.cur
	l.cur = ul
	l.mu.Unlock()
	// Closing would otherwise unlink the path, which is the new socket's.
	old.SetUnlinkOnClose(false)
	return old.Close()
}

// Accept returns the next connection from this process's uid.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		ln := l.cur
		l.mu.Unlock()
		c, err := ln.AcceptUnix()
		if err != nil {
			l.mu.Lock()
			rebound := l.cur != ln && !l.closed
			l.mu.Unlock()
			if rebound {
				continue
			}
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		go refuse(c, l.uid, uid, err)
	}
}

// Close closes the socket and removes its file.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	l.closed = true
	return l.cur.Close()
}

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur.Addr()
}

// refuse answers a connection from another user with a 403 that says why,
// then closes it.
func refuse(c net.Conn, own, peer int, cause error) {
	defer c.Close()
	msg := fmt.Sprintf(refusedMessage, own, peer)
	if cause != nil {
		msg = "connection refused: the peer's credentials cannot be read (" + cause.Error() + ")"
	}
	body, _ := json.Marshal(map[string]string{"error": msg})
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	// Let the peer finish sending first: closing with unread bytes resets the
	// connection before it reads the answer.
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// Serve runs the control server on ln until ctx ends, giving in-flight
// requests grace; attached streams are closed by their owner.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: nil}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close() // the grace period ran out; drop what is left
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Digests hashes setting values, so a Hello can carry them (the secret key
// among them) without their values.
func Digests(settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		sum := sha256.Sum256([]byte(k + "\x00" + v))
		out[k] = hex.EncodeToString(sum[:12])
	}
	return out
}

// Differing names the settings whose digests differ between mine and
// theirs, sorted.
func Differing(mine, theirs map[string]string) []string {
	var out []string
	for k, v := range theirs {
		if m, ok := mine[k]; ok && m != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// BuildMismatch is the warning for a launch of build mine attached to the
// daemon that sent w, naming both builds and the commands that replace the
// daemon; "" when the builds are the same. A welcome without a build is
// from a daemon that predates this comparison, so another build. The
// daemon keeps serving the launch either way: other clients may be
// attached to it.
func BuildMismatch(mine string, w Welcome, dbPath string) string {
	if w.Build == mine {
		return ""
	}
	theirs := w.Build
	if theirs == "" {
		theirs = w.Version + " (an older build that does not report its commit)"
	}
	return fmt.Sprintf("the running daemon (pid %d) is another build of accords-mcp: daemon %s, this launch %s; it serves this client anyway. To run this build, stop it (accords-mcp stop --db %s) and start the client again",
		w.DaemonPID, theirs, mine, shellQuote(dbPath))
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

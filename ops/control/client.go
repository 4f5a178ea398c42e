package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/privdir"
)

// ErrNotRunning means no daemon listens on the socket (no socket file, or
// one a dead daemon left).
var ErrNotRunning = errors.New("no daemon is running")

// ErrRefused means the daemon refused this process (another uid).
var ErrRefused = errors.New("refused by the daemon")

// ErrUntrusted means the socket may not be this user's daemon's (owner,
// folder permissions or peer user); nothing was sent.
var ErrUntrusted = errors.New("refusing to use the control socket")

// Client talks to a daemon's control socket.
type Client struct {
	path string
	hc   *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, path)
		},
		DisableCompression: true,
	}
	return &Client{path: path, hc: &http.Client{Transport: tr}}
}

// dial connects to the daemon's socket after checking it is this user's (a
// launch's hello carries its Vault token): folder and file owned by this
// user or root, the folder writable by no one else, and the listening
// process running as this user or root.
func dial(ctx context.Context, path string) (net.Conn, error) {
	if !Supported {
		return nil, fmt.Errorf("%w (%w)", ErrNotRunning, ErrUnsupported)
	}
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	switch {
	case err == nil:
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("%w (%s: %w)", ErrNotRunning, path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return nil, notAccessible(path, err)
	default:
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%w %s: not a Unix socket connection", ErrUntrusted, path)
	}
	uid, err := peerUID(uc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w %s: the credentials of the process listening on it cannot be read (%w); nothing was sent", ErrUntrusted, path, err)
	}
	if !privdir.Trusted(uid) {
		c.Close()
		return nil, fmt.Errorf("%w %s: the process listening on it runs as uid %d, not as this user (uid %d), so it is not this user's daemon and would receive what this process sends (its Vault token); nothing was sent. Keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUntrusted, path, uid, os.Getuid())
	}
	return c, nil
}

// checkSocketPath checks the socket's folder and file owner before
// connecting; a missing one is ErrNotRunning.
func checkSocketPath(path string) error {
	dir := filepath.Dir(path)
	err := privdir.Check(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (%s: %w)", ErrNotRunning, path, err)
	case errors.Is(err, fs.ErrPermission):
		return notAccessible(path, err)
	case errors.Is(err, privdir.ErrUnsafe):
		return fmt.Errorf("%w %s: %w; nothing was sent", ErrUntrusted, path, err)
	case err != nil:
		return err
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (%s: %w)", ErrNotRunning, path, err)
	case errors.Is(err, fs.ErrPermission):
		return notAccessible(path, err)
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSocket == 0:
		// A left-over file: no daemon listens there (one that starts
		// says to move it away).
		return fmt.Errorf("%w (%s is not a socket)", ErrNotRunning, path)
	}
	if uid, ok := privdir.Owner(fi); ok && !privdir.Trusted(uid) {
		return fmt.Errorf("%w %s: it belongs to uid %d, not to this user (uid %d); nothing was sent. Keep the database in a folder of your own (ACCORDS_MCP_DB)",
			ErrUntrusted, path, uid, os.Getuid())
	}
	return nil
}

func notAccessible(path string, err error) error {
	return fmt.Errorf("%w: %s is not accessible to uid %d (the socket and its folder belong to the daemon's user; run the command as that user): %w", ErrRefused, path, os.Getuid(), err)
}

// Path is the socket.
func (c *Client) Path() string { return c.path }

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Ops is the operations API of the daemon.
func (c *Client) Ops() *admin.Client { return &admin.Client{HC: c.hc, Where: c.path} }

func (c *Client) request(ctx context.Context, method, p string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://accords-mcp"+p, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon control socket %s: %w", c.path, err)
	}
	if resp.StatusCode != want {
		defer resp.Body.Close()
		return nil, statusError(c.path, p, resp)
	}
	return resp, nil
}

// statusError reads a refusal's JSON error (or text) into an error; a 403
// is ErrRefused.
func statusError(path, p string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error string `json:"error"`
	}
	msg := string(bytes.TrimSpace(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("daemon control socket %s: %w: %s", path, ErrRefused, msg)
	}
	return fmt.Errorf("daemon control socket %s: %s %s: %s", path, p, resp.Status, msg)
}

// Status asks the daemon who it is.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	resp, err := c.request(ctx, http.MethodGet, PathStatus, http.StatusOK)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Stop asks the daemon to drain and exit; it returns once the daemon has
// accepted (use Status to see it gone).
func (c *Client) Stop(ctx context.Context, reason string) error {
	resp, err := c.request(ctx, http.MethodPost, PathShutdown+"?reason="+url.QueryEscape(reason), http.StatusAccepted)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Backup streams a snapshot from the daemon into w and returns its size and
// schema version; a stream shorter than announced is an error.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, int, error) {
	resp, err := c.request(ctx, http.MethodGet, admin.PathBackup, http.StatusOK)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	schema, _ := strconv.Atoi(resp.Header.Get(admin.HeaderSchema))
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, schema, fmt.Errorf("snapshot stream from the daemon broke after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, schema, fmt.Errorf("snapshot stream from the daemon ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, schema, nil
}

// Attach opens an MCP stream (newline-delimited JSON-RPC) to the daemon;
// the welcome names the client's session.
func (c *Client) Attach(ctx context.Context, h Hello) (net.Conn, Welcome, error) {
	var w Welcome
	conn, err := dial(ctx, c.path)
	if err != nil {
		return nil, w, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	body, err := json.Marshal(h)
	if err != nil {
		conn.Close()
		return nil, w, err
	}
	req, err := http.NewRequest(http.MethodPost, "http://accords-mcp"+PathAttach, bytes.NewReader(body))
	if err != nil {
		conn.Close()
		return nil, w, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", UpgradeToken)
	req.Header.Set("Content-Type", "application/json")
	werr := req.Write(conn)
	// Even when the write failed, the daemon may have answered (a refusal
	// is sent at once): read that first.
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		if werr != nil {
			err = werr
		}
		return nil, w, fmt.Errorf("daemon control socket %s: attach: %w", c.path, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		err := statusError(c.path, PathAttach, resp)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			// Shutting down: the caller treats it like no daemon.
			return nil, w, fmt.Errorf("%w: %w", ErrNotRunning, err)
		}
		return nil, w, err
	}
	if err := json.Unmarshal([]byte(resp.Header.Get(HeaderWelcome)), &w); err != nil {
		conn.Close()
		return nil, w, fmt.Errorf("daemon control socket %s: attach: bad welcome: %w", c.path, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, w, nil
}

// Package control is the daemon's local control socket: a Unix socket
// beside the database (mode 0600, in the 0700 database folder) speaking
// HTTP, through which operator commands reach a running daemon that holds
// the database lock: hot backup, status, health checks and metrics.
package control

import (
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
	"strconv"
	"time"

	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
)

// SocketPath is where the daemon serving dbPath listens.
func SocketPath(dbPath string) string { return dbPath + ".sock" }

// Status describes the daemon.
type Status struct {
	PID           int       `json:"pid"`
	Version       string    `json:"version"`
	DB            string    `json:"db"`
	Transport     string    `json:"transport"`
	Addr          string    `json:"addr,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	SchemaVersion int       `json:"schema_version"`
}

// Server answers on the control socket.
type Server struct {
	DB     *store.DB
	Status Status
	// Metrics serves /metrics (optional).
	Metrics http.Handler
	// Doctor runs the in-process checks for `accords-mcp doctor` and
	// returns a JSON-encodable report (optional).
	Doctor func(ctx context.Context, scope string) any
}

// Header names of the backup response.
const (
	HeaderSchema = "X-Accords-Schema-Version"
	HeaderSize   = "X-Accords-Snapshot-Size"
)

// Handler routes the control API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		st := s.Status
		st.SchemaVersion, _ = s.DB.SchemaVersion()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /v1/backup", func(w http.ResponseWriter, r *http.Request) {
		_, err := backup.SnapshotTo(s.DB, func(size int64, schema int) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			w.Header().Set(HeaderSize, strconv.FormatInt(size, 10))
			w.Header().Set(HeaderSchema, strconv.Itoa(schema))
			w.WriteHeader(http.StatusOK)
		}, w)
		if err != nil {
			// Headers are gone; abort the connection so the client sees a
			// short body rather than a complete-looking file.
			panic(http.ErrAbortHandler)
		}
	})
	if s.Metrics != nil {
		mux.Handle("GET /metrics", s.Metrics)
	}
	if s.Doctor != nil {
		mux.HandleFunc("GET /v1/doctor", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, s.Doctor(r.Context(), r.URL.Query().Get("scope")))
		})
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ErrInUse means a live daemon already answers on the socket.
var ErrInUse = errors.New("control socket is in use by a running daemon")

// Listen creates the socket at path with mode 0600. A socket file left by a
// daemon that died is removed; a socket a live daemon answers on, or any
// file that is not a socket, is left alone and reported.
func Listen(path string) (net.Listener, error) {
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
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict control socket %s: %w", path, err)
	}
	return ln, nil
}

// Serve runs the control server on ln until ctx ends, then closes it (which
// removes the socket file). In-flight requests such as a backup get grace to
// finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
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

// Client talks to a daemon's control socket.
type Client struct {
	path string
	hc   *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression: true,
	}
	return &Client{path: path, hc: &http.Client{Transport: tr}}
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

func (c *Client) get(ctx context.Context, p string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://accords-mcp"+p, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon control socket %s: %w", c.path, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("daemon control socket %s: %s %s: %s", c.path, p, resp.Status, body)
	}
	return resp, nil
}

// Status asks the daemon who it is.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	resp, err := c.get(ctx, "/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Doctor fetches the daemon's in-process check report into out.
func (c *Client) Doctor(ctx context.Context, scope string, out any) error {
	resp, err := c.get(ctx, "/v1/doctor?scope="+url.QueryEscape(scope))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// Backup streams a snapshot from the daemon into w and returns its size and
// schema version; a stream shorter than announced is an error.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, int, error) {
	resp, err := c.get(ctx, "/v1/backup")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	schema, _ := strconv.Atoi(resp.Header.Get(HeaderSchema))
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, schema, fmt.Errorf("snapshot stream from the daemon broke after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, schema, fmt.Errorf("snapshot stream from the daemon ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, schema, nil
}

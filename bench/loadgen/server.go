package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport names. Stdio serves in the launched process (--standalone);
// Attach launches a stdio front end attached to the daemon that owns the
// database (the first launch starts it), as MCP clients run it by default.
const (
	Stdio  = "stdio"
	HTTP   = "http"
	Attach = "attach"
)

// ServerOptions say how to start the built server binary.
type ServerOptions struct {
	Bin string
	// Args are the binary's arguments over stdio (none for accords-mcp,
	// which serves stdio by default; "floor" for the floor server).
	Args      []string
	DBPath    string
	Transport string
	// Clients is the number of MCP client sessions (HTTP only; stdio has one).
	Clients int
	// Env entries ("KEY=value") added to the server's environment.
	Env []string
	// Bearer token sent on every HTTP request, when the policy needs one.
	Bearer string
}

// Server is a running server process with connected client sessions.
type Server struct {
	Cmd       *exec.Cmd
	Transport string
	Endpoint  string
	Sessions  []*mcp.ClientSession
	// Startup is the time from process start to the first tools/list answer.
	Startup time.Duration
	// Initialize is the time from process start to the initialize answer
	// (stdio and attach).
	Initialize time.Duration
	Tools      map[string]*mcp.Tool
	// wires times each session's requests on the wire (wireTransport).
	wires   map[*mcp.ClientSession]*wireClock
	stderr  *tailBuffer
	done    chan struct{} // HTTP: closed when the process has exited
	waitErr error
	killed  bool
}

// tailBuffer keeps the last 64 KiB of the server's stderr for diagnostics.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

// tailKeep is the tail kept; up to twice as much is held, so that a line
// of an HTTP server's access log, written for every call, costs its own
// bytes and not a copy of the whole tail.
const tailKeep = 64 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailKeep {
		t.b = append(t.b[:0:0], t.b[len(t.b)-tailKeep:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b[max(len(t.b)-tailKeep, 0):])
}

// Stderr returns the tail of the server's log.
func (s *Server) Stderr() string { return s.stderr.String() }

// ServerEnv is the environment a benchmark server runs with: the caller's
// environment minus anything that would point it at a real vault or a real
// HTTP address.
func ServerEnv(dbPath string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ACCORDS_MCP_") || strings.HasPrefix(k, "VC_") || k == "VAULT_UNIX_SOCKET" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "ACCORDS_MCP_DB="+dbPath, "ACCORDS_MCP_SECRET_KEY="+strings.Repeat("5a", 32))
	return append(env, extra...)
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// StartServer starts the binary, connects the client sessions and lists the
// tools once, timing start-up.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	s := &Server{Transport: o.Transport, stderr: &tailBuffer{}, done: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "accords-bench", Version: "1"}, nil)
	switch o.Transport {
	case Stdio, Attach:
		cmd := exec.Command(o.Bin, o.Args...)
		mode := "ACCORDS_MCP_STANDALONE=true"
		if o.Transport == Attach {
			mode = "ACCORDS_MCP_STANDALONE=false"
		}
		cmd.Env = ServerEnv(o.DBPath, append([]string{"ACCORDS_MCP_LOG_LEVEL=warn", mode}, o.Env...))
		cmd.Stderr = s.stderr
		s.Cmd = cmd
		t0 := time.Now()
		wt := newWireTransport(nil)
		wt.inner = &commandTransport{cmd: cmd, terminate: 10 * time.Second, clock: wt.clock}
		cs, err := client.Connect(ctx, wt, nil)
		if err != nil {
			s.kill()
			return nil, fmt.Errorf("connect over stdio: %w\n%s", err, s.Stderr())
		}
		s.wires = map[*mcp.ClientSession]*wireClock{cs: wt.clock}
		s.Initialize = time.Since(t0)
		s.Sessions = []*mcp.ClientSession{cs}
		if err := s.listTools(ctx, cs); err != nil {
			s.Close()
			return nil, err
		}
		s.Startup = time.Since(t0)
		// commandTransport owns cmd.Wait: closing the session closes stdin
		// and waits (SIGTERM, then SIGKILL, if it lingers).
	case HTTP:
		cmd := exec.Command(o.Bin, "serve", "--http", "127.0.0.1:0")
		cmd.Env = ServerEnv(o.DBPath, o.Env)
		pipe, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		s.Cmd = cmd
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() { s.waitErr = cmd.Wait(); close(s.done) }()
		addr, err := s.awaitReady(ctx, pipe)
		if err != nil {
			s.kill()
			return nil, err
		}
		s.Endpoint = "http://" + addr + "/v1/mcp"
		n := max(o.Clients, 1)
		var rt http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: n + 4, IdleConnTimeout: 90 * time.Second}
		if o.Bearer != "" {
			rt = &bearerTransport{token: o.Bearer, base: rt}
		}
		hc := &http.Client{Transport: rt}
		for i := range n {
			wt := newWireTransport(&mcp.StreamableClientTransport{
				Endpoint: s.Endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
			})
			cs, err := client.Connect(ctx, wt, nil)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("connect over HTTP: %w\n%s", err, s.Stderr())
			}
			if s.wires == nil {
				s.wires = map[*mcp.ClientSession]*wireClock{}
			}
			s.wires[cs] = wt.clock
			s.Sessions = append(s.Sessions, cs)
			if i == 0 {
				if err := s.listTools(ctx, cs); err != nil {
					s.Close()
					return nil, err
				}
				s.Startup = time.Since(t0)
			}
		}
	default:
		return nil, fmt.Errorf("unknown transport %q (stdio or http)", o.Transport)
	}
	return s, nil
}

// Wire is the wire time of the last answered request of cs (0 when cs is
// not timed).
func (s *Server) Wire(cs *mcp.ClientSession) time.Duration {
	if w := s.wires[cs]; w != nil {
		return w.last()
	}
	return 0
}

// awaitReady reads the JSON log on stderr until the "ready" line that
// carries the listen address; the rest of the log goes to the tail buffer.
func (s *Server) awaitReady(ctx context.Context, stderr io.Reader) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = s.stderr.Write(append(append([]byte(nil), line...), '\n')) // best effort: the child's log
			if sent {
				continue
			}
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "ready" && rec.Addr != "" {
				found <- rec.Addr
				sent = true
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, nil
	case <-s.done:
		return "", fmt.Errorf("server exited before listening: %w\n%s", s.waitErr, s.Stderr())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("server did not report ready within 30s\n%s", s.Stderr())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (s *Server) listTools(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w\n%s", err, s.Stderr())
	}
	s.Tools = map[string]*mcp.Tool{}
	for _, t := range res.Tools {
		s.Tools[t.Name] = t
	}
	return nil
}

var gctraceLine = regexp.MustCompile(`gc \d+ @[0-9.]+s (\d+)%:`)

// GCPercent is the share of the process's CPU time spent in the garbage
// collector since it started, from the last GODEBUG=gctrace=1 line on its
// stderr (pass --env GODEBUG=gctrace=1); false without one.
func (s *Server) GCPercent() (float64, bool) {
	m := gctraceLine.FindAllStringSubmatch(s.Stderr(), -1)
	if len(m) == 0 {
		return 0, false
	}
	pct, err := strconv.ParseFloat(m[len(m)-1][1], 64)
	return pct, err == nil
}

// Has reports whether the server registers a tool.
func (s *Server) Has(name string) bool { _, ok := s.Tools[name]; return ok }

// PeakRSSBytes is the process's high-water resident set (VmHWM).
func (s *Server) PeakRSSBytes() (int64, error) {
	if s.Cmd == nil || s.Cmd.Process == nil {
		return 0, errors.New("no process")
	}
	return PeakRSS(s.Cmd.Process.Pid)
}

// CPUTime is the CPU time (user and system) the server process has used so
// far, from /proc (Linux only).
func (s *Server) CPUTime() (time.Duration, error) {
	if s.Cmd == nil || s.Cmd.Process == nil {
		return 0, errors.New("no process")
	}
	return ProcessCPU(s.Cmd.Process.Pid)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux platform Go supports.
const clockTicks = 100

// ProcessCPU reads a process's user and system time from /proc/PID/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// PeakRSS reads VmHWM of a process from /proc (Linux only).
func PeakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, err
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, errors.New("VmHWM not found")
}

// RSSByKind reads a process's resident set now, split into anonymous
// memory (heap, stacks) and file-backed pages (its executable, the
// database and index files it maps: clean pages the kernel may drop at
// any time, and which its fault-around maps 64 KiB at a time), from
// /proc (Linux only).
func RSSByKind(pid int) (anon, file int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var found int
	for line := range strings.SplitSeq(string(raw), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "RssAnon" && key != "RssFile") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if key == "RssAnon" {
			anon = kb * 1024
		} else {
			file = kb * 1024
		}
		found++
	}
	if found < 2 {
		return 0, 0, errors.New("RssAnon/RssFile not found")
	}
	return anon, file, nil
}

// RSSByKind is the server process's resident set now, by kind.
func (s *Server) RSSByKind() (anon, file int64, err error) {
	if s.Cmd == nil || s.Cmd.Process == nil {
		return 0, 0, errors.New("no process")
	}
	return RSSByKind(s.Cmd.Process.Pid)
}

// StopDaemon stops the daemon that owns dbPath (the attach transport's
// first launch started it), waiting for it to exit.
func StopDaemon(ctx context.Context, bin, dbPath string) error {
	cmd := exec.CommandContext(ctx, bin, "stop")
	cmd.Env = ServerEnv(dbPath, nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("accords-mcp stop: %w: %s", err, out)
	}
	return nil
}

// DaemonPID is the pid of the daemon that owns dbPath (0 when none runs).
func DaemonPID(ctx context.Context, bin, dbPath string) int {
	cmd := exec.CommandContext(ctx, bin, "status", "--json")
	cmd.Env = ServerEnv(dbPath, nil)
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	var st struct {
		PID int `json:"pid"`
	}
	_ = json.Unmarshal(out, &st)
	return st.PID
}

// Close ends the sessions and stops the process: closing stdin for stdio
// (the SDK transport then waits, escalating to SIGTERM and SIGKILL after
// 10 s each), SIGTERM for HTTP, killing it if it does not exit within 15 s.
func (s *Server) Close() error {
	if s.Transport == Stdio || s.Transport == Attach {
		var err error
		for _, cs := range s.Sessions {
			if cerr := cs.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		s.Sessions = nil
		if err != nil && !s.killed {
			return fmt.Errorf("server exit: %w\n%s", err, s.Stderr())
		}
		return nil
	}
	for _, cs := range s.Sessions {
		_ = cs.Close()
	}
	s.Sessions = nil
	if s.Cmd == nil || s.Cmd.Process == nil {
		return nil
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(15 * time.Second):
		s.kill()
		return errors.New("server did not exit within 15s; killed")
	}
}

// Kill sends SIGKILL (crash tests) and waits for the process to go.
func (s *Server) Kill() {
	s.kill()
	for _, cs := range s.Sessions {
		_ = cs.Close()
	}
	s.Sessions = nil
}

func (s *Server) kill() {
	if s.Cmd == nil || s.Cmd.Process == nil {
		return
	}
	s.killed = true
	_ = s.Cmd.Process.Kill()
	if s.Transport == HTTP {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// Envelope is the decoded tool result.
type Envelope struct {
	OK    bool           `json:"ok"`
	Data  any            `json:"data"`
	Error *EnvelopeError `json:"error"`
	Meta  map[string]any `json:"meta"`
}

// EnvelopeError is the error part of an envelope.
type EnvelopeError struct {
	Code      string         `json:"code"`
	Category  string         `json:"category"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
}

// CodeTransport marks a call whose MCP exchange itself failed;
// CodeNoEnvelope a result that carried no envelope.
const (
	CodeTransport  = "transport"
	CodeNoEnvelope = "no_envelope"
)

// envelopeOf reads the envelope from the decoded structured content
// without a second encode/decode round trip, so the client's own cost
// stays small next to the server's.
func envelopeOf(sc any) (Envelope, bool) {
	m, ok := sc.(map[string]any)
	if !ok {
		return Envelope{}, false
	}
	var env Envelope
	if env.OK, ok = m["ok"].(bool); !ok {
		return Envelope{}, false
	}
	env.Data = m["data"]
	env.Meta, _ = m["meta"].(map[string]any)
	if e, isMap := m["error"].(map[string]any); isMap {
		env.Error = &EnvelopeError{}
		env.Error.Code, _ = e["code"].(string)
		env.Error.Category, _ = e["category"].(string)
		env.Error.Message, _ = e["message"].(string)
		env.Error.Retryable, _ = e["retryable"].(bool)
		env.Error.Details, _ = e["details"].(map[string]any)
	}
	return env, true
}

// CallRaw invokes a tool and reports only whether the exchange worked and
// whether the result says it is an error: for servers (the floor, another
// MCP server under --compare) whose results are not envelopes.
func CallRaw(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) string {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return CodeTransport
	}
	if res.IsError {
		return "is_error"
	}
	return ""
}

// Call invokes a tool and returns its envelope and an outcome code: "" when
// ok, the envelope's error code, or CodeTransport / CodeNoEnvelope.
func Call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (Envelope, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return Envelope{}, CodeTransport, err
	}
	env, ok := envelopeOf(res.StructuredContent)
	if !ok {
		return Envelope{}, CodeNoEnvelope, fmt.Errorf("tool %s returned no envelope", tool)
	}
	if env.OK {
		return env, "", nil
	}
	if env.Error == nil {
		return env, CodeNoEnvelope, fmt.Errorf("tool %s: ok=false without error", tool)
	}
	return env, env.Error.Code, nil
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport/frontend"
)

// daemonStartWait bounds the wait for a daemon this launch started to say
// it serves (opening a large catalog may rebuild its index first).
const daemonStartWait = 2 * time.Minute

// maxDaemonLog is the size past which a daemon's log is rotated (once, to
// <log>.1) when the next daemon starts.
const maxDaemonLog = 10 << 20

// runFrontend serves the client on stdin/stdout through the daemon that
// owns the database, starting one when none runs.
func runFrontend(ctx context.Context, env *environment, cfg config.Config) int {
	logger := env.logger(cfg)
	// The build ID may hash the executable: started now, read at attach.
	go version.ID()
	hello := control.Hello{
		Protocol: control.Protocol,
		PID:      os.Getpid(),
		Version:  version.Version,
		View:     control.View{ReadOnly: cfg.ReadOnly, Toolsets: cfg.Toolsets, Dynamic: cfg.DynamicToolsets},
		Env:      commandEnv(cfg),
		Settings: control.Digests(cfg.DaemonWide()),
	}
	d := &dialer{cfg: cfg, hello: hello, logger: logger}
	err := frontend.Run(ctx, frontend.Options{
		In: env.stdin, Out: env.stdout, Dial: d.dial, Writes: toolWrites, Logger: logger,
		MaxMessageBytes: cfg.StdioMaxMessageBytes, SessionTools: []string{tools.ToolsetEnableName},
	})
	if err != nil {
		logger.Error("cannot serve", "error", err.Error())
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	return 0
}

// toolWrites reports whether a tool may change state (unknown names may).
func toolWrites(name string) bool {
	for _, t := range tools.Inventory() {
		if t.Name == name {
			return t.Writes()
		}
	}
	return true
}

// dialer attaches to the daemon of one database, starting it when none
// runs (the owner lock makes concurrent launches start only one).
type dialer struct {
	cfg    config.Config
	hello  control.Hello
	logger *slog.Logger
	warned sync.Once
}

func (d *dialer) dial(ctx context.Context) (io.ReadWriteCloser, error) {
	c := control.NewClient(control.SocketPath(d.cfg.DBPath))
	defer c.Close()
	conn, err := d.attach(ctx, c)
	if !errors.Is(err, control.ErrNotRunning) {
		return conn, err
	}
	lctx, cancel := context.WithTimeout(ctx, ownerLockWait)
	defer cancel()
	unlock, err := control.LockOwner(lctx, d.cfg.DBPath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another launch may have started one while this one waited.
	if conn, err := d.attach(ctx, c); !errors.Is(err, control.ErrNotRunning) {
		return conn, err
	}
	if err := startDaemon(ctx, d.cfg, d.logger); err != nil {
		return nil, err
	}
	return d.attach(ctx, c)
}

func (d *dialer) attach(ctx context.Context, c *control.Client) (io.ReadWriteCloser, error) {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h := d.hello
	h.Build = version.ID()
	conn, w, err := c.Attach(actx, h)
	if err != nil {
		return nil, err
	}
	d.logger.Info("attached to the daemon", "daemon_pid", w.DaemonPID, "mode", w.Mode, "session", w.Session, "socket", c.Path())
	d.warned.Do(func() {
		for _, msg := range w.Warnings {
			d.logger.Warn(msg)
		}
		if msg := control.BuildMismatch(h.Build, w, d.cfg.DBPath); msg != "" {
			d.logger.Warn(msg, "daemon_build", w.Build, "launch_build", h.Build)
		}
	})
	return conn, nil
}

// spawnedMarker is set in the environment of every daemon a launch starts,
// so that nothing started that way can start another.
const spawnedMarker = "ACCORDS_MCP_SPAWNED_DAEMON"

// daemonEnv is a launched daemon's environment: what the server, OS and
// runtime need (config.DaemonInherits), never this launch's view, Vault
// session or other credentials, since the daemon outlives it.
func daemonEnv(cfg config.Config) []string {
	perClient := map[string]bool{
		"ACCORDS_MCP_READ_ONLY": true, "ACCORDS_MCP_TOOLSETS": true, "ACCORDS_MCP_HTTP_ADDR": true,
		"ACCORDS_MCP_STANDALONE": true, "VC_AGENT_TOKEN": true, "VC_BASE_URL": true, "VC_TIMEOUT_MS": true,
		"VC_UNIX_SOCKET": true, "VAULT_UNIX_SOCKET": true, "ACCORDS_MCP_DB": true,
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if cfg.DaemonInherits(k) && !perClient[k] {
			out = append(out, kv)
		}
	}
	return append(out, "ACCORDS_MCP_DB="+cfg.DBPath, spawnedMarker+"=1")
}

// DaemonLogPath is where a daemon started by a launch logs.
func DaemonLogPath(dbPath string) string { return dbPath + ".log" }

// startDaemon starts `accords-mcp daemon --auto` detached (own session,
// stdio on /dev/null, stderr to the log) and waits for its ready report.
func startDaemon(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this executable to start the daemon: %w", err)
	}
	if strings.HasSuffix(exe, ".test") {
		// A test binary would run its tests as the "daemon".
		return fmt.Errorf("refusing to start a daemon from the test binary %s; use a built accords-mcp or --standalone", exe)
	}
	if os.Getenv(spawnedMarker) != "" {
		// A process started as a daemon must not start another.
		return fmt.Errorf("refusing to start a daemon from a process started as one (%s is set)", spawnedMarker)
	}
	// The log is created in the database folder: it must be private
	// (the caller's owner lock has made sure of it already).
	if err := privdir.Ensure(filepath.Dir(cfg.DBPath)); err != nil {
		return fmt.Errorf("the database folder: %w", err)
	}
	logPath := DaemonLogPath(cfg.DBPath)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxDaemonLog {
		_ = os.Rename(logPath, logPath+".1")
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the daemon log %s: %w", logPath, err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd := exec.Command(exe, "daemon", "--auto", "--ready-fd", "3", "--log", logPath)
	cmd.Env = daemonEnv(cfg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start the daemon: %w", err)
	}
	pw.Close()
	logger.Info("started a daemon for the database", "pid", cmd.Process.Pid, "log", logPath)
	exited := make(chan error, 1)
	// Reap it whenever it exits, while this launch lives.
	go func() { exited <- cmd.Wait() }()
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(pr).ReadBytes('\n')
		line <- b
	}()
	var raw []byte
	select {
	case raw = <-line:
	case <-time.After(daemonStartWait):
		_ = cmd.Process.Kill()
		return fmt.Errorf("the daemon did not report ready within %s (see %s)", daemonStartWait, logPath)
	case <-ctx.Done():
		return ctx.Err()
	}
	var ready struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &ready) != nil {
		// It died without a word: its exit status and log say why.
		status := "still running"
		select {
		case werr := <-exited:
			status = "exit status 0"
			if werr != nil {
				status = werr.Error()
			}
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("the daemon exited before it was ready (%s); its log %s ends with: %s", status, logPath, tail(logPath, 5))
	}
	if !ready.OK {
		return fmt.Errorf("the daemon could not start: %s (log: %s)", ready.Error, logPath)
	}
	return nil
}

// tail is the last n lines of a file, joined.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

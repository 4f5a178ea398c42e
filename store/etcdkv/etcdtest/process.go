//go:build unix

package etcdtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a real etcd server run as a child process on loopback ports;
// unlike the embedded server it can be paused, resumed and restarted.
type Process struct {
	// Endpoint is the client address (host:port).
	Endpoint string
	bin      string
	dir      string
	client   string
	peer     string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *tail
}

// DefaultBinary is where Debian's etcd-server package installs etcd.
const DefaultBinary = "/usr/bin/etcd"

// BinaryEnv names another etcd binary to test against.
const BinaryEnv = "ACCORDS_ETCD_BIN"

// Binary is $ACCORDS_ETCD_BIN, else /usr/bin/etcd; without one the test
// fails in CI and is skipped elsewhere.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		bin = DefaultBinary
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the etcd binary %s is needed (.ci/run installs Debian's etcd-server): %v", bin, err)
		}
		t.Skipf("no etcd binary at %s (install Debian's etcd-server, or set %s): %v", bin, BinaryEnv, err)
	}
	return bin
}

// StartProcess runs etcd until the test ends (skipping the test when
// there is no binary, outside CI).
func StartProcess(t testing.TB) *Process {
	t.Helper()
	p := &Process{bin: Binary(t), dir: filepath.Join(t.TempDir(), "etcd")}
	p.client = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	p.peer = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	p.Endpoint = strings.TrimPrefix(p.client, "http://")
	t.Cleanup(p.Stop)
	p.start(t)
	return p
}

func (p *Process) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(p.bin,
		"--name", "test", "--data-dir", p.dir,
		"--listen-client-urls", p.client, "--advertise-client-urls", p.client,
		"--listen-peer-urls", p.peer, "--initial-advertise-peer-urls", p.peer,
		"--initial-cluster", "test="+p.peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn")
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done, p.out = cmd, done, out
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.awaitHealthy(ctx, done); err != nil {
		p.Stop()
		t.Fatalf("etcd at %s did not become healthy: %v\n%s", p.Endpoint, err, out)
	}
}

// awaitHealthy polls etcd's /health until it says true (a member with a
// leader that serves requests).
func (p *Process) awaitHealthy(ctx context.Context, exited <-chan struct{}) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if healthy(ctx, p.client+"/health") {
			return nil
		}
		select {
		case <-exited:
			return errors.New("the process exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func healthy(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&h) == nil && h.Health == "true"
}

func (p *Process) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		t.Fatalf("etcd is not running")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to etcd: %v", sig, err)
	}
}

// Pause stops the process (SIGSTOP): it holds its connections open and
// answers nothing, like a member stalled on a disk or a VM pause.
func (p *Process) Pause(t testing.TB) { p.signal(t, syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume(t testing.TB) { p.signal(t, syscall.SIGCONT) }

// Stop ends the process (SIGTERM; SIGKILL after 10 s) and keeps its data
// for Start or Restart. Stopping a stopped process does nothing.
func (p *Process) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process handles no SIGTERM
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Start runs a stopped process again on the same data and addresses.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	p.start(t)
}

// Restart stops the process and starts it again on the same data and
// addresses.
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	p.Stop()
	p.start(t)
}

// Log is the tail of the process's output (diagnostics).
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

// tail keeps the last 64 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (w *tail) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, b...)
	if len(w.b) > 128<<10 {
		w.b = append([]byte(nil), w.b[len(w.b)-64<<10:]...)
	}
	return len(b), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

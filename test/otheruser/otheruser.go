//go:build linux

// Package otheruser plays another local user in the control socket tests:
// it runs the test binary itself again as the user nobody, listening on a
// Unix socket and recording every connection and every byte sent to it.
// A test package opts in by calling Main first in its TestMain; Listen
// then starts the recorder. Running a process as another uid needs root;
// Listen skips the test otherwise.
package otheruser

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envSocket tells a re-executed test binary to be the recorder, listening
// on the socket it names.
const envSocket = "ACCORDS_TEST_OTHERUSER_SOCKET"

// Main makes this process the recorder when it was started as one (it
// never returns then); otherwise it does nothing. Call it first in
// TestMain.
func Main() {
	path := os.Getenv(envSocket)
	if path == "" {
		return
	}
	os.Exit(record(path))
}

// record listens on path and reports on stdout: "ready" once it listens,
// then per connection "conn", a "data HEX" line per read, and "eof". A
// connection idle for half a second is closed, so a client waiting for an
// answer gets an error instead of hanging.
func record(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "otheruser:", err)
		return 1
	}
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", a...)
	}
	say("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0
		}
		say("conn")
		go func() {
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				n, err := c.Read(buf)
				if n > 0 {
					say("data %s", hex.EncodeToString(buf[:n]))
				}
				if err != nil {
					say("eof")
					return
				}
			}
		}()
	}
}

// User is the uid and gid of nobody.
func User(t *testing.T) (uid, gid int) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user (nobody); the CI runs the tests as root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody on this machine: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary is a copy of this test binary that nobody may run (the build
// folder is root's, mode 0700).
func binary() (string, error) {
	binOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			binErr = err
			return
		}
		dir, err := os.MkdirTemp("", "otheruser")
		if err != nil {
			binErr = err
			return
		}
		if binErr = os.Chmod(dir, 0o755); binErr != nil {
			return
		}
		binPath = filepath.Join(dir, filepath.Base(self))
		binErr = copyFile(self, binPath)
	})
	return binPath, binErr
}

// Cleanup removes the copied binary; call it at the end of TestMain.
func Cleanup() {
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Recorder is a listener running as nobody.
type Recorder struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string
	done chan struct{}
}

// Listen starts the recorder as nobody on path, whose folder nobody must
// be able to write to, and returns once it listens. It skips the test
// when not running as root.
func Listen(t *testing.T, path string) *Recorder {
	t.Helper()
	uid, gid := User(t)
	bin, err := binary()
	if err != nil {
		t.Fatalf("copy the test binary for nobody: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{envSocket + "=" + path, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the recorder as nobody: %v", err)
	}
	r := &Recorder{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		first := true
		for sc.Scan() {
			if first && sc.Text() == "ready" {
				first = false
				close(ready)
				continue
			}
			r.mu.Lock()
			r.out = append(r.out, sc.Text())
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { r.stop() })
	select {
	case <-ready:
	case <-r.done:
		_ = cmd.Wait()
		t.Fatalf("the recorder did not start: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the recorder did not report ready: %s", stderr.String())
	}
	return r
}

func (r *Recorder) stop() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		<-r.done
		_ = r.cmd.Wait()
	}
}

// Stop ends the recorder and returns what it saw: the number of
// connections and every byte sent to it.
func (r *Recorder) Stop() (conns int, received string) {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var sb strings.Builder
	for _, l := range r.out {
		switch {
		case l == "conn":
			conns++
		case strings.HasPrefix(l, "data "):
			b, _ := hex.DecodeString(strings.TrimPrefix(l, "data "))
			sb.Write(b)
		}
	}
	return conns, sb.String()
}

package control_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder listens on a socket in-process and keeps what it is sent: a
// socket this user did not make, as far as the client can tell only from
// the path.
type recorder struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	got   []byte
	wg    sync.WaitGroup
}

func listenRecorder(t *testing.T, path string) *recorder {
	t.Helper()
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	r := &recorder{ln: ln}
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns++
			r.mu.Unlock()
			r.wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					// An idle client is let go, so one that waits for an
					// answer fails instead of hanging.
					_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
					n, err := c.Read(buf)
					r.mu.Lock()
					r.got = append(r.got, buf[:n]...)
					r.mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *recorder) stop() (int, string) {
	r.ln.Close()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, string(r.got)
}

const secretToken = "vc_tok_trust_me_0123456789"

// every way a client speaks first: a launch's attach (its hello carries
// the Vault token) and an operator command.
func tryClient(t *testing.T, sock string) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := control.NewClient(sock)
	defer c.Close()
	conn, _, aerr := c.Attach(ctx, control.Hello{Protocol: control.Protocol, Env: session.Defaults{Token: secretToken}})
	if conn != nil {
		conn.Close()
	}
	_, serr := c.Status(ctx)
	return []error{aerr, serr}
}

// TestClientRefusesSocketInFolderOthersMayWrite is the shared temporary
// folder attack: the socket's folder is writable by everyone, so whoever
// listens there may be another user. The client refuses before connecting.
func TestClientRefusesSocketInFolderOthersMayWrite(t *testing.T) {
	dir := shortDir(t)
	require.NoError(t, os.Chmod(dir, 0o777))
	sock := filepath.Join(dir, "accords.db.sock")
	r := listenRecorder(t, sock)
	for _, err := range tryClient(t, sock) {
		require.ErrorIs(t, err, control.ErrUntrusted)
		assert.ErrorContains(t, err, "0777")
		assert.ErrorContains(t, err, "chmod 700 "+dir)
		assert.NotErrorIs(t, err, control.ErrNotRunning, "a launch must not start a daemon there either")
	}
	conns, got := r.stop()
	assert.Zero(t, conns, "nothing connected")
	assert.NotContains(t, got, secretToken)
}

// TestClientRefusesSocketOfAnotherUser: the folder or the socket file
// belongs to another user (as root, chown shows it).
func TestClientRefusesSocketOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user (chown)")
	}
	for _, what := range []string{"folder", "socket"} {
		t.Run(what, func(t *testing.T) {
			dir := shortDir(t)
			sock := filepath.Join(dir, "accords.db.sock")
			r := listenRecorder(t, sock)
			target := dir
			if what == "socket" {
				target = sock
			}
			require.NoError(t, os.Lchown(target, 65534, 65534))
			for _, err := range tryClient(t, sock) {
				require.ErrorIs(t, err, control.ErrUntrusted)
				assert.ErrorContains(t, err, "uid 65534")
			}
			conns, got := r.stop()
			assert.Zero(t, conns, "nothing connected")
			assert.NotContains(t, got, secretToken)
		})
	}
}

func TestClientStillFindsNoDaemon(t *testing.T) {
	dir := shortDir(t)
	for _, p := range []string{filepath.Join(dir, "missing", "a.sock"), filepath.Join(dir, "a.sock")} {
		_, err := control.NewClient(p).Status(context.Background())
		assert.ErrorIs(t, err, control.ErrNotRunning, p)
	}
}

func TestListenRefusesFolderOthersMayWrite(t *testing.T) {
	dir := shortDir(t)
	require.NoError(t, os.Chmod(dir, 0o777))
	p := filepath.Join(dir, "a.sock")
	_, err := control.Listen(p)
	require.ErrorIs(t, err, privdir.ErrUnsafe)
	_, err = os.Lstat(p)
	assert.True(t, errors.Is(err, os.ErrNotExist), "no socket made")
	_, err = control.LockOwner(context.Background(), filepath.Join(dir, "a.db"))
	require.ErrorIs(t, err, privdir.ErrUnsafe)
	_, err = os.Lstat(control.OwnerLockPath(filepath.Join(dir, "a.db")))
	assert.True(t, errors.Is(err, os.ErrNotExist), "no lock file made")
}

// TestRebindAfterTheSocketFileIsRemoved: the listener binds its path again
// and serves on it; connections accepted before go on.
func TestRebindAfterTheSocketFileIsRemoved(t *testing.T) {
	dir := shortDir(t)
	p := filepath.Join(dir, "a.sock")
	ln, err := control.Listen(p)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &control.Server{Status: control.Status{PID: 7}}
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()
	c := control.NewClient(p)
	defer c.Close()
	_, err = c.Status(ctx)
	require.NoError(t, err)

	require.NoError(t, os.Remove(p))
	_, err = control.NewClient(p).Status(ctx)
	require.ErrorIs(t, err, control.ErrNotRunning)
	require.NoError(t, ln.Rebind())
	st, err := control.NewClient(p).Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, st.PID)
	st, err = c.Status(ctx)
	require.NoError(t, err, "the kept-alive connection of before goes on")
	assert.Equal(t, 7, st.PID)

	// A live socket of another process at the path is never taken over.
	require.NoError(t, os.Remove(p))
	other, err := control.Listen(p)
	require.NoError(t, err)
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	assert.ErrorIs(t, ln.Rebind(), control.ErrInUse)
	other.Close()

	cancel()
	require.NoError(t, <-done)
}

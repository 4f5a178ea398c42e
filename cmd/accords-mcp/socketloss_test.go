package main

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// served is `serve --http` running in-process.
type served struct {
	stderr *syncbuf.Buffer
	// exited is closed when run returns, with code set.
	exited chan struct{}
	code   int
	stop   context.CancelFunc
}

func serveHTTP(t *testing.T, vars map[string]string) *served {
	t.Helper()
	s := &served{stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	env := &environment{stdin: strings.NewReader(""), stdout: &syncbuf.Buffer{}, stderr: s.stderr, getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() {
		defer close(s.exited)
		s.code = run(ctx, env, []string{"serve", "--http", freeAddr(t)})
	}()
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), `"msg":"ready"`) }, 20*time.Second, 10*time.Millisecond, s.stderr.String())
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return s
}

// TestRemovedSocketIsBoundAgain: deleting the control socket of `serve
// --http` (a temporary-file cleaner, a mistaken rm) leaves the service up:
// the socket is bound again, the operator commands reach the same process,
// and it says so in its log.
func TestRemovedSocketIsBoundAgain(t *testing.T) {
	vars := opsVars(t)
	s := serveHTTP(t, vars)
	sock := control.SocketPath(vars["ACCORDS_MCP_DB"])
	code, before, errOut := runCmd(t, vars, "status", "--json")
	require.Equal(t, 0, code, errOut)
	first, err := os.Lstat(sock)
	require.NoError(t, err)

	require.NoError(t, os.Remove(sock))
	require.Eventually(t, func() bool {
		select {
		case <-s.exited:
			t.Fatalf("serve exited (code %d) when its socket was removed:\n%s", s.code, s.stderr.String())
		default:
		}
		fi, err := os.Lstat(sock)
		return err == nil && fi.Mode()&os.ModeSocket != 0 && !os.SameFile(first, fi)
	}, 20*time.Second, 20*time.Millisecond, "the socket is bound again")
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	code, after, errOut := runCmd(t, vars, "status", "--json")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, pidOf(t, before), pidOf(t, after), "the same process answers")
	assert.Contains(t, s.stderr.String(), "the control socket was removed or replaced; bound it again")

	s.stop()
	<-s.exited
	assert.Equal(t, 0, s.code)
}

// TestServeExitsNonZeroWhenItsSocketCannotComeBack: when the socket cannot
// be bound again, `serve --http` stops and exits 1 with the reason, so a
// supervisor restarts it: another process answers on the path now, or the
// database file itself was removed (there is nothing left to serve).
func TestServeExitsNonZeroWhenItsSocketCannotComeBack(t *testing.T) {
	for _, c := range []struct {
		name, why string
		do        func(t *testing.T, db string)
	}{
		{"another process answers there", "in use", func(t *testing.T, db string) {
			sock := control.SocketPath(db)
			require.NoError(t, os.Remove(sock))
			ln, err := net.Listen("unix", sock)
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}},
		{"the database was removed", "no such file", func(t *testing.T, db string) {
			require.NoError(t, os.Remove(db))
			require.NoError(t, os.Remove(control.SocketPath(db)))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars := opsVars(t)
			s := serveHTTP(t, vars)
			c.do(t, vars["ACCORDS_MCP_DB"])
			select {
			case <-s.exited:
				assert.Equal(t, 1, s.code, s.stderr.String())
				assert.Contains(t, s.stderr.String(), "cannot be bound again")
				assert.Contains(t, s.stderr.String(), c.why)
			case <-time.After(30 * time.Second):
				t.Fatalf("serve still runs:\n%s", s.stderr.String())
			}
		})
	}
}

func pidOf(t *testing.T, statusJSON string) string {
	t.Helper()
	i := strings.Index(statusJSON, `"pid":`)
	require.GreaterOrEqual(t, i, 0, statusJSON)
	rest := statusJSON[i+len(`"pid":`):]
	return strings.TrimSpace(rest[:strings.IndexAny(rest, ",}")])
}

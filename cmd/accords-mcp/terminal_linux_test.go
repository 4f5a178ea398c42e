package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestTerminalHint: a stdio start whose stdin is a terminal says what it
// waits for; one launched by a client (a pipe) or on /dev/null says
// nothing.
func TestTerminalHint(t *testing.T) {
	_, tty := openPTY(t)
	var errb bytes.Buffer
	hintTerminal(&environment{stdin: tty, stderr: &errb})
	assert.Contains(t, errb.String(), "waits for an MCP client's JSON-RPC messages")
	assert.Contains(t, errb.String(), "Ctrl-D or Ctrl-C ends it")

	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for _, in := range []*os.File{devnull, r} {
		errb.Reset()
		hintTerminal(&environment{stdin: in, stderr: &errb})
		assert.Empty(t, errb.String(), in.Name())
	}
	errb.Reset()
	hintTerminal(&environment{stdin: strings.NewReader(""), stderr: &errb})
	assert.Empty(t, errb.String())
}

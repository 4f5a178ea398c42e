package main

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterruptIsANormalStop: Ctrl-C (SIGINT) and SIGTERM end a stdio
// server with exit 0 and no ERROR line; the SDK used to log "server run
// cancelled" at error level.
func TestInterruptIsANormalStop(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		p := start(t, filepath.Join(t.TempDir(), "accords.db"))
		p.send(t, initMsg)
		_ = p.recv(t)
		require.NoError(t, p.cmd.Process.Signal(sig))
		assert.Equal(t, 0, p.wait(t), sig.String())
		logs := p.stderr.String()
		assert.NotContains(t, logs, `"level":"ERROR"`, sig.String())
		assert.Contains(t, logs, `"msg":"stopping","reason":"signal"`, sig.String())
	}
}

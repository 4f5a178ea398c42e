package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProgressQuietWhenNotATerminal: a file, a pipe or a buffer (cron mail,
// CI logs) gets no \r frames and no bar at all.
func TestProgressQuietWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	bar := &progressBar{w: &buf, label: "importing", width: 30}
	for i := 1; i <= 5; i++ {
		bar.update(i, 5, "")
	}
	bar.finish()
	assert.Empty(t, buf.String())

	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer f.Close()
	bar = &progressBar{w: f, label: "reindexing", width: 30}
	bar.update(1, 2, "entries")
	bar.update(2, 2, "entries")
	bar.finish()
	raw, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Empty(t, raw, "a regular file is not a terminal")
}

// TestProgressDrawsOnATerminal: on a real pseudo-terminal the bar is drawn
// with its label and count, and finish ends the line.
func TestProgressDrawsOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			b.Write(buf[:n])
			if err != nil || strings.Contains(b.String(), "DONE") {
				got <- b.String()
				return
			}
		}
	}()
	bar := &progressBar{w: tty, label: "reindexing", width: 20}
	for i := 1; i <= 4; i++ {
		bar.update(i, 4, "entries")
	}
	bar.finish()
	_, err = io.WriteString(tty, "DONE")
	require.NoError(t, err)
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing read from the pseudo-terminal")
	}
	tty.Close()
	assert.Contains(t, out, "reindexing")
	assert.Contains(t, out, "4/4")
	assert.Contains(t, out, "entries")
	assert.Contains(t, out, "\r", "a terminal gets frames redrawn in place")
	assert.Regexp(t, `4/4[^\r]*\r?\n`, out, "finish ends the bar's line")
}

// TestCommandsWriteNoFramesToAPipe runs import and reindex with stderr a
// buffer, as under cron or CI: only the command's own lines reach it.
func TestCommandsWriteNoFramesToAPipe(t *testing.T) {
	c := &cliEnv{t: t, dir: t.TempDir()}
	out := c.run("catalog", "import", "testdata/import/weather.json", "testdata/import/bad.json")
	assert.NotContains(t, out, "\r")
	assert.NotContains(t, out, "importing [")
	out = c.run("reindex")
	assert.NotContains(t, out, "\r")
	assert.Contains(t, out, "reindexed ")
}

package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An Anchor hands a signed checkpoint to a place the holder of the database
// folder cannot rewrite. Anchoring never blocks calls: checkpoints are
// queued to a goroutine, and a failure is only reported (OnAnchor).
type Anchor interface {
	// Target names the anchor in logs and metrics.
	Target() string
	Anchor(ctx context.Context, cp Checkpoint) error
}

// ParseAnchor reads ACCORDS_MCP_AUDIT_ANCHOR: "file:PATH" (or an absolute
// PATH) appends each checkpoint to that file; "exec:COMMAND" runs COMMAND
// with /bin/sh, the checkpoint on stdin. "" is no anchor.
func ParseAnchor(spec string) (Anchor, error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return nil, nil
	case strings.HasPrefix(spec, "file:"):
		return fileAnchor(strings.TrimPrefix(spec, "file:"))
	case strings.HasPrefix(spec, "exec:"):
		cmd := strings.TrimSpace(strings.TrimPrefix(spec, "exec:"))
		if cmd == "" {
			return nil, errors.New("ACCORDS_MCP_AUDIT_ANCHOR: exec: needs a command")
		}
		return &CommandAnchor{Command: cmd, Timeout: 30 * time.Second}, nil
	case strings.HasPrefix(spec, "/"):
		return fileAnchor(spec)
	}
	return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_ANCHOR %q: use file:/path/to/anchor.log or exec:command", spec)
}

func fileAnchor(path string) (Anchor, error) {
	if strings.TrimSpace(path) == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_ANCHOR: file: needs an absolute path, got %q", path)
	}
	return &FileAnchor{Path: path}, nil
}

// FileAnchor appends each checkpoint (a signed note and a blank line) to a
// file opened in append mode and synced. Make it append-only for the
// database's holder: another disk or user, chattr +a, a mounted log volume.
type FileAnchor struct {
	Path string
	mu   sync.Mutex
}

// Target is "file:PATH".
func (a *FileAnchor) Target() string { return "file:" + a.Path }

// Anchor appends cp.
func (a *FileAnchor) Anchor(_ context.Context, cp Checkpoint) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(append([]byte(nil), cp.Note...), '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// CommandAnchor runs Command with /bin/sh, the checkpoint on stdin and its
// size and origin in ACCORDS_AUDIT_CHECKPOINT_SIZE and
// ACCORDS_AUDIT_ORIGIN (a git commit, logger(1), a witness client).
type CommandAnchor struct {
	Command string
	Timeout time.Duration
}

// Target is "exec:COMMAND".
func (a *CommandAnchor) Target() string { return "exec:" + a.Command }

// Anchor runs the command; a non-zero exit is an error with its stderr.
func (a *CommandAnchor) Anchor(ctx context.Context, cp Checkpoint) error {
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.Command)
	cmd.Stdin = bytes.NewReader(cp.Note)
	cmd.Env = append(os.Environ(), "ACCORDS_AUDIT_CHECKPOINT_SIZE="+strconv.FormatUint(cp.Size, 10), "ACCORDS_AUDIT_ORIGIN="+cp.Origin)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 2048}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// anchorQueue delivers checkpoints in order on its own goroutine. When it
// falls behind, older checkpoints are dropped (each newer one covers them)
// and the drop is reported as a failure.
type anchorQueue struct {
	a      Anchor
	report func(string, error)
	ch     chan Checkpoint
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

const anchorQueueSize = 16

// ErrAnchorBehind reports a checkpoint dropped because the anchor lagged.
var ErrAnchorBehind = errors.New("anchor is behind: checkpoint dropped (a newer one covers it)")

func newAnchorQueue(a Anchor, report func(string, error)) *anchorQueue {
	if report == nil {
		report = func(string, error) {}
	}
	q := &anchorQueue{a: a, report: report, ch: make(chan Checkpoint, anchorQueueSize), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q
}

func (q *anchorQueue) push(cp Checkpoint) {
	for {
		select {
		case q.ch <- cp:
			return
		default:
		}
		select {
		case <-q.ch:
			q.report(q.a.Target(), ErrAnchorBehind)
		default:
		}
	}
}

func (q *anchorQueue) run() {
	defer close(q.done)
	for cp := range q.ch {
		q.report(q.a.Target(), q.a.Anchor(q.ctx, cp))
	}
}

// close delivers what is queued within grace, then cancels.
func (q *anchorQueue) close(grace time.Duration) {
	close(q.ch)
	select {
	case <-q.done:
	case <-time.After(grace):
		q.cancel()
		<-q.done
	}
	q.cancel()
}

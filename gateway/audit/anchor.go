package audit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// An Anchor hands a signed checkpoint to a place the holder of the database
// folder cannot rewrite. It never blocks calls; failures are reported.
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
// file, synced; make it append-only for the database's holder.
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
	_, err = f.Write(append(append([]byte(nil), cp.Note...), '\n'))
	if err == nil {
		err = f.Sync()
	}
	return cmp.Or(err, f.Close())
}

// CommandAnchor runs Command with /bin/sh, the checkpoint on stdin, its
// size and origin in ACCORDS_AUDIT_CHECKPOINT_SIZE and ACCORDS_AUDIT_ORIGIN.
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

// anchorQueue delivers checkpoints in order on its own goroutine; when it
// falls behind, older ones are dropped (a newer one covers them) and the
// drop is reported.
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

// AnchorReader is an anchor whose newest checkpoints can be read back.
type AnchorReader interface {
	// Tail returns the checkpoints at the end of the anchor, oldest first
	// (none when it holds nothing yet).
	Tail() ([][]byte, error)
}

// anchorTail is how much of the end of an anchor file Tail reads.
const anchorTail = 64 << 10

// Tail reads the notes at the end of the file (none when it does not
// exist). The first may be cut; the check uses the newest that verifies.
func (a *FileAnchor) Tail() ([][]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-anchorTail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(buf, '\n'); off > 0 && i >= 0 {
		buf = buf[i+1:] // start at a line
	}
	return SplitNotes(buf), nil
}

// checkAnchor checks that the log extends the newest checkpoint at the end
// of a readable anchor (CheckAnchor), unless its receipts were pruned since
// or a signed restore record accounts for it: an older copy of the
// database swapped in shows here.
func (l *Log) checkAnchor() *Problem {
	ar, ok := l.opts.Anchor.(AnchorReader)
	if !ok {
		return nil
	}
	target := l.opts.Anchor.Target()
	notes, err := ar.Tail()
	if err != nil || len(notes) == 0 {
		return nil // nothing to compare with; hand-overs report a failing anchor
	}
	var cp Checkpoint
	found := false
	for i := len(notes) - 1; i >= 0 && !found; i-- {
		if c, err := OpenCheckpoint(notes[i], "", l.key.Verifier()); err == nil {
			cp, found = c, true
		}
	}
	if !found {
		return &Problem{Kind: ProblemForged, Message: fmt.Sprintf("no checkpoint at the end of the anchor %s is signed by the audit key (%s)", target, l.key.Verifier().Name())}
	}
	var p *Problem
	err = inAudit(l.db.View, func(b buckets) error {
		var head Head
		if _, err := store.GetJSON(b.root, keyHead, &head); err != nil {
			return err
		}
		start, _ := newestStart(b.bases) // receipts up to it were pruned
		var root []byte
		switch {
		case cp.Origin != l.origin:
			p = &Problem{Kind: ProblemForeign, Message: fmt.Sprintf("the newest checkpoint in the anchor %s is of log %s, this database holds log %s: the database was replaced", target, cp.Origin, l.origin)}
		case cp.Size <= start.Size:
			return nil // pruned since: nothing left to compare
		case cp.Size > head.Seq:
			p = &Problem{Kind: ProblemRolledBack, Seq: head.Seq + 1, Message: fmt.Sprintf("the newest checkpoint in the anchor %s covers %d receipts but the log ends at receipt %d: an older copy of the database was put in place (receipts %d..%d are gone)", target, cp.Size, head.Seq, head.Seq+1, cp.Size)}
		default:
			rng, err := loadRange(b.tree, cp.Size)
			if err == nil {
				root = rootOf(rng)
			}
			if !bytes.Equal(root, cp.Root) {
				p = &Problem{Kind: ProblemRewritten, Seq: cp.Size, Message: fmt.Sprintf("the receipts up to %d are not the ones the newest checkpoint in the anchor %s covers: the log was replaced or rewritten", cp.Size, target)}
			}
		}
		if p == nil {
			return nil
		}
		restores, rp := readRestores(readKeyed(b.restores), l.origin, l.key.Verifier())
		if rp != nil {
			p = rp
			return nil
		}
		if restoreAccounts(restores, cp) {
			p = nil
		}
		return nil
	})
	if err != nil {
		return &Problem{Kind: ProblemCorrupt, Message: fmt.Sprintf("checking the log against the anchor %s: %v", target, err)}
	}
	return p
}

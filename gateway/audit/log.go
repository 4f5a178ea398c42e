package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

// Layout inside the top-level "audit" bucket.
var (
	bucketReceipts = []byte("receipts")   // big-endian seq -> receipt JSON
	keyHead        = []byte("head")       // last appended {seq, hash}
	keyCheckpoint  = []byte("checkpoint") // last pruned {seq, hash}
)

// Head is the position of the newest receipt. It is written in the same
// transaction as the receipt, so removing receipts from the tail is visible.
type Head struct {
	Seq       uint64 `json:"seq"`
	Hash      string `json:"hash"`
	Timestamp string `json:"timestamp,omitempty"`
}

// Checkpoint is the last receipt removed by retention: verification of the
// remaining log starts from it.
type Checkpoint struct {
	Seq      uint64 `json:"seq"`
	Hash     string `json:"hash"`
	PrunedAt string `json:"pruned_at"`
	Pruned   uint64 `json:"pruned_total"`
}

// DefaultLinger is the default group-commit window for receipts nobody
// waits for.
const DefaultLinger = 5 * time.Millisecond

// ErrClosed is returned by appends after Close.
var ErrClosed = errors.New("audit log is closed")

// Retention bounds the log; zero fields mean no bound.
type Retention struct {
	MaxAge   time.Duration
	MaxCount uint64
}

// DefaultRetention keeps 90 days and at most 100000 receipts.
var DefaultRetention = Retention{MaxAge: 90 * 24 * time.Hour, MaxCount: 100000}

// ParseRetention reads ACCORDS_MCP_AUDIT_RETENTION: comma-separated bounds,
// each an age ("90d", "720h", "30m") or a count ("100000"); "off" keeps
// everything; "" is the default.
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return DefaultRetention, nil
	}
	if s == "off" || s == "none" || s == "0" {
		return Retention{}, nil
	}
	var r Retention
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err == nil {
			if n == 0 {
				return r, fmt.Errorf("audit retention count must be positive, got %q", part)
			}
			r.MaxCount = n
			continue
		}
		var d time.Duration
		var err error
		if days, ok := strings.CutSuffix(part, "d"); ok {
			var n float64
			n, err = strconv.ParseFloat(days, 64)
			d = time.Duration(n * float64(24*time.Hour))
		} else {
			d, err = time.ParseDuration(part)
		}
		if err != nil || d <= 0 {
			return r, fmt.Errorf("audit retention %q: use an age such as 90d or 720h, a count such as 100000, or off", part)
		}
		r.MaxAge = d
	}
	return r, nil
}

// Options tune Open.
type Options struct {
	Retention Retention
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// QueueSize bounds receipts waiting for the writer (default 4096); a full
	// queue makes appends wait, never drops a receipt.
	QueueSize int
	// PruneEvery is the number of commits between retention passes
	// (default 256); a pass also runs at Open.
	PruneEvery int
	// Linger is how long the writer waits to gather more receipts into one
	// commit when nobody is waiting for the commit (default 5ms; negative
	// disables). It bounds how long a read tool's receipt can sit in memory.
	Linger time.Duration
}

type item struct {
	r       Receipt
	barrier bool
	prune   bool
	done    chan error
}

// Log appends receipts through one writer goroutine that group-commits
// whatever is queued in one bbolt transaction (one fsync per group, not per
// call), preserving enqueue order, which is completion order.
type Log struct {
	db   *store.DB
	opts Options

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan item
	done   chan struct{}

	healthy atomic.Bool
	lastErr atomic.Value // string

	head       Head
	checkpoint Checkpoint
	commits    int
	// beforeCommit lets tests make commits fail.
	beforeCommit func() error
}

// Open starts the log on db (its "audit" bucket must exist: migration v1).
func Open(db *store.DB, opts Options) (*Log, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = 256
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	l := &Log{db: db, opts: opts, queue: make(chan item, opts.QueueSize), done: make(chan struct{})}
	err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketAudit)
		if b == nil {
			return errors.New("audit bucket missing (database not migrated)")
		}
		if _, err := b.CreateBucketIfNotExists(bucketReceipts); err != nil {
			return err
		}
		if _, err := store.GetJSON(b, keyHead, &l.head); err != nil {
			return err
		}
		_, err := store.GetJSON(b, keyCheckpoint, &l.checkpoint)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if l.head.Hash == "" {
		l.head.Hash = Genesis
		if l.checkpoint.Hash != "" {
			l.head = Head{Seq: l.checkpoint.Seq, Hash: l.checkpoint.Hash}
		}
	}
	l.healthy.Store(true)
	if _, err := l.prune(); err != nil {
		l.setErr(err)
	}
	go l.run()
	return l, nil
}

// Append queues r and returns without waiting for the commit. It fails only
// when the log is closed.
func (l *Log) Append(r Receipt) error { return l.send(item{r: r}, false) }

// AppendSync queues r and waits until it is committed (or failed).
func (l *Log) AppendSync(r Receipt) error { return l.send(item{r: r}, true) }

// Flush waits until everything queued before it is committed.
func (l *Log) Flush() error { return l.send(item{barrier: true}, true) }

// Prune applies retention now (it also runs periodically).
func (l *Log) Prune() error { return l.send(item{prune: true}, true) }

func (l *Log) send(it item, wait bool) error {
	if wait {
		it.done = make(chan error, 1)
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	l.queue <- it
	l.mu.RUnlock()
	if !wait {
		return nil
	}
	return <-it.done
}

// Healthy reports whether the last commit succeeded, with the last error.
func (l *Log) Healthy() (bool, string) {
	if l.healthy.Load() {
		return true, ""
	}
	s, _ := l.lastErr.Load().(string)
	return false, s
}

func (l *Log) setErr(err error) {
	l.lastErr.Store(err.Error())
	l.healthy.Store(false)
}

// Close drains the queue and stops the writer. The database stays open.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	<-l.done
	return nil
}

func (l *Log) run() {
	defer close(l.done)
	batch := make([]item, 0, 512)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for it := range l.queue {
		batch = append(batch[:0], it)
		waited := it.done != nil
		lingering := false
	gather:
		for len(batch) < cap(batch) {
			select {
			case next, ok := <-l.queue:
				if !ok {
					break gather
				}
				batch = append(batch, next)
				waited = waited || next.done != nil
				continue
			default:
			}
			// Queue empty. Commit now if someone waits (write tools,
			// flushes); otherwise gather more receipts into this commit,
			// for at most Linger from the first empty queue.
			if waited || l.opts.Linger < 0 {
				break gather
			}
			if !lingering {
				lingering = true
				linger.Reset(l.opts.Linger)
			}
			select {
			case next, ok := <-l.queue:
				if !ok {
					break gather
				}
				batch = append(batch, next)
				waited = waited || next.done != nil
			case <-linger.C:
				lingering = false
				break gather
			}
		}
		if lingering {
			linger.Stop()
		}
		l.commit(batch)
	}
}

func (l *Log) commit(batch []item) {
	var receipts, prunes int
	for _, it := range batch {
		switch {
		case it.prune:
			prunes++
		case !it.barrier:
			receipts++
		}
	}
	var err error
	if receipts > 0 {
		err = l.write(batch)
		if err != nil {
			l.setErr(err)
		} else {
			l.healthy.Store(true)
			l.commits++
		}
	}
	if prunes > 0 || (receipts > 0 && l.commits%l.opts.PruneEvery == 0) {
		if _, perr := l.prune(); perr != nil && err == nil && prunes > 0 {
			err = perr
		}
	}
	for _, it := range batch {
		if it.done != nil {
			it.done <- err
		}
	}
}

func (l *Log) write(batch []item) error {
	head := l.head
	err := l.db.Update(func(tx *bolt.Tx) error {
		if l.beforeCommit != nil {
			if err := l.beforeCommit(); err != nil {
				return err
			}
		}
		b := tx.Bucket(store.BucketAudit)
		if b == nil {
			return errors.New("audit bucket missing")
		}
		rb := b.Bucket(bucketReceipts)
		if rb == nil {
			return errors.New("audit receipts bucket missing")
		}
		for i := range batch {
			if batch[i].barrier || batch[i].prune {
				continue
			}
			r := sanitize(batch[i].r)
			seq, err := rb.NextSequence()
			if err != nil {
				return err
			}
			r.Seq = seq
			r.Type = TypeToolCall
			r.PrevHash = head.Hash
			raw, err := seal(&r)
			if err != nil {
				return err
			}
			if err := rb.Put(store.U64(seq), raw); err != nil {
				return err
			}
			head = Head{Seq: seq, Hash: r.Hash, Timestamp: r.Timestamp}
		}
		return store.PutJSON(b, keyHead, head)
	})
	if err != nil {
		return fmt.Errorf("append audit receipt: %w", err)
	}
	l.head = head
	return nil
}

// prune removes receipts beyond the retention bounds, oldest first, in
// transactions of at most pruneChunk deletions, recording the last removed
// receipt as the checkpoint in the same transaction.
func (l *Log) prune() (int, error) {
	ret := l.opts.Retention
	if ret.MaxAge <= 0 && ret.MaxCount == 0 {
		return 0, nil
	}
	total := 0
	for {
		n, err := l.pruneChunk(ret)
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}

const pruneChunk = 5000

func (l *Log) pruneChunk(ret Retention) (int, error) {
	var cutoff string
	if ret.MaxAge > 0 {
		cutoff = l.opts.Now().UTC().Add(-ret.MaxAge).Format(time.RFC3339Nano)
	}
	cp := l.checkpoint
	deleted := 0
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketAudit)
		rb := b.Bucket(bucketReceipts)
		if rb == nil {
			return nil
		}
		// Sequences are contiguous between the checkpoint and the head.
		var count uint64
		if l.head.Seq > cp.Seq {
			count = l.head.Seq - cp.Seq
		}
		var doomed [][]byte
		c := rb.Cursor()
		for k, v := c.First(); k != nil && len(doomed) < pruneChunk; k, v = c.Next() {
			var r Receipt
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("prune: receipt %x unreadable: %w", k, err)
			}
			overCount := ret.MaxCount > 0 && count-uint64(len(doomed)) > ret.MaxCount
			tooOld := cutoff != "" && olderThan(r.Timestamp, cutoff)
			if !overCount && !tooOld {
				break
			}
			doomed = append(doomed, append([]byte(nil), k...))
			cp.Seq, cp.Hash = r.Seq, r.Hash
		}
		if len(doomed) == 0 {
			return nil
		}
		for _, k := range doomed {
			if err := rb.Delete(k); err != nil {
				return err
			}
		}
		cp.Pruned += uint64(len(doomed))
		cp.PrunedAt = l.opts.Now().UTC().Format(time.RFC3339Nano)
		deleted = len(doomed)
		return store.PutJSON(b, keyCheckpoint, cp)
	})
	if err != nil {
		return 0, fmt.Errorf("prune audit log: %w", err)
	}
	l.checkpoint = cp
	return deleted, nil
}

// olderThan compares RFC 3339 UTC timestamps, parsing so that differing
// fractional precision compares correctly.
func olderThan(ts, cutoff string) bool {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return false
	}
	c, _ := time.Parse(time.RFC3339Nano, cutoff)
	return t.Before(c)
}

// sanitize makes every string valid UTF-8: JSON encoding would otherwise
// replace invalid bytes on the way out and the stored bytes would no longer
// be the canonical form of the decoded receipt.
func sanitize(r Receipt) Receipt {
	for _, f := range []*string{&r.CallID, &r.Timestamp, &r.Caller, &r.Transport, &r.Scope, &r.Tool,
		&r.CapabilityUsed, &r.ParamsHash, &r.ResultHash, &r.Outcome} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	return r
}

package audit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
)

// Layout inside the top-level "audit" bucket (sub-buckets from migration
// v2; receipts from v1).
var (
	bucketReceipts    = []byte("receipts")    // big-endian seq -> receipt JSON (the leaf bytes)
	bucketTree        = []byte("tree")        // big-endian storage position -> 32-byte subtree hash
	bucketCheckpoints = []byte("checkpoints") // big-endian tree size -> signed checkpoint note
	bucketBases       = []byte("bases")       // big-endian tree size -> signed base note
	bucketRestores    = []byte("restores")    // big-endian restore number -> signed restored note
	keyHead           = []byte("head")        // last appended {seq, hash}
	keyLog            = []byte("log")         // {origin, created}
	keyIntegrity      = []byte("integrity")   // an unacknowledged verification failure
	keyTenants        = []byte("tenants")     // {scope: receipts of it in the log}, for the retention floor
	// keyLegacyCheckpoint is the unsigned retention record of logs written
	// before signed audit; adoption replaces it with a signed base.
	keyLegacyCheckpoint = []byte("checkpoint")
)

// Head is the position of the newest receipt. It is written in the same
// transaction as the receipt, so removing receipts from the tail is visible.
type Head struct {
	Seq       uint64 `json:"seq"`
	Hash      string `json:"hash"`
	Timestamp string `json:"timestamp,omitempty"`
}

// logInfo names the log; the origin is the first line of its checkpoints.
type logInfo struct {
	Origin  string `json:"origin"`
	Created string `json:"created"`
}

// Ref names a receipt for a transcript: its sequence number (leaf index
// Seq-1) and RFC 6962 leaf hash, in the log named by Origin.
type Ref struct {
	Seq      uint64 `json:"seq"`
	LeafHash string `json:"leaf_hash"`
	Origin   string `json:"log"`
}

// Defaults.
const (
	DefaultLinger             = 5 * time.Millisecond
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = 30 * time.Second
	DefaultStartupStretch     = 4096
	DefaultMaxBacklog         = 65536
)

// Errors of appends.
var (
	ErrClosed = errors.New("audit log is closed")
	// ErrBacklog means commits have been failing for so long that the
	// receipts waiting in memory hit Options.MaxBacklog; the receipt was
	// not numbered, so the chain has no gap.
	ErrBacklog = errors.New("audit log backlog full: receipts cannot be committed")
)

// Options tune Open.
type Options struct {
	// Key signs checkpoints and base notes. Required.
	Key       *Key
	Retention Retention
	Cadence   Cadence
	// Anchor receives each signed checkpoint (nil: none); OnAnchor learns
	// the outcome of each hand-over (metrics, logs).
	Anchor   Anchor
	OnAnchor func(target string, err error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// QueueSize bounds receipts waiting for the writer (default 4096); a full
	// queue makes appends wait, never drops a receipt.
	QueueSize int
	// MaxBacklog bounds receipts kept in memory while commits fail (default
	// 65536).
	MaxBacklog int
	// PruneEvery is the number of commits between retention passes
	// (default 256); a pass also runs at Open.
	PruneEvery int
	// Linger is how long the writer waits to gather more receipts into one
	// commit when nobody is waiting for the commit (default 5ms; negative
	// disables). It bounds how long a read tool's receipt can sit in memory.
	Linger time.Duration
	// StartupStretch is how many of the newest receipts Open verifies
	// (default 4096).
	StartupStretch int
	// VerifyDelay is how long after Open that verification begins
	// (default 0: at once). A server sets it so that a launching client's
	// handshake does not share the machine with thousands of receipt
	// hashes; Integrity (a write tool's admission, a health check) and
	// Close cut the wait short, and nothing is committed before the
	// verification has run.
	VerifyDelay time.Duration
	// OnStartProblem, when set, is told of a verification failure found
	// at start, before Integrity reports it.
	OnStartProblem func(*Problem)
	// OnPrune, when set, is told of each retention pass that removed
	// receipts (on the writer's goroutine: keep it short).
	OnPrune func(PruneEvent)
	// CheckAnchor makes the start-up verification read the newest
	// checkpoint of an anchor that can be read back (a file anchor) and
	// flag a log that does not extend it as it flags a damaged log, unless
	// a signed restore record accounts for it. Servers set it; tools that
	// open the log for a moment (acknowledge, restore) do not.
	CheckAnchor bool
	// Shared means other processes append to the same log (replicas on
	// one etcd store). Each commit then starts from the head, tree
	// frontier, base and last checkpoint as stored, and numbers and chains
	// its receipts there, so the replicas write one linear chain (two
	// commits from the same head conflict and the later one runs again
	// on the new head). A receipt's number is known only once committed:
	// AppendSync waits for the commit and returns it; Append returns at
	// once without a reference (the receipt is found by its call id).
	Shared bool
}

// Log appends receipts through one writer goroutine that group-commits
// whatever is queued in one bbolt transaction (one fsync per group, not per
// call). Appends are numbered and chained as they are queued, so a caller
// gets its receipt reference at once; the writer commits in that order and
// grows the Merkle tree in the same transaction.
type Log struct {
	db     *store.DB
	opts   Options
	key    *Key
	origin string

	mu      sync.Mutex // numbering and queue order; guards closed, nextSeq, tip
	closed  bool
	nextSeq uint64
	tip     string
	queue   chan item
	done    chan struct{}
	backlog atomic.Int64
	// verified is closed once the start-up verification has finished:
	// Integrity waits for it and the writer commits nothing before it, so
	// no receipt is signed and no write tool admitted before the newest
	// stretch is known to be intact, while start-up itself does not wait.
	verified chan struct{}
	// nudge wakes a writer that lingers: it sleeps without receiving, so
	// a receipt nobody waits for is queued without waking it (a futex
	// wake on the caller's path), and callers that wait, a closing log or
	// a half-full queue nudge it.
	nudge chan struct{}
	// hurry, closed once, ends VerifyDelay's wait.
	hurry     chan struct{}
	hurryOnce sync.Once
	// attempted is closed once the start-up verification has run or
	// failed to reach the store; waiting holds the store's error while the
	// verification waits for it, and stopping (closed by Close) makes it
	// give up after one last attempt.
	attempted     chan struct{}
	attemptedOnce sync.Once
	waiting       atomic.Pointer[UnverifiedError]
	stopping      chan struct{}

	healthy atomic.Bool
	lastErr atomic.Value // string
	problem atomic.Pointer[Problem]

	// Owned by the writer goroutine (and Open before it starts).
	head     Head
	rng      *compact.Range
	tenants  map[string]uint64 // receipts per scope in the log, as stored (keyTenants)
	pending  []item
	base     Base
	lastCP   uint64
	lastCPAt time.Time
	commits  int
	anchors  *anchorQueue
	stale    bool // shared: the frontier must be read again
	// knownRev is, on a shared log, the store revision of this writer's
	// last commit while nothing says the stored position moved since
	// (0: read it); specSkip counts commits left before relying on it
	// again after another replica's commit proved it stale.
	knownRev  int64
	specSkip  int
	afterSign func(Checkpoint) // tests
	// beforeCommit lets tests make commits fail.
	beforeCommit func() error
}

// Open starts the log on db (its "audit" bucket and sub-buckets must exist:
// migrations v1 and v2). A log written before signed audit is adopted: its
// tree is built and a base and checkpoint are signed. The newest stretch is
// verified; a failure does not stop Open but is reported by Integrity.
func Open(db *store.DB, opts Options) (*Log, error) {
	if opts.Key == nil {
		return nil, errors.New("open audit log: a signing key is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.MaxBacklog <= 0 {
		opts.MaxBacklog = DefaultMaxBacklog
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = 256
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger
	}
	if opts.Cadence.Every == 0 {
		opts.Cadence.Every = DefaultCheckpointEvery
	}
	if opts.Cadence.Interval <= 0 {
		opts.Cadence.Interval = DefaultCheckpointInterval
	}
	if opts.StartupStretch <= 0 {
		opts.StartupStretch = DefaultStartupStretch
	}
	l := &Log{db: db, opts: opts, key: opts.Key, queue: make(chan item, opts.QueueSize), done: make(chan struct{}),
		verified: make(chan struct{}), hurry: make(chan struct{}), nudge: make(chan struct{}, 1),
		attempted: make(chan struct{}), stopping: make(chan struct{})}
	var startProblem *Problem
	err := db.Update(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		if err := l.load(b); err != nil {
			return err
		}
		if b.root.Get(keyIntegrity) != nil {
			// A failure found earlier stays until it is acknowledged.
			var p Problem
			if _, err := store.GetJSON(b.root, keyIntegrity, &p); err != nil || p.Kind == "" {
				p = Problem{Kind: ProblemCorrupt, Message: "a verification failure was recorded"}
			}
			startProblem = &p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l.nextSeq = l.head.Seq + 1
	l.tip = l.head.Hash
	l.lastCPAt = opts.Now()
	l.healthy.Store(true)
	if opts.Anchor != nil {
		l.anchors = newAnchorQueue(opts.Anchor, opts.OnAnchor)
	}
	// Verifying the newest stretch reads and re-hashes thousands of
	// receipts: it runs beside start-up instead of before it.
	go l.verifyStart(startProblem)
	go l.run()
	return l, nil
}

// buckets are the audit sub-buckets of one transaction.
type buckets struct {
	root, receipts, tree, checkpoints, bases, restores store.Bucket
}

func auditBuckets(tx store.Tx) (buckets, error) {
	b := buckets{root: tx.Bucket(store.BucketAudit)}
	if b.root == nil {
		return b, errors.New("audit bucket missing (database not migrated)")
	}
	b.receipts = b.root.Bucket(bucketReceipts)
	b.tree = b.root.Bucket(bucketTree)
	b.checkpoints = b.root.Bucket(bucketCheckpoints)
	b.bases = b.root.Bucket(bucketBases)
	b.restores = b.root.Bucket(bucketRestores)
	if b.receipts == nil || b.tree == nil || b.checkpoints == nil || b.bases == nil || b.restores == nil {
		if !tx.Writable() {
			// A file of an older schema read in place (backup checks):
			// what is missing reads as empty.
			return b, nil
		}
		for _, p := range []struct {
			dst  *store.Bucket
			name []byte
		}{{&b.receipts, bucketReceipts}, {&b.tree, bucketTree}, {&b.checkpoints, bucketCheckpoints}, {&b.bases, bucketBases}, {&b.restores, bucketRestores}} {
			nb, err := b.root.CreateBucketIfNotExists(p.name)
			if err != nil {
				return b, err
			}
			*p.dst = nb
		}
	}
	return b, nil
}

// load reads the log's state, creating a new log or adopting an older one.
func (l *Log) load(b buckets) error {
	var info logInfo
	hasInfo, err := store.GetJSON(b.root, keyLog, &info)
	if err != nil {
		return err
	}
	if _, err := store.GetJSON(b.root, keyHead, &l.head); err != nil {
		return err
	}
	if !hasInfo {
		if err := l.adopt(b); err != nil {
			return err
		}
		return l.loadTenants(b)
	}
	l.origin = info.Origin
	if l.head.Hash == "" {
		l.head.Hash = Genesis
	}
	c := b.bases.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if base, err := openBase(v, nil); err == nil && base.Kind != BaseAcknowledged {
			l.base = base
			break
		}
	}
	if k, _ := b.checkpoints.Cursor().Last(); k != nil {
		l.lastCP = u64(k)
	}
	rng, err := loadRange(b.tree, l.head.Seq)
	if err != nil {
		// A broken tree is reported by checkStretch; keep appending onto
		// what the receipts say, without signing, until acknowledged.
		rng = rebuildRange(b, l.head.Seq)
	}
	l.rng = rng
	return l.loadTenants(b)
}

// rebuildRange recomputes the frontier from receipt bytes where the stored
// tree is unusable (used only to keep appending while the log is flagged).
func rebuildRange(b buckets, size uint64) *compact.Range {
	r := factory.NewEmptyRange(0)
	c := b.receipts.Cursor()
	for k, v := c.First(); k != nil && u64(k) == r.End()+1 && u64(k) <= size; k, v = c.Next() {
		_ = r.Append(LeafHash(v), nil)
	}
	if r.End() != size {
		return placeholderRange(size)
	}
	return r
}

// Origin is the log's name, the first line of its checkpoints.
func (l *Log) Origin() string { return l.origin }

// Key is the log's key.
func (l *Log) Key() *Key { return l.key }

// DB is the database the log lives in.
func (l *Log) DB() *store.DB { return l.db }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
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

// Close drains the queue, signs a final checkpoint, hands it to the anchor
// and stops the writer. The database stays open.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()
	l.wake()
	l.verifyNow()
	close(l.stopping)
	<-l.done
	if l.anchors != nil {
		l.anchors.close(10 * time.Second)
	}
	return nil
}

// deleteFrom deletes keys >= from.
func deleteFrom(bk store.Bucket, from uint64) error {
	var doomed [][]byte
	c := bk.Cursor()
	for k, _ := c.Seek(store.U64(from)); k != nil; k, _ = c.Next() {
		doomed = append(doomed, append([]byte(nil), k...))
	}
	for _, k := range doomed {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deleteBelow deletes keys < limit except those in keep.
func deleteBelow(bk store.Bucket, limit uint64, keep map[uint64]bool) error {
	var doomed [][]byte
	c := bk.Cursor()
	for k, _ := c.First(); k != nil && u64(k) < limit; k, _ = c.Next() {
		if !keep[u64(k)] {
			doomed = append(doomed, append([]byte(nil), k...))
		}
	}
	for _, k := range doomed {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func u64(k []byte) uint64 {
	if len(k) != 8 {
		return 0
	}
	return uint64(k[0])<<56 | uint64(k[1])<<48 | uint64(k[2])<<40 | uint64(k[3])<<32 |
		uint64(k[4])<<24 | uint64(k[5])<<16 | uint64(k[6])<<8 | uint64(k[7])
}

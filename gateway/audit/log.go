package audit

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
)

// Layout inside the top-level "audit" bucket.
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

// Head is the position of the newest receipt, written in the receipt's
// transaction so that removing receipts from the tail is visible.
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
	// ErrBacklog: failing commits left Options.MaxBacklog receipts in
	// memory; the receipt was not numbered, so the chain has no gap.
	ErrBacklog = errors.New("audit log backlog full: receipts cannot be committed")
)

// Options tune Open.
type Options struct {
	// Key signs checkpoints and base notes. Required.
	Key       *Key
	Retention Retention
	Cadence   Cadence
	// Anchor receives each signed checkpoint (nil: none); OnAnchor learns
	// the outcome of each hand-over.
	Anchor   Anchor
	OnAnchor func(target string, err error)
	// Witnesses get each signed checkpoint too, each on its own queue (so
	// a slow witness delays only its own cosignature); OnAnchor learns the
	// outcomes.
	Witnesses []Anchor
	Now       func() time.Time // time.Now when nil
	// QueueSize bounds receipts waiting for the writer (default 4096); a
	// full queue makes appends wait, never drops a receipt.
	QueueSize int
	// MaxBacklog bounds receipts kept in memory while commits fail.
	MaxBacklog int
	// PruneEvery is the number of commits between retention passes
	// (default 256); a pass also runs at Open.
	PruneEvery int
	// Linger is how long the writer gathers receipts nobody waits for
	// into one commit (negative disables).
	Linger time.Duration
	// StartupStretch is how many of the newest receipts Open verifies.
	StartupStretch int
	// VerifyDelay postpones the start-up verification; Integrity and Close
	// cut it short, and nothing is committed before it has run.
	VerifyDelay time.Duration
	// OnStartProblem is told of a verification failure found at start.
	OnStartProblem func(*Problem)
	// OnPrune is told of each retention pass that removed receipts (on
	// the writer's goroutine).
	OnPrune func(PruneEvent)
	// CheckAnchor makes the start-up verification flag a log that does not
	// extend the newest checkpoint of a readable anchor, unless a signed
	// restore record accounts for it.
	CheckAnchor bool
	// Shared means other processes append to the same log (replicas on one
	// etcd store): each commit numbers and chains its receipts from the
	// stored position, so a receipt's number is known only once committed
	// (AppendSync returns it; Append returns no reference).
	Shared bool
}

// Log appends receipts through one writer goroutine that group-commits
// whatever is queued in one transaction, with the Merkle tree. Appends are
// numbered and chained as they are queued, so a caller gets its receipt
// reference at once.
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
	// Integrity waits for it and the writer commits nothing before it.
	verified chan struct{}
	// nudge wakes a lingering writer (callers that wait, a closing log, a
	// half-full queue).
	nudge     chan struct{}
	hurry     chan struct{} // closed once: ends VerifyDelay's wait
	hurryOnce sync.Once
	// attempted is closed once the start-up verification has run or failed
	// to reach the store; waiting holds the store's error meanwhile, and
	// stopping (closed by Close) makes it give up after one last attempt.
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
	wqueues  []*anchorQueue
	stale    bool // shared: the frontier must be read again
	// knownRev is, on a shared log, the store revision of this writer's
	// last commit while the stored position is believed unmoved (0: read
	// it); specSkip counts commits left before relying on it again.
	knownRev     int64
	specSkip     int
	afterSign    func(Checkpoint) // tests
	beforeCommit func() error     // tests: make commits fail
}

// Open starts the log on db (migrated). A log written before signed audit
// is adopted. The newest stretch is verified beside start-up; a failure
// does not stop Open but is reported by Integrity.
func Open(db *store.DB, opts Options) (*Log, error) {
	if opts.Key == nil {
		return nil, errors.New("open audit log: a signing key is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Linger == 0 {
		opts.Linger = DefaultLinger // negative disables
	}
	orDefault(&opts.QueueSize, 4096)
	orDefault(&opts.MaxBacklog, DefaultMaxBacklog)
	orDefault(&opts.PruneEvery, 256)
	orDefault(&opts.Cadence.Every, DefaultCheckpointEvery)
	orDefault(&opts.Cadence.Interval, DefaultCheckpointInterval)
	orDefault(&opts.StartupStretch, DefaultStartupStretch)
	l := &Log{db: db, opts: opts, key: opts.Key, queue: make(chan item, opts.QueueSize), done: make(chan struct{}),
		verified: make(chan struct{}), hurry: make(chan struct{}), nudge: make(chan struct{}, 1),
		attempted: make(chan struct{}), stopping: make(chan struct{})}
	var startProblem *Problem
	err := inAudit(db.Update, func(b buckets) error {
		startProblem = recorded(b.root) // stays until acknowledged
		return l.load(b)
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
	for _, w := range opts.Witnesses {
		l.wqueues = append(l.wqueues, newAnchorQueue(w, opts.OnAnchor))
	}
	go l.verifyStart(startProblem)
	go l.run()
	return l, nil
}

func orDefault[T int | uint64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
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
			return b, nil // an older schema read in place: missing reads as empty
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

// inAudit runs fn on the audit buckets in a transaction of txn (a
// database's View or Update).
func inAudit(txn func(func(store.Tx) error) error, fn func(b buckets) error) error {
	return txn(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		return fn(b)
	})
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
	l.base, _ = newestStart(b.bases)
	if k, _ := b.checkpoints.Cursor().Last(); k != nil {
		l.lastCP = u64(k)
	}
	rng, err := loadRange(b.tree, l.head.Seq)
	if err != nil {
		rng = rebuildRange(b, l.head.Seq) // flagged by checkStretch
	}
	l.rng = rng
	return l.loadTenants(b)
}

// rebuildRange recomputes the frontier from receipt bytes where the stored
// tree is unusable, to keep appending while the log is flagged.
func rebuildRange(b buckets, size uint64) *compact.Range {
	r := factory.NewEmptyRange(0)
	if appendReceipts(r, b.receipts, size, nil) != nil || r.End() != size {
		return placeholderRange(size)
	}
	return r
}

// appendReceipts appends to r the leaves of the stored receipts that
// follow it without a gap, up to receipt size; visit sees each completed
// subtree.
func appendReceipts(r *compact.Range, receipts store.Bucket, size uint64, visit compact.VisitFn) error {
	c := receipts.Cursor()
	for k, v := c.Seek(store.U64(r.End() + 1)); k != nil && u64(k) == r.End()+1 && u64(k) <= size; k, v = c.Next() {
		if err := r.Append(LeafHash(v), visit); err != nil {
			return err
		}
	}
	return nil
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
	var wg sync.WaitGroup
	for _, q := range l.wqueues {
		wg.Go(func() { q.close(10 * time.Second) })
	}
	wg.Wait()
	return nil
}

// newestStart is the newest base that moves the start of verification
// (retention or adoption).
func newestStart(bases store.Bucket) (Base, bool) {
	c := bases.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if base, err := openBase(v, nil); err == nil && base.Kind != BaseAcknowledged {
			return base, true
		}
	}
	return Base{}, false
}

// recorded is the stored, unacknowledged verification failure, if any.
func recorded(root store.Bucket) *Problem {
	if root.Get(keyIntegrity) == nil {
		return nil
	}
	var p Problem
	if _, err := store.GetJSON(root, keyIntegrity, &p); err != nil || p.Kind == "" {
		p = Problem{Kind: ProblemCorrupt, Message: "a verification failure was recorded"}
	}
	return &p
}

// deleteKeys deletes keys in [from, to) except those in keep.
func deleteKeys(bk store.Bucket, from, to uint64, keep map[uint64]bool) error {
	var doomed [][]byte
	c := bk.Cursor()
	for k, _ := c.Seek(store.U64(from)); k != nil && u64(k) < to; k, _ = c.Next() {
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
	return binary.BigEndian.Uint64(k)
}

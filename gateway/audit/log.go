package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
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

// legacyCheckpoint is the retention record of older logs.
type legacyCheckpoint struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
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

// Retention bounds the log; zero fields mean no bound.
type Retention struct {
	MaxAge   time.Duration
	MaxCount uint64
	// Floor is the per-tenant floor of the count bound: of each tenant
	// (receipt scope) the newest Floor receipts are never removed because
	// the log holds more than MaxCount, whatever other tenants wrote. They
	// stay, with the tree hashes of their inclusion proofs, below the
	// signed retention base until they are older than MaxAge or no longer
	// among their tenant's newest Floor. 0 is no floor.
	Floor uint64
}

// DefaultTenantFloor is the default Retention.Floor.
const DefaultTenantFloor = 1000

// DefaultRetention keeps 90 days and at most 100000 receipts, with each
// tenant's newest 1000 kept whatever the count.
var DefaultRetention = Retention{MaxAge: 90 * 24 * time.Hour, MaxCount: 100000, Floor: DefaultTenantFloor}

// ParseRetention reads ACCORDS_MCP_AUDIT_RETENTION: comma-separated bounds,
// each an age ("90d", "720h", "30m") or a count ("100000"); "off" keeps
// everything; "" is the default. A count comes with the default tenant
// floor (ParseFloor sets another).
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return DefaultRetention, nil
	}
	if s == "off" || s == "none" || s == "0" {
		return Retention{}, nil
	}
	r := Retention{Floor: DefaultTenantFloor}
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
		d, err := parseAge(part)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("audit retention %q: use an age such as 90d or 720h, a count such as 100000, or off", part)
		}
		r.MaxAge = d
	}
	return r, nil
}

// ParseFloor reads ACCORDS_MCP_AUDIT_TENANT_FLOOR: a receipt count, 0 for
// no floor; "" is DefaultTenantFloor.
func ParseFloor(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultTenantFloor, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("audit tenant floor %q: use a receipt count such as 1000, or 0 for none", s)
	}
	return n, nil
}

func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		return time.Duration(n * float64(24*time.Hour)), err
	}
	return time.ParseDuration(s)
}

// Cadence is when checkpoints are signed: every Every receipts or, when
// receipts were added, every Interval; zero fields take the defaults.
type Cadence struct {
	Every    uint64
	Interval time.Duration
}

// ParseCadence reads ACCORDS_MCP_AUDIT_CHECKPOINT: a count ("1000"), an
// interval ("30s"), or both comma-separated; "" is the default.
func ParseCadence(s string) (Cadence, error) {
	c := Cadence{Every: DefaultCheckpointEvery, Interval: DefaultCheckpointInterval}
	for part := range strings.SplitSeq(strings.TrimSpace(strings.ToLower(s)), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err == nil && n > 0 {
			c.Every = n
			continue
		}
		d, err := parseAge(part)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("audit checkpoint cadence %q: use a receipt count such as 1000, an interval of at least 1s such as 30s, or both", part)
		}
		c.Interval = d
	}
	return c, nil
}

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

type item struct {
	// rec and ref: a shared log's receipt, numbered at commit, and where
	// its reference is handed back.
	rec     Receipt
	ref     *Ref
	seq     uint64
	scope   string
	restore *RestoreDiff
	raw     []byte
	leaf    []byte
	hash    string
	ts      string
	ack     bool
	barrier bool
	prune   bool
	sign    bool
	done    chan error
}

func (it *item) isReceipt() bool { return it.raw != nil }

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

// UnverifiedError is Integrity's answer while the start-up verification
// cannot read the store (a shared store out of reach): the log is not
// known to be damaged, only not yet checked. It wraps the store's error,
// so it is retryable (MCP_STORE_UNAVAILABLE).
type UnverifiedError struct{ Cause error }

func (e *UnverifiedError) Error() string {
	return "the audit log's start-up verification is waiting for the store: " + e.Cause.Error()
}

func (e *UnverifiedError) Unwrap() error { return e.Cause }

// Retry bounds of a start-up verification that cannot reach the store.
const (
	verifyRetryMin = 100 * time.Millisecond
	verifyRetryMax = 5 * time.Second
)

// verifyStart verifies the newest stretch (in a read transaction; the
// writer waits for it) and records a failure; a failure recorded earlier
// (recorded) stands unless a new one replaces it. It applies retention
// when the log is intact, then lets Integrity and the writer go on. A
// store out of reach is not a failure: the verification tries again
// until it can read, or gives up when the log closes.
func (l *Log) verifyStart(recorded *Problem) {
	defer close(l.verified)
	defer l.attemptedOnce.Do(func() { close(l.attempted) })
	if d := l.opts.VerifyDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.hurry:
			t.Stop()
		}
	}
	p, err := l.checkStart()
	for wait, last := verifyRetryMin, false; err != nil && errors.Is(err, store.ErrUnavailable); wait = min(2*wait, verifyRetryMax) {
		if last {
			return // closed unverified: the writer commits nothing
		}
		l.waiting.Store(&UnverifiedError{Cause: err})
		l.attemptedOnce.Do(func() { close(l.attempted) })
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.stopping:
			t.Stop()
			last = true
		}
		p, err = l.checkStart()
	}
	l.waiting.Store(nil)
	if err != nil {
		p = &Problem{Kind: ProblemCorrupt, Message: err.Error()}
	}
	if p == nil && recorded == nil && l.opts.CheckAnchor {
		p = l.checkAnchor()
	}
	if p == nil && recorded != nil {
		l.problem.Store(recorded)
		if l.opts.OnStartProblem != nil {
			l.opts.OnStartProblem(recorded)
		}
		return
	}
	if p == nil {
		if _, err := l.prune(); err != nil {
			l.setErr(err)
		}
		return
	}
	if err := l.db.Update(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		return store.PutJSON(b.root, keyIntegrity, p)
	}); err != nil {
		l.setErr(err)
	}
	l.problem.Store(p)
	if l.opts.OnStartProblem != nil {
		l.opts.OnStartProblem(p)
	}
}

// checkStart runs checkStretch in a read transaction. A transaction
// error wins over what checkStretch made of reads that failed.
func (l *Log) checkStart() (*Problem, error) {
	var p *Problem
	err := l.db.View(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		p = l.checkStretch(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// unverified is the error the start-up verification gave up with (the
// log closed while the store was out of reach), or nil once verified.
func (l *Log) unverified() error {
	if u := l.waiting.Load(); u != nil {
		return u
	}
	return nil
}

// Verified is closed once the start-up verification has finished (after
// VerifyDelay, unless something cut that short).
func (l *Log) Verified() <-chan struct{} { return l.verified }

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

// beginShared starts a shared log's commit: it reports whether the
// previous attempt of these items landed although its answer was lost
// (etcd timed out): then their exact bytes are stored at their number,
// and writing them again would log them twice. Otherwise it reads the
// stored position (syncShared).
func (l *Log) beginShared(b buckets, items []item) (bool, error) {
	if len(items) > 0 && items[0].hash != "" {
		if got := b.receipts.Get(store.U64(items[0].seq)); got != nil && bytes.Equal(got, items[0].raw) {
			return true, nil
		}
	}
	return false, l.syncShared(b)
}

// number numbers and chains a shared log's receipt after head.
func (it *item) number(head Head) error {
	it.rec.Seq, it.rec.PrevHash = head.Seq+1, head.Hash
	raw, err := seal(&it.rec)
	if err != nil {
		return err
	}
	it.seq, it.raw, it.hash, it.leaf = it.rec.Seq, raw, it.rec.Hash, LeafHash(raw)
	return nil
}

// syncShared reads the log's position as stored, which another replica
// may have moved: the head, the newest base and checkpoint, and (when the
// head moved) the tree frontier. It runs inside the commit's transaction,
// so the commit conflicts if any of it changes before it lands.
func (l *Log) syncShared(b buckets) error {
	if p, ok := b.root.(kv.Prefetcher); ok {
		p.Prefetch([][]byte{keyHead, keyTenants})
	}
	var head Head
	if _, err := store.GetJSON(b.root, keyHead, &head); err != nil {
		return err
	}
	tenants := map[string]uint64{}
	if _, err := store.GetJSON(b.root, keyTenants, &tenants); err != nil {
		return err
	}
	l.tenants = tenants
	if head.Hash == "" {
		head.Hash = Genesis
	}
	if l.stale || l.rng == nil || head.Seq != l.head.Seq || head.Hash != l.head.Hash {
		rng, err := loadRange(b.tree, head.Seq)
		if err != nil {
			return fmt.Errorf("audit tree at the stored head %d: %w", head.Seq, err)
		}
		l.rng, l.head, l.stale = rng, head, false
	}
	l.base = Base{}
	c := b.bases.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if base, err := openBase(v, nil); err == nil && base.Kind != BaseAcknowledged {
			l.base = base
			break
		}
	}
	l.lastCP = 0
	if k, _ := b.checkpoints.Cursor().Last(); k != nil {
		l.lastCP = u64(k)
	}
	return nil
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

func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "accords-mcp/audit/" + hex.EncodeToString(b[:])
}

// adopt turns a log without signed history into a signed one: a new log
// gets its origin; an older log (receipts, maybe an unsigned retention
// record) gets its tree built and a signed base and checkpoint, once its
// chain verified. A chain that does not verify is adopted too (so appends
// go on) but flagged by checkStretch until acknowledged.
func (l *Log) adopt(b buckets) error {
	info := logInfo{Origin: newOrigin(), Created: l.opts.Now().UTC().Format(time.RFC3339Nano)}
	l.origin = info.Origin
	if err := store.PutJSON(b.root, keyLog, info); err != nil {
		return err
	}
	var legacy legacyCheckpoint
	hasLegacy, err := store.GetJSON(b.root, keyLegacyCheckpoint, &legacy)
	if err != nil {
		return err
	}
	first, _ := b.receipts.Cursor().First()
	if l.head.Hash == "" && first == nil && !hasLegacy {
		l.head.Hash = Genesis
		l.rng = factory.NewEmptyRange(0)
		return nil
	}
	if l.head.Hash == "" {
		l.head = Head{Seq: legacy.Seq, Hash: legacy.Hash}
	}
	var note string
	if rep := verifyLegacy(b); !rep.OK {
		note = "the chain written before signed audit did not verify: " + rep.Problem.Message
		if err := store.PutJSON(b.root, keyIntegrity, rep.Problem); err != nil {
			return err
		}
	}
	l.rng = placeholderRange(legacy.Seq)
	if err := putRange(b.tree, l.rng); err != nil {
		return err
	}
	b.tree.SetFillPercent(1)
	c := b.receipts.Cursor()
	for k, v := c.Seek(store.U64(legacy.Seq + 1)); k != nil && u64(k) <= l.head.Seq; k, v = c.Next() {
		if u64(k) != l.rng.End()+1 {
			break // a gap: flagged by the legacy verification above
		}
		var perr error
		if err := l.rng.Append(LeafHash(v), func(id compact.NodeID, h []byte) {
			if perr == nil {
				perr = b.tree.Put(keyBytes(nodeKey(id)), h)
			}
		}); err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
	}
	if l.rng.End() != l.head.Seq {
		l.rng = placeholderRange(l.head.Seq) // keeps appends numbered; the log is flagged
		return nil
	}
	if legacy.Seq > 0 || note != "" {
		base, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseAdopted, Size: legacy.Seq, Root: rootOf(placeholderRange(legacy.Seq)),
			Chain: chainAt(legacy), Time: l.opts.Now(), Text: "adopted a log written before signed audit; " + note})
		if err != nil {
			return err
		}
		if err := b.bases.Put(store.U64(legacy.Seq), base.Signed); err != nil {
			return err
		}
		l.base = base
	}
	if err := b.root.Delete(keyLegacyCheckpoint); err != nil {
		return err
	}
	if l.head.Seq > legacy.Seq {
		cp, err := signCheckpoint(l.key, l.origin, l.rng.End(), rootOf(l.rng))
		if err != nil {
			return err
		}
		l.lastCP = cp.Size
		return b.checkpoints.Put(store.U64(cp.Size), cp.Note)
	}
	return nil
}

func chainAt(c legacyCheckpoint) string {
	if c.Seq == 0 {
		return Genesis
	}
	return c.Hash
}

// Origin is the log's name, the first line of its checkpoints.
func (l *Log) Origin() string { return l.origin }

// Key is the log's key.
func (l *Log) Key() *Key { return l.key }

// DB is the database the log lives in.
func (l *Log) DB() *store.DB { return l.db }

// verifyNow starts the start-up verification if VerifyDelay still holds
// it back.
func (l *Log) verifyNow() { l.hurryOnce.Do(func() { close(l.hurry) }) }

// Integrity reports the unacknowledged verification failure, if any: write
// tools are refused while it stands and no checkpoint is signed. It waits
// for the start-up verification; while that cannot reach the store it
// returns an *UnverifiedError instead (retryable: the log is not known to
// be damaged, and write tools wait for the verification as they would for
// the store).
func (l *Log) Integrity() (*Problem, error) {
	l.verifyNow()
	select {
	case <-l.verified:
	case <-l.attempted:
		if u := l.waiting.Load(); u != nil {
			return nil, u
		}
		// The verification has just read the store and is finishing.
		<-l.verified
	}
	if err := l.unverified(); err != nil {
		return nil, err // it gave up: the log closed while the store was out of reach
	}
	return l.problem.Load(), nil
}

// Append numbers and chains r and queues it; it returns at once with the
// receipt's reference. It fails when the log is closed or the backlog of
// uncommittable receipts is full. On a shared log the number is given at
// commit, so Append returns at once with an empty Ref: the receipt is
// committed within Linger (with whatever else is queued) and is found by
// its call id.
func (l *Log) Append(r Receipt) (Ref, error) { return l.append(r, false, nil) }

// AppendSync is Append that waits until the receipt is committed. On a
// failed commit the receipt stays queued and is written by the next
// successful commit, under the same reference.
func (l *Log) AppendSync(r Receipt) (Ref, error) { return l.append(r, true, nil) }

// append queues r; restore, when set, makes its commit sign a restored
// record just before it (RecordRestore).
func (l *Log) append(r Receipt, wait bool, restore *RestoreDiff) (Ref, error) {
	r = sanitize(r)
	if r.Type == "" {
		r.Type = TypeToolCall
	}
	it := item{ts: r.Timestamp, scope: r.Scope, ack: r.Type == TypeAcknowledgement, restore: restore}
	if wait || it.ack || it.restore != nil {
		it.done = make(chan error, 1)
		l.verifyNow() // the caller waits for the writer
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Ref{}, ErrClosed
	}
	if l.backlog.Load() >= int64(l.opts.MaxBacklog) {
		l.mu.Unlock()
		return Ref{}, ErrBacklog
	}
	if l.opts.Shared {
		// Numbered by the commit, from the stored head (write).
		it.rec = r
		it.raw = []byte{} // a receipt, not a control item
		if it.done != nil {
			it.ref = &Ref{Origin: l.origin}
		}
		l.backlog.Add(1)
		l.queue <- it
		urgent := l.urgent(it)
		l.mu.Unlock()
		if urgent {
			l.wake()
		}
		if it.done == nil {
			// Nobody waits for its number (read calls): it is committed
			// with the next group, or once commits succeed again.
			return Ref{}, nil
		}
		err := <-it.done
		return *it.ref, err
	}
	r.Seq, r.PrevHash = l.nextSeq, l.tip
	raw, err := seal(&r)
	if err != nil {
		l.mu.Unlock()
		return Ref{}, err
	}
	it.seq, it.raw, it.hash, it.leaf = r.Seq, raw, r.Hash, LeafHash(raw)
	l.nextSeq++
	l.tip = r.Hash
	l.backlog.Add(1)
	l.queue <- it
	urgent := l.urgent(it)
	l.mu.Unlock()
	if urgent {
		l.wake()
	}
	ref := Ref{Seq: it.seq, LeafHash: hex.EncodeToString(it.leaf), Origin: l.origin}
	if it.done == nil {
		return ref, nil
	}
	return ref, <-it.done
}

// Flush waits until everything queued before it is committed.
func (l *Log) Flush() error { return l.send(item{barrier: true}) }

// Prune applies retention now (it also runs periodically).
func (l *Log) Prune() error { return l.send(item{prune: true}) }

// Checkpoint commits what is queued and signs a checkpoint of the tree if
// it grew since the last one.
func (l *Log) Checkpoint() error { return l.send(item{sign: true}) }

func (l *Log) send(it item) error {
	it.done = make(chan error, 1)
	l.verifyNow()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.queue <- it
	l.mu.Unlock()
	l.wake()
	return <-it.done
}

// urgent reports whether queuing it must wake a lingering writer: someone
// waits for its commit, or the queue is half full.
func (l *Log) urgent(it item) bool { return it.done != nil || len(l.queue) >= cap(l.queue)/2 }

// wake nudges the writer out of its linger.
func (l *Log) wake() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// Acknowledge records that an operator accepts the log as it is: a signed
// base at the current size (verification starts again after it), then an
// acknowledgement receipt. The failure that was flagged is lifted.
func (l *Log) Acknowledge(operator, note string, p *Problem) (Ref, error) {
	if err := l.Flush(); err != nil {
		return Ref{}, err
	}
	what := "no verification failure"
	if p != nil {
		what = fmt.Sprintf("%s at receipt %d: %s", p.Kind, p.Seq, p.Message)
	}
	ref, err := l.append(Receipt{
		CallID:    "ack_" + hex.EncodeToString(randomBytes(8)),
		Timestamp: l.opts.Now().UTC().Format(time.RFC3339Nano),
		Caller:    operator, Transport: "cli", Type: TypeAcknowledgement,
		Outcome: OutcomeAcknowledged, Note: oneLine(note + " | acknowledged: " + what),
	}, true, nil)
	if err == nil {
		l.problem.Store(nil)
	}
	return ref, err
}

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

func (l *Log) run() {
	defer close(l.done)
	held, open := l.holdUntilVerified()
	if err := l.unverified(); err != nil {
		l.refuse(held, err)
		for it := range l.queue {
			l.refuse([]item{it}, err)
		}
		return
	}
	if len(held) > 0 {
		l.commit(held)
	}
	if !open {
		l.shutdown()
		return
	}
	batch := make([]item, 0, 512)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	tickEvery := min(l.opts.Cadence.Interval, time.Second)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-l.queue:
		case <-tick.C:
			l.tick()
			continue
		}
		if !ok {
			l.shutdown()
			return
		}
		batch = append(batch[:0], it)
		waited := it.done != nil
		lingering, lingered := false, false
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
			// for at most Linger from the first empty queue, asleep until
			// then or until nudged (see nudge), then take what came.
			if waited || lingered || l.opts.Linger < 0 {
				break gather
			}
			if !lingering {
				lingering = true
				linger.Reset(l.opts.Linger)
			}
			select {
			case <-l.nudge:
			case <-linger.C:
				lingering, lingered = false, true
			}
		}
		if lingering {
			linger.Stop()
		}
		l.commit(batch)
	}
}

// holdUntilVerified takes what is queued until the start-up verification
// has finished, so that callers never block on a full queue while it
// waits for an unreachable store (receipts are bounded by MaxBacklog, as
// those of commits that fail). open is false when the queue was closed.
func (l *Log) holdUntilVerified() (held []item, open bool) {
	attempted := l.attempted
	for {
		select {
		case <-l.verified:
			return held, true
		case <-attempted:
			attempted = nil // closed: once is enough
			held = l.answerWaiting(held)
		case it, ok := <-l.queue:
			if !ok {
				<-l.verified
				return held, false
			}
			held = append(held, l.answerWaiting([]item{it})...)
		}
	}
}

// answerWaiting tells whoever waits on items, while the verification waits
// for the store, that their commit did not happen, as a failed commit
// does: a receipt stays held and is committed once the log is verified; a
// flush, checkpoint or prune is dropped. It returns what stays held.
func (l *Log) answerWaiting(items []item) []item {
	u := l.waiting.Load()
	if u == nil {
		return items
	}
	kept := items[:0]
	for _, it := range items {
		if it.done != nil {
			it.done <- u
			it.done = nil
		}
		if it.isReceipt() {
			kept = append(kept, it)
		}
	}
	return kept
}

// refuse tells whoever waits for items that they were not committed.
func (l *Log) refuse(items []item, err error) {
	for _, it := range items {
		if it.isReceipt() {
			l.backlog.Add(-1)
		}
		if it.done != nil {
			it.done <- err
		}
	}
}

// tick retries receipts whose commit failed and signs a checkpoint when
// the interval has passed since the last one and the tree grew.
func (l *Log) tick() {
	if len(l.pending) > 0 {
		l.commit(nil)
		return
	}
	if l.rng.End() > l.lastCP && l.opts.Now().Sub(l.lastCPAt) >= l.opts.Cadence.Interval {
		l.commit([]item{{sign: true}})
	}
}

// shutdown commits what is left and signs the final checkpoint.
func (l *Log) shutdown() {
	l.commit([]item{{sign: true}})
}

func (l *Log) commit(batch []item) {
	items := l.pending
	var prunes, signs int
	for _, it := range batch {
		switch {
		case it.isReceipt():
			items = append(items, it)
		case it.prune:
			prunes++
		case it.sign:
			signs++
		}
	}
	var err error
	if len(items) > 0 || (signs > 0 && l.rng.End() > l.lastCP) {
		var done int
		done, err = l.writeChunks(items, signs > 0)
		if err != nil {
			l.setErr(err)
			l.backlog.Add(-int64(done))
			l.pending = items[done:]
		} else {
			l.healthy.Store(true)
			l.backlog.Add(-int64(len(items)))
			l.pending = nil
			if len(items) > 0 {
				l.commits++
			}
		}
	}
	if prunes > 0 || (len(items) > 0 && err == nil && l.commits%l.opts.PruneEvery == 0) {
		if _, perr := l.prune(); perr != nil && err == nil && prunes > 0 {
			err = perr
		}
	}
	for _, it := range batch {
		if it.done != nil {
			if it.ref != nil && it.ref.Seq != 0 {
				it.done <- nil // committed in a chunk before the one that failed
				continue
			}
			it.done <- err
		}
	}
}

// sharedChunk is how many receipts one commit of a shared log holds: a
// receipt, its tree hashes (two on average) and the head, checkpoint and
// counters stay under etcd's 128 operations per transaction.
const sharedChunk = 32

// writeChunks writes items in one transaction, or for a shared log in
// transactions of sharedChunk; it returns how many were committed.
func (l *Log) writeChunks(items []item, forceSign bool) (int, error) {
	if !l.opts.Shared || len(items) <= sharedChunk {
		if err := l.write(items, forceSign); err != nil {
			return 0, err
		}
		return len(items), nil
	}
	for from := 0; from < len(items); from += sharedChunk {
		to := min(from+sharedChunk, len(items))
		if err := l.write(items[from:to], forceSign && to == len(items)); err != nil {
			return from, err
		}
	}
	return len(items), nil
}

// write commits items in order, with their tree hashes, the new head and,
// when due, a signed checkpoint, in one transaction.
func (l *Log) write(items []item, forceSign bool) error {
	rng := cloneRange(l.rng)
	head := l.head
	signing := l.problem.Load() == nil
	var cp *Checkpoint
	acked, landed := false, false
	var committedRev int64
	speculated := false
	var tenants map[string]uint64
	if l.specSkip > 0 {
		l.specSkip--
	}
	err := l.db.Update(func(tx store.Tx) error {
		if l.beforeCommit != nil {
			if err := l.beforeCommit(); err != nil {
				return err
			}
		}
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		if l.opts.Shared {
			if landed, err = l.positionShared(tx, b, items, &speculated, &committedRev); landed || err != nil {
				return err
			}
			rng, head = cloneRange(l.rng), l.head
		}
		b.receipts.SetFillPercent(1)
		b.tree.SetFillPercent(1)
		var perr error
		visit := func(id compact.NodeID, h []byte) {
			if perr == nil {
				perr = b.tree.Put(keyBytes(nodeKey(id)), h)
			}
		}
		for i := range items {
			it := &items[i]
			if l.opts.Shared {
				if err := it.number(head); err != nil {
					return err
				}
			}
			if it.seq != head.Seq+1 {
				return fmt.Errorf("receipt %d queued after %d", it.seq, head.Seq)
			}
			if it.ack {
				if err := l.writeAckBase(b, rng, head); err != nil {
					return err
				}
				signing, acked = true, true
			}
			if it.restore != nil {
				if err := l.writeRestored(b, rng, head, *it.restore); err != nil {
					return err
				}
			}
			if err := b.receipts.Put(store.U64(it.seq), it.raw); err != nil {
				return err
			}
			if err := rng.Append(it.leaf, visit); err != nil {
				return err
			}
			if perr != nil {
				return perr
			}
			head = Head{Seq: it.seq, Hash: it.hash, Timestamp: it.ts}
		}
		if len(items) > 0 {
			if err := store.PutJSON(b.root, keyHead, head); err != nil {
				return err
			}
			tenants = countTenants(l.tenants, items)
			if err := store.PutJSON(b.root, keyTenants, tenants); err != nil {
				return err
			}
		}
		if signing {
			if cp, err = l.signIfDue(b, rng, forceSign || acked); err != nil {
				return err
			}
		}
		if acked {
			return b.root.Delete(keyIntegrity)
		}
		return nil
	})
	if err != nil {
		l.knownRev = 0
		return fmt.Errorf("append audit receipt: %w", err)
	}
	if landed {
		l.stale = true // read the frontier again at the next commit
	} else {
		l.rng, l.head = rng, head
		l.knownRev = committedRev
		if tenants != nil {
			l.tenants = tenants
		}
	}
	l.committed(items, cp)
	return nil
}

// committed hands the references of committed items back and passes a
// checkpoint signed in the commit on.
func (l *Log) committed(items []item, cp *Checkpoint) {
	for _, it := range items {
		if it.ref != nil {
			*it.ref = Ref{Seq: it.seq, LeafHash: hex.EncodeToString(it.leaf), Origin: l.origin}
		}
	}
	if cp != nil {
		l.lastCP, l.lastCPAt = cp.Size, l.opts.Now()
		if l.afterSign != nil {
			l.afterSign(*cp)
		}
		if l.anchors != nil {
			l.anchors.push(*cp)
		}
	}
}

// positionShared starts a shared log's commit from the stored position:
// the one this writer's last commit left when it can rely on that (one
// request less than reading, checked by the commit; *speculated says so,
// and a conflict of such a run makes the next run read), else the one
// read by beginShared, which also reports a commit that landed already.
// *committedRev learns the commit's revision.
func (l *Log) positionShared(tx store.Tx, b buckets, items []item, speculated *bool, committedRev *int64) (bool, error) {
	if *speculated {
		// The previous run relied on the position of our last commit
		// and conflicted: another replica is writing.
		l.specSkip = specBackoff
	}
	rv, ok := tx.(kv.Revisioned)
	known := l.knownRev
	l.knownRev = 0
	*speculated = ok && known > 0 && l.specSkip == 0
	if ok {
		rv.OnCommit(func(rev int64) { *committedRev = rev })
	}
	if !*speculated {
		return l.beginShared(b, items)
	}
	// The head, bases and checkpoints are as this writer's last commit
	// left them unless another replica wrote (every commit moves the
	// head): rely on that instead of three reads, and let the commit
	// check it.
	rv.Unchanged(b.root, known)
	rv.Unchanged(b.bases, known)
	rv.Unchanged(b.checkpoints, known)
	return false, nil
}

// specBackoff is how many commits a shared log's writer reads the stored
// position before relying on its own last commit again, once another
// replica's commit made that fail: under concurrent writers the
// speculation would mostly cost a conflict.
const specBackoff = 8

// signIfDue signs and stores a checkpoint of rng when one is due (forced,
// the first, or Cadence.Every receipts since the last); nil when not.
func (l *Log) signIfDue(b buckets, rng *compact.Range, force bool) (*Checkpoint, error) {
	due := rng.End() > l.lastCP && (force || l.lastCP == 0 || rng.End()-l.lastCP >= l.opts.Cadence.Every)
	if !due {
		return nil, nil
	}
	c, err := signCheckpoint(l.key, l.origin, rng.End(), rootOf(rng))
	if err != nil {
		return nil, err
	}
	if err := b.checkpoints.Put(store.U64(c.Size), c.Note); err != nil {
		return nil, err
	}
	// Keep one checkpoint per Every receipts (the last of each block) and
	// the newest: every checkpoint still goes to the anchor.
	if prev := l.lastCP; prev > l.base.Size && prev/l.opts.Cadence.Every == c.Size/l.opts.Cadence.Every {
		if err := b.checkpoints.Delete(store.U64(prev)); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// writeAckBase signs the base of an acknowledgement at the current size:
// checkpoints beyond it (which the log no longer reaches) are dropped, and
// verification restarts from it.
func (l *Log) writeAckBase(b buckets, rng *compact.Range, head Head) error {
	p := l.problem.Load()
	text := "operator acknowledged the log as it stands"
	if p != nil {
		text = fmt.Sprintf("acknowledged %s at receipt %d: %s", p.Kind, p.Seq, p.Message)
	}
	base, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseAcknowledged, Size: rng.End(), Root: rootOf(rng),
		Chain: head.Hash, Time: l.opts.Now(), Text: text})
	if err != nil {
		return err
	}
	// Whatever lies beyond the acknowledged size belongs to no receipt the
	// log continues from: checkpoints that covered more, tree hashes and
	// receipts past the head (added or left behind outside the server).
	for _, cut := range []struct {
		bk   store.Bucket
		from uint64
	}{{b.checkpoints, rng.End() + 1}, {b.tree, leafKey(rng.End())}, {b.receipts, head.Seq + 1}} {
		if err := deleteFrom(cut.bk, cut.from); err != nil {
			return err
		}
	}
	if l.lastCP > rng.End() {
		l.lastCP = 0
	}
	return b.bases.Put(store.U64(base.Size), base.Signed)
}

// PruneEvent is one retention pass that removed receipts.
type PruneEvent struct {
	// From..To is the stretch the pass moved the start of the log over;
	// Kept of those receipts (and of those kept by earlier passes) stay
	// below the new base under the tenant floor.
	From, To uint64
	// ByCount were removed because the log held more than MaxCount, ByAge
	// for being older than the age bound; Dropped were kept under the
	// floor before and are removed now.
	ByCount, ByAge, Dropped int
	Kept                    int
	MaxCount, Floor         uint64
}

// Removed is every receipt the pass removed.
func (e PruneEvent) Removed() int { return e.ByCount + e.ByAge + e.Dropped }

// prune removes receipts beyond the retention bounds, oldest first, in
// transactions that each examine at most pruneLimit receipts. Each
// transaction signs a retention base at the new start, keeps the tree
// hashes the retained receipts' proofs still need, and drops checkpoints
// and bases before it; receipts under the tenant floor stay below the base
// with their inclusion paths (pruneChunk). Nothing is pruned while a
// verification failure stands.
func (l *Log) prune() (int, error) {
	ret := l.opts.Retention
	if (ret.MaxAge <= 0 && ret.MaxCount == 0) || l.problem.Load() != nil {
		return 0, nil
	}
	if !l.prunable(ret) {
		// Nothing to remove: no write transaction, so a start that prunes
		// nothing leaves the file as it was.
		return 0, nil
	}
	ev := PruneEvent{MaxCount: ret.MaxCount, Floor: ret.Floor}
	var err error
	for {
		var r chunkResult
		r, err = l.pruneChunk(ret)
		if r.changed {
			if ev.From == 0 {
				ev.From = r.from
			}
			ev.To = r.to
			ev.ByCount += r.byCount
			ev.ByAge += r.byAge
			ev.Dropped += r.dropped
			ev.Kept = r.kept
		}
		if err != nil || !r.changed || r.examined < l.pruneLimit() {
			break
		}
	}
	if ev.Removed() > 0 && l.opts.OnPrune != nil {
		l.opts.OnPrune(ev)
	}
	return ev.Removed(), err
}

const pruneChunk = 5000

// prunable reports, reading only, whether retention would remove the
// oldest receipt now (pruneChunk's first test), or a receipt kept under
// the tenant floor has grown older than the age bound.
func (l *Log) prunable(ret Retention) bool {
	count := l.head.Seq - l.base.Size
	if l.opts.Shared || (ret.MaxCount > 0 && count > ret.MaxCount) {
		// A shared log's head is another replica's too: look in pruneChunk.
		return true
	}
	if ret.MaxAge <= 0 {
		return false
	}
	cutoff := l.opts.Now().UTC().Add(-ret.MaxAge)
	old := false
	_ = l.db.View(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil || b.receipts == nil {
			old = true // let pruneChunk report it
			return nil
		}
		c := b.receipts.Cursor()
		if k, v := c.First(); k != nil && u64(k) <= l.base.Size {
			old = olderThan(timestampOf(v), cutoff) // kept under the floor
		}
		if k, v := c.Seek(store.U64(l.base.Size + 1)); k != nil && !old {
			old = olderThan(timestampOf(v), cutoff)
		}
		return nil
	})
	return old
}

// sharedPruneChunk bounds one pruning transaction of a shared log: each
// receipt removed takes its own deletion and about two tree hashes', plus
// the hashes of the previous base's frontier and of one receipt dropped
// from under the floor, under etcd's 128 operations.
const sharedPruneChunk = 16

// sharedFloorDrops is how many receipts kept under the floor one pruning
// transaction of a shared log removes (the others stay kept a while
// longer, which only keeps more).
const sharedFloorDrops = 1

func (l *Log) pruneLimit() int {
	if l.opts.Shared {
		return sharedPruneChunk
	}
	return pruneChunk
}

// retentionText begins a retention base's note (BaseInfo reads it back).
const retentionText = "retention removed receipts %d..%d: %d by the count bound, %d by the age bound"

// chunkResult is what one pruning transaction did.
type chunkResult struct {
	changed                 bool
	examined                int
	from, to                uint64
	byCount, byAge, dropped int
	kept                    int
}

func (l *Log) pruneChunk(ret Retention) (chunkResult, error) {
	var cutoff time.Time
	if ret.MaxAge > 0 {
		cutoff = l.opts.Now().UTC().Add(-ret.MaxAge)
	}
	var res chunkResult
	var newBase Base
	var tenants map[string]uint64
	err := l.db.Update(func(tx store.Tx) error {
		res = chunkResult{}
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		if l.opts.Shared {
			l.knownRev = 0 // a retention base changes what the last commit left
			if err := l.syncShared(b); err != nil {
				return err
			}
		}
		start := l.base.Size // receipts 1..start are gone already, but for those kept
		// The cut: receipts after the base beyond a bound, oldest first.
		var last uint64
		c := b.receipts.Cursor()
		for k, v := c.Seek(store.U64(start + 1)); k != nil && res.examined < l.pruneLimit(); k, v = c.Next() {
			seq := u64(k)
			overCount := ret.MaxCount > 0 && seq <= l.head.Seq && l.head.Seq-seq >= ret.MaxCount
			if !overCount && (cutoff.IsZero() || !olderThan(timestampOf(v), cutoff)) {
				break
			}
			last = seq
			res.examined++
		}
		cut := max(last, start)
		plan := l.planKeep(b, ret, cutoff, start, cut)
		if last == 0 && plan.dropped == 0 {
			return nil
		}
		res.changed = true
		res.from, res.to = start+1, cut
		res.byCount, res.byAge, res.dropped, res.kept = plan.byCount, plan.byAge, plan.dropped, len(plan.keep)
		newBase, tenants, err = l.cutTo(b, plan, start, last, cut)
		return err
	})
	if err != nil {
		return chunkResult{}, fmt.Errorf("prune audit log: %w", err)
	}
	if res.changed {
		l.base = newBase
		l.tenants = tenants
		if l.lastCP < newBase.Size {
			l.lastCP = newBase.Size
		}
	}
	return res, nil
}

// cutTo moves the start of the log to cut as plan says, in the pruning
// transaction of b: it signs the retention base, removes the receipts and
// tree hashes nothing needs any more, and returns the base and the receipt
// counts by scope after it.
func (l *Log) cutTo(b buckets, plan keepPlan, start, last, cut uint64) (Base, map[string]uint64, error) {
	// The chain hash and tree at the new start.
	chain, root := l.base.Chain, l.base.Root
	if last > start {
		raw := b.receipts.Get(store.U64(last))
		chain = hashOf(raw)
		frontier, err := loadRange(b.tree, last)
		if err != nil {
			return Base{}, nil, fmt.Errorf("prune: %w", err)
		}
		root = rootOf(frontier)
	}
	text := fmt.Sprintf(retentionText, start+1, cut, plan.byCount, plan.byAge)
	if last == 0 {
		text = "retention removed receipts kept under the tenant floor"
	}
	if plan.dropped > 0 {
		text += fmt.Sprintf(", %d kept under the tenant floor before", plan.dropped)
	}
	text += keptMarker(plan.keep)
	newBase, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseRetention, Size: cut, Root: root,
		Chain: chain, Time: l.opts.Now(), Text: text})
	if err != nil {
		return Base{}, nil, err
	}
	for _, seq := range plan.remove {
		if err := b.receipts.Delete(store.U64(seq)); err != nil {
			return Base{}, nil, err
		}
	}
	keep := map[uint64]bool{}
	for _, id := range frontierIDs(cut) {
		keep[nodeKey(id)] = true
	}
	for _, seq := range plan.keep {
		for _, id := range keptPathIDs(seq, cut) {
			keep[nodeKey(id)] = true
		}
	}
	if err := deleteBelow(b.tree, leafKey(cut), keep); err != nil {
		return Base{}, nil, err
	}
	if err := deleteBelow(b.checkpoints, cut+1, nil); err != nil {
		return Base{}, nil, err
	}
	if err := deleteBelow(b.bases, cut+1, nil); err != nil {
		return Base{}, nil, err
	}
	tenants := maps.Clone(l.tenants)
	if tenants == nil {
		tenants = map[string]uint64{}
	}
	for scope, n := range plan.gone {
		if tenants[scope] <= n {
			delete(tenants, scope)
		} else {
			tenants[scope] -= n
		}
	}
	if err := store.PutJSON(b.root, keyTenants, tenants); err != nil {
		return Base{}, nil, err
	}
	return newBase, tenants, b.bases.Put(store.U64(cut), newBase.Signed)
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

// olderThan reports whether the RFC 3339 timestamp ts is before cutoff.
func olderThan(ts string, cutoff time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, ts)
	return err == nil && t.Before(cutoff)
}

// sanitize makes every string valid UTF-8: JSON encoding would otherwise
// replace invalid bytes on the way out and the stored bytes would no longer
// be the canonical form of the decoded receipt. Empty rule lists are nil so
// they are omitted (an empty list would not survive a round trip).
func sanitize(r Receipt) Receipt {
	for _, f := range []*string{&r.CallID, &r.Timestamp, &r.Caller, &r.Transport, &r.Session, &r.Scope, &r.Tool,
		&r.CapabilityUsed, &r.ParamsHash, &r.ResultHash, &r.Outcome, &r.Note, &r.Type, &r.TaskRef, &r.ParentCallID} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	for _, list := range []*[]string{&r.RulesEvaluated, &r.RulesMatched} {
		if len(*list) == 0 {
			*list = nil
			continue
		}
		cp := make([]string, len(*list))
		for i, s := range *list {
			cp[i] = strings.ToValidUTF8(s, "\uFFFD")
		}
		*list = cp
	}
	return r
}

// Package etcdkv is the etcd backend of the store: the bucket tree of
// store/kv laid out as key prefixes under one deployment prefix, and each
// write transaction committed as one etcd Txn whose compares check that
// nothing it read has changed since (optimistic concurrency; a conflict runs
// the transaction again on a fresh snapshot).
//
// Layout, for a bucket B with directory D(B) (the root's directory is the
// deployment prefix P):
//
//	D(B) "k/" key        the value of key in B
//	D(B) "s/" esc(name)  marks the nested bucket name (empty value)
//	D(B) "d/" esc(name) "/"   D of that nested bucket
//	D(B) "x"             bumped by every deletion in B (range readers compare it)
//	P "!commit"          bumped by every commit (the fallback compare)
//
// esc keeps [A-Za-z0-9._-] and percent-escapes every other byte, so a
// bucket name never contains the "/" that ends its directory.
package etcdkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/store/kv"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd's server defaults (--max-txn-ops, --max-request-bytes).
const (
	DefaultMaxTxnOps       = 128
	DefaultMaxRequestBytes = 1536 * 1024
	// requestOverhead is kept free of DefaultMaxRequestBytes for the
	// request's framing and compares.
	requestOverhead = 16 * 1024
)

// ErrUnavailable wraps every failure to reach etcd or to commit after
// repeated conflicts: nothing was written, the call may be retried
// (MCP_STORE_UNAVAILABLE).
var ErrUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string          { return "etcd unavailable" }
func (unavailableError) StoreUnavailable() bool { return true }

// ErrTooLarge means one transaction holds more operations or bytes than
// one etcd request may; nothing was written.
var ErrTooLarge = errors.New("transaction too large for one etcd request")

// Options tune a Backend.
type Options struct {
	// Prefix is put before every key (several deployments share a cluster).
	Prefix string
	// MaxTxnOps and MaxRequestBytes are the cluster's limits.
	MaxTxnOps       int
	MaxRequestBytes int
	// Timeout bounds each request (default 5s).
	Timeout time.Duration
	// MaxAttempts bounds the runs of a transaction that keeps conflicting.
	MaxAttempts int
}

// Backend runs transactions against one etcd cluster.
type Backend struct {
	cli  *clientv3.Client
	opts Options
	// counters for Stats
	commits, conflicts, reads atomic.Int64
	// Bucket structure rarely changes, so markers (bucket marker mod revisions)
	// and noSubs (revision at which a directory had no nested bucket) persist
	// between transactions; a write relying on them compares them at commit,
	// and a conflict forgets both.
	markers sync.Map // marker key -> int64 mod revision
	noSubs  sync.Map // directory -> int64 revision
}

// Stats are counters since the backend was made: commits, commits that
// conflicted and ran again, and range reads.
type Stats struct{ Commits, Conflicts, Reads int64 }

// Stats reads the counters.
func (be *Backend) Stats() Stats {
	return Stats{Commits: be.commits.Load(), Conflicts: be.conflicts.Load(), Reads: be.reads.Load()}
}

// New wraps a connected client.
func New(cli *clientv3.Client, opts Options) *Backend {
	if opts.MaxTxnOps <= 0 {
		opts.MaxTxnOps = DefaultMaxTxnOps
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 64
	}
	return &Backend{cli: cli, opts: opts}
}

// Client is the etcd client (membership, watches, leases).
func (be *Backend) Client() *clientv3.Client { return be.cli }

// Prefix is the deployment prefix.
func (be *Backend) Prefix() string { return be.opts.Prefix }

// BucketDir is the key prefix under which the values of the bucket at
// path live (watches of one bucket use it).
func (be *Backend) BucketDir(path ...[]byte) string {
	d := be.opts.Prefix
	for _, n := range path {
		d = d + "d/" + esc(n) + "/"
	}
	return d
}

func (be *Backend) commitKey() string { return be.opts.Prefix + "!commit" }

// unavailable wraps an etcd error as retryable, keeping its text.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTooLarge) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// View runs fn on a snapshot.
func (be *Backend) View(ctx context.Context, fn func(kv.Tx) error) error {
	t := be.newTx(ctx, false)
	err := fn(t)
	if t.err != nil {
		return t.err
	}
	return err
}

// Update runs fn and commits what it wrote in one Txn, running it again
// when a concurrent commit changed what it read.
func (be *Backend) Update(ctx context.Context, fn func(kv.Tx) error) error {
	for attempt := 0; ; attempt++ {
		t := be.newTx(ctx, true)
		err := fn(t)
		if t.err != nil {
			return t.err
		}
		if err != nil {
			return err
		}
		ok, err := t.commit()
		if err != nil {
			return err
		}
		if ok {
			be.commits.Add(1)
			return nil
		}
		be.conflicts.Add(1)
		be.markers.Clear()
		be.noSubs.Clear()
		if attempt+1 >= be.opts.MaxAttempts {
			return fmt.Errorf("%w: the transaction conflicted with concurrent writes %d times", ErrUnavailable, attempt+1)
		}
		// Spread the retries of writers that collided.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 5)))
		select {
		case <-ctx.Done():
			return unavailable(ctx.Err())
		case <-time.After(d):
		}
	}
}

// Revision is the cluster's current revision.
func (be *Backend) Revision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, be.opts.Timeout)
	defer cancel()
	resp, err := be.cli.Get(ctx, be.commitKey(), clientv3.WithCountOnly())
	if err != nil {
		return 0, unavailable(err)
	}
	return resp.Header.Revision, nil
}

type entry struct {
	val    []byte // nil: deleted
	ttl    int64
	bucket bool // a marker written by CreateBucket
}

type readKey struct {
	modRev int64
	val    []byte
}

// span is a range read; its keys must not have changed after upTo (the
// snapshot revision when 0).
type span struct {
	start, end string
	upTo       int64
}

type tx struct {
	be       *Backend
	ctx      context.Context
	writable bool
	rev      int64
	err      error

	reads   map[string]readKey
	spans   []span
	ranged  map[string]bool // directories read by a cursor: their deletion counter is compared
	writes  map[string]entry
	dropped []string // directory prefixes of deleted buckets
	bumped  map[string]bool
	subs    map[string][]string // nested bucket marker keys stored, per directory
	// pages are the cursor range reads done so far, fixed at the snapshot
	// revision.
	pages map[string]*clientv3.GetResponse
	// assumed are the bucket directories the transaction relies on as of
	// a revision (Unchanged); onCommit learn the commit's revision.
	assumed  []assumption
	onCommit []func(int64)
}

type assumption struct {
	dir string
	rev int64
}

// Unchanged implements kv.Revisioned: nothing directly in the bucket may
// have a revision above rev at commit.
func (t *tx) Unchanged(b kv.Bucket, rev int64) {
	if eb, ok := b.(*bucket); ok && eb.t == t {
		t.assumed = append(t.assumed, assumption{dir: eb.dir, rev: rev})
	}
}

// OnCommit implements kv.Revisioned.
func (t *tx) OnCommit(fn func(rev int64)) { t.onCommit = append(t.onCommit, fn) }

func (be *Backend) newTx(ctx context.Context, writable bool) *tx {
	return &tx{be: be, ctx: ctx, writable: writable, reads: map[string]readKey{}, ranged: map[string]bool{},
		writes: map[string]entry{}, bumped: map[string]bool{}, subs: map[string][]string{}, pages: map[string]*clientv3.GetResponse{}}
}

func (t *tx) fail(err error) {
	if t.err == nil {
		t.err = unavailable(err)
	}
}

// fetch runs one range read at the snapshot revision (fixing the snapshot
// at the first read).
func (t *tx) fetch(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, bool) {
	if t.err != nil {
		return nil, false
	}
	if t.rev > 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.be.opts.Timeout)
	defer cancel()
	t.be.reads.Add(1)
	resp, err := t.be.cli.Get(ctx, key, opts...)
	if err != nil {
		t.fail(err)
		return nil, false
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp, true
}

func (t *tx) isDropped(key string) bool {
	for _, p := range t.dropped {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// get reads one key through the transaction's own writes.
func (t *tx) get(key string) ([]byte, bool) {
	if e, ok := t.writes[key]; ok {
		return e.val, e.val != nil
	}
	if t.isDropped(key) {
		return nil, false
	}
	if r, ok := t.reads[key]; ok {
		return r.val, r.val != nil
	}
	resp, ok := t.fetch(key)
	if !ok {
		return nil, false
	}
	r := readKey{}
	if len(resp.Kvs) == 1 {
		r = readKey{modRev: resp.Kvs[0].ModRevision, val: resp.Kvs[0].Value}
		if r.val == nil {
			r.val = []byte{}
		}
	}
	t.reads[key] = r
	return r.val, r.val != nil
}

// marker reports whether a bucket marker exists, from memory when seen
// (still recorded as a read and checked at commit).
func (t *tx) marker(key string) bool {
	if _, mine := t.writes[key]; mine || t.isDropped(key) {
		_, ok := t.get(key)
		return ok
	}
	if r, ok := t.reads[key]; ok {
		return r.val != nil
	}
	if rev, ok := t.be.markers.Load(key); ok {
		t.reads[key] = readKey{modRev: rev.(int64), val: []byte{}}
		return true
	}
	_, ok := t.get(key)
	if ok {
		t.be.markers.Store(key, t.reads[key].modRev)
	}
	return ok
}

// Prefetch reads keys of the bucket not read yet in parallel at the
// snapshot (kv.Prefetcher): one round trip instead of one per key.
func (b *bucket) Prefetch(keys [][]byte) {
	t := b.t
	var todo []string
	for _, k := range keys {
		key := b.valueKey(k)
		if _, ok := t.writes[key]; ok {
			continue
		}
		if _, ok := t.reads[key]; ok {
			continue
		}
		todo = append(todo, key)
	}
	if len(todo) == 0 || t.err != nil || t.isDropped(b.dir) {
		return
	}
	if t.rev == 0 {
		t.get(todo[0]) // fixes the snapshot revision
		todo = todo[1:]
	}
	type got struct {
		key string
		r   readKey
		err error
	}
	out := make(chan got, len(todo))
	for _, key := range todo {
		go func() {
			ctx, cancel := context.WithTimeout(t.ctx, t.be.opts.Timeout)
			defer cancel()
			t.be.reads.Add(1)
			resp, err := t.be.cli.Get(ctx, key, clientv3.WithRev(t.rev))
			if err != nil {
				out <- got{key: key, err: err}
				return
			}
			r := readKey{}
			if len(resp.Kvs) == 1 {
				r = readKey{modRev: resp.Kvs[0].ModRevision, val: resp.Kvs[0].Value}
				if r.val == nil {
					r.val = []byte{}
				}
			}
			out <- got{key: key, r: r}
		}()
	}
	for range todo {
		g := <-out
		if g.err != nil {
			t.fail(g.err)
			continue
		}
		t.reads[g.key] = g.r
	}
}

func (t *tx) put(key string, val []byte, ttl int64, marker bool) error {
	if !t.writable {
		return kv.ErrTxNotWritable
	}
	if t.err != nil {
		return t.err
	}
	t.writes[key] = entry{val: slices.Clone(val), ttl: ttl, bucket: marker}
	if t.writes[key].val == nil {
		t.writes[key] = entry{val: []byte{}, ttl: ttl, bucket: marker}
	}
	return nil
}

func (t *tx) del(dir, key string) error {
	if !t.writable {
		return kv.ErrTxNotWritable
	}
	if t.err != nil {
		return t.err
	}
	t.writes[key] = entry{}
	t.bumped[dir] = true
	return nil
}

// compares are the conditions of the commit: everything read is as it
// was read, and every bucket relied on (Unchanged) is as it was.
func (t *tx) compares() ([]clientv3.Cmp, error) {
	var cmps []clientv3.Cmp
	if len(t.reads)+len(t.spans)+len(t.ranged)+3*len(t.assumed) > t.be.opts.MaxTxnOps && t.rev == 0 {
		t.get(t.be.commitKey()) // the fallback compare needs a snapshot revision
		if t.err != nil {
			return nil, t.err
		}
	}
	for k, r := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", r.modRev))
	}
	for _, s := range t.spans {
		upTo := t.rev
		if s.upTo > 0 {
			upTo = s.upTo
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.start).WithRange(s.end), "<", upTo+1))
	}
	for d := range t.ranged {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(d+"x"), "<", t.rev+1))
	}
	for _, a := range t.assumed {
		for _, sub := range []string{"k/", "s/"} {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(a.dir+sub).WithRange(clientv3.GetPrefixRangeEnd(a.dir+sub)), "<", a.rev+1))
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(a.dir+"x"), "<", a.rev+1))
	}
	if len(cmps) > t.be.opts.MaxTxnOps {
		// Too many to check one by one: check nothing was committed since.
		since := t.rev
		for _, a := range t.assumed {
			since = min(since, a.rev)
		}
		cmps = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(t.be.commitKey()), "<", since+1)}
	}
	return cmps, nil
}

func (t *tx) commit() (bool, error) {
	if len(t.writes) == 0 && len(t.dropped) == 0 {
		return true, nil
	}
	cmps, err := t.compares()
	if err != nil {
		return false, err
	}
	var ops []clientv3.Op
	size := 0
	leases := map[int64]clientv3.LeaseID{}
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, p := range t.dropped {
		ops = append(ops, clientv3.OpDelete(p, clientv3.WithPrefix()))
		size += len(p)
	}
	for _, k := range keys {
		e := t.writes[k]
		if t.isDropped(k) && e.val == nil {
			continue // already inside a deleted range
		}
		size += len(k) + len(e.val)
		if e.val == nil {
			ops = append(ops, clientv3.OpDelete(k))
			continue
		}
		var opts []clientv3.OpOption
		if e.ttl > 0 {
			id, ok := leases[e.ttl]
			if !ok {
				ctx, cancel := context.WithTimeout(t.ctx, t.be.opts.Timeout)
				g, err := t.be.cli.Grant(ctx, e.ttl)
				cancel()
				if err != nil {
					return false, unavailable(err)
				}
				id = g.ID
				leases[e.ttl] = id
			}
			opts = append(opts, clientv3.WithLease(id))
		}
		ops = append(ops, clientv3.OpPut(k, string(e.val), opts...))
	}
	for d := range t.bumped {
		if t.isDropped(d) {
			continue
		}
		ops = append(ops, clientv3.OpPut(d+"x", ""))
	}
	ops = append(ops, clientv3.OpPut(t.be.commitKey(), ""))
	if len(ops) > t.be.opts.MaxTxnOps || size > t.be.opts.MaxRequestBytes-requestOverhead {
		return false, fmt.Errorf("%w: %d operations and %d bytes (etcd allows %d operations and %d bytes per request)",
			ErrTooLarge, len(ops), size, t.be.opts.MaxTxnOps, t.be.opts.MaxRequestBytes)
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.be.opts.Timeout)
	defer cancel()
	resp, err := t.be.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
			return false, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return false, unavailable(err)
	}
	if resp.Succeeded && len(t.dropped) > 0 {
		t.be.markers.Clear()
		t.be.noSubs.Clear()
	}
	if resp.Succeeded {
		for _, fn := range t.onCommit {
			fn(resp.Header.Revision)
		}
	}
	return resp.Succeeded, nil
}

// --- the kv.Tx and kv.Bucket views ---

func (t *tx) root() *bucket { return &bucket{t: t, dir: t.be.opts.Prefix} }

func (t *tx) Bucket(name []byte) kv.Bucket                { return t.root().Bucket(name) }
func (t *tx) CreateBucket(name []byte) (kv.Bucket, error) { return t.root().CreateBucket(name) }
func (t *tx) CreateBucketIfNotExists(name []byte) (kv.Bucket, error) {
	return t.root().CreateBucketIfNotExists(name)
}
func (t *tx) DeleteBucket(name []byte) error { return t.root().DeleteBucket(name) }
func (t *tx) Writable() bool                 { return t.writable }
func (t *tx) ForEach(fn func(name []byte, b kv.Bucket) error) error {
	r := t.root()
	return r.ForEachBucket(func(name []byte) error { return fn(name, r.Bucket(name)) })
}

type bucket struct {
	t   *tx
	dir string
}

func (b *bucket) valueKey(k []byte) string  { return b.dir + "k/" + string(k) }
func (b *bucket) markerKey(n []byte) string { return b.dir + "s/" + esc(n) }
func (b *bucket) child(n []byte) *bucket    { return &bucket{t: b.t, dir: b.dir + "d/" + esc(n) + "/"} }

func (b *bucket) Tx() kv.Tx              { return b.t }
func (b *bucket) SetFillPercent(float64) {}

func (b *bucket) Get(k []byte) []byte {
	if len(k) == 0 {
		return nil
	}
	v, ok := b.t.get(b.valueKey(k))
	if !ok {
		return nil
	}
	return v
}

func (b *bucket) Put(k, v []byte) error {
	if len(k) == 0 {
		return kv.ErrKeyRequired
	}
	return b.t.put(b.valueKey(k), v, 0, false)
}

// PutTTL stores k with a lease of ttl seconds (kv.Expiring).
func (b *bucket) PutTTL(k, v []byte, ttl int64) error {
	if len(k) == 0 {
		return kv.ErrKeyRequired
	}
	return b.t.put(b.valueKey(k), v, max(ttl, 1), false)
}

func (b *bucket) Delete(k []byte) error {
	if len(k) == 0 {
		return kv.ErrKeyRequired
	}
	if _, ok := b.t.get(b.markerKey(k)); ok {
		return kv.ErrIncompatible
	}
	return b.t.del(b.dir, b.valueKey(k))
}

func (b *bucket) Bucket(n []byte) kv.Bucket {
	if len(n) == 0 {
		return nil
	}
	if !b.t.marker(b.markerKey(n)) && b.t.err == nil {
		return nil
	}
	// After a failed read the bucket is handed out anyway; later operations
	// fail and the transaction returns the error.
	return b.child(n)
}

func (b *bucket) CreateBucket(n []byte) (kv.Bucket, error) {
	if !b.t.writable {
		return nil, kv.ErrTxNotWritable
	}
	if len(n) == 0 {
		return nil, kv.ErrKeyRequired
	}
	if _, ok := b.t.get(b.markerKey(n)); ok {
		return nil, kv.ErrBucketExists
	}
	if _, ok := b.t.get(b.valueKey(n)); ok {
		return nil, kv.ErrIncompatible
	}
	c := b.child(n)
	if b.t.isDropped(c.dir) {
		return nil, errors.New("etcd store: a bucket deleted in a transaction cannot be created again in the same one")
	}
	if err := b.t.put(b.markerKey(n), nil, 0, true); err != nil {
		return nil, err
	}
	return c, nil
}

func (b *bucket) CreateBucketIfNotExists(n []byte) (kv.Bucket, error) {
	if nb := b.Bucket(n); nb != nil {
		return nb, nil
	}
	if b.t.err != nil {
		return nil, b.t.err
	}
	return b.CreateBucket(n)
}

func (b *bucket) DeleteBucket(n []byte) error {
	if !b.t.writable {
		return kv.ErrTxNotWritable
	}
	if len(n) == 0 {
		return kv.ErrKeyRequired
	}
	if _, ok := b.t.get(b.markerKey(n)); !ok {
		if b.t.err != nil {
			return b.t.err
		}
		return kv.ErrBucketNotFound
	}
	c := b.child(n)
	for k := range b.t.writes {
		if strings.HasPrefix(k, c.dir) {
			delete(b.t.writes, k)
		}
	}
	b.t.dropped = append(b.t.dropped, c.dir)
	return b.t.del(b.dir, b.markerKey(n))
}

func (b *bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *bucket) ForEachBucket(fn func(n []byte) error) error {
	for _, n := range b.buckets() {
		if err := fn([]byte(n)); err != nil {
			return err
		}
	}
	return b.t.err
}

// buckets lists the nested bucket names in raw byte order.
func (b *bucket) buckets() []string {
	pfx := b.dir + "s/"
	names := map[string]bool{}
	if !b.t.isDropped(b.dir) {
		stored, cached := b.t.subs[b.dir]
		if !cached {
			if rev, ok := b.t.be.noSubs.Load(b.dir); ok {
				b.t.spans = append(b.t.spans, span{start: pfx, end: clientv3.GetPrefixRangeEnd(pfx), upTo: rev.(int64)})
				b.t.subs[b.dir] = nil
				cached = true
			}
		}
		if !cached {
			resp, ok := b.t.fetch(pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if !ok {
				return nil
			}
			b.t.spans = append(b.t.spans, span{start: pfx, end: clientv3.GetPrefixRangeEnd(pfx)})
			b.t.ranged[b.dir] = true
			for _, kv := range resp.Kvs {
				stored = append(stored, string(kv.Key))
			}
			b.t.subs[b.dir] = stored
			if len(stored) == 0 {
				b.t.be.noSubs.Store(b.dir, b.t.rev)
			}
		}
		for _, k := range stored {
			names[k] = true
		}
	}
	for k, e := range b.t.writes {
		if strings.HasPrefix(k, pfx) {
			names[k] = e.val != nil
		}
	}
	var out []string
	for k, live := range names {
		if live {
			out = append(out, unesc(k[len(pfx):]))
		}
	}
	sort.Strings(out)
	return out
}

// --- cursors ---

func (b *bucket) Cursor() kv.Cursor {
	return &cursor{b: b, vdir: b.dir + "k/", subs: b.buckets()}
}

type kvPair struct{ k, v []byte }

// cursor merges the snapshot's values (paged), the transaction's own writes
// and its nested buckets.
type cursor struct {
	b    *bucket
	vdir string
	subs []string
	pos  []byte
	ok   bool

	// page holds the stored values known exactly over [lo, hi) (raw keys;
	// hiOpen means up to the end of the bucket).
	page   []kvPair
	lo, hi []byte
	hiOpen bool
	loOpen bool
	valid  bool
	grow   int
}

func (c *cursor) limit() int64 {
	if c.grow == 0 {
		c.grow = 8
	} else if c.grow < 512 {
		c.grow *= 2
	}
	return int64(c.grow)
}

// storedGE is the first stored key >= k.
func (c *cursor) storedGE(k []byte) (kvPair, bool) {
	if c.b.t.isDropped(c.b.dir) {
		return kvPair{}, false
	}
	for {
		if c.valid && (c.loOpen || bytes.Compare(k, c.lo) >= 0) && (c.hiOpen || bytes.Compare(k, c.hi) < 0) {
			i := sort.Search(len(c.page), func(i int) bool { return bytes.Compare(c.page[i].k, k) >= 0 })
			if i < len(c.page) {
				return c.page[i], true
			}
			if c.hiOpen {
				return kvPair{}, false
			}
			k = c.hi
		}
		if !c.fetchFrom(k) {
			return kvPair{}, false
		}
	}
}

// storedLT is the last stored key < k (k nil: the last key).
func (c *cursor) storedLT(k []byte) (kvPair, bool) {
	if c.b.t.isDropped(c.b.dir) {
		return kvPair{}, false
	}
	for {
		inHi := (k == nil && c.hiOpen) || (k != nil && (c.hiOpen || bytes.Compare(k, c.hi) <= 0))
		if c.valid && inHi && (c.loOpen || k == nil || bytes.Compare(k, c.lo) > 0) {
			i := sort.Search(len(c.page), func(i int) bool { return k != nil && bytes.Compare(c.page[i].k, k) >= 0 })
			if k == nil {
				i = len(c.page)
			}
			if i > 0 {
				return c.page[i-1], true
			}
			if c.loOpen {
				return kvPair{}, false
			}
			k = c.lo
		}
		if !c.fetchBefore(k) {
			return kvPair{}, false
		}
	}
}

// rangeRead runs a cursor's range read, or hands back the same read done
// earlier in the transaction (whose span is already recorded).
func (c *cursor) rangeRead(id string, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, bool, bool) {
	if resp, ok := c.b.t.pages[id]; ok && c.b.t.err == nil {
		return resp, true, true
	}
	resp, ok := c.b.t.fetch(key, opts...)
	if ok {
		c.b.t.pages[id] = resp
	}
	return resp, ok, false
}

func (c *cursor) fetchFrom(k []byte) bool {
	start := c.vdir + string(k)
	end := clientv3.GetPrefixRangeEnd(c.vdir)
	limit := c.limit()
	resp, ok, again := c.rangeRead(fmt.Sprintf(">%d:%s", limit, start), start, clientv3.WithRange(end), clientv3.WithLimit(limit))
	if !ok {
		return false
	}
	c.load(resp, false)
	c.lo, c.loOpen = slices.Clone(k), len(k) == 0
	if resp.More {
		last := c.page[len(c.page)-1].k
		c.hi, c.hiOpen = append(slices.Clone(last), 0), false
		if !again {
			c.b.t.spans = append(c.b.t.spans, span{start: start, end: c.vdir + string(c.hi)})
		}
	} else {
		c.hi, c.hiOpen = nil, true
		if !again {
			c.b.t.spans = append(c.b.t.spans, span{start: start, end: end})
		}
	}
	c.b.t.ranged[c.b.dir] = true
	c.valid = true
	return true
}

func (c *cursor) fetchBefore(k []byte) bool {
	end := clientv3.GetPrefixRangeEnd(c.vdir)
	if k != nil {
		end = c.vdir + string(k)
	}
	limit := c.limit()
	resp, ok, again := c.rangeRead(fmt.Sprintf("<%d:%s", limit, end), c.vdir, clientv3.WithRange(end), clientv3.WithLimit(limit),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if !ok {
		return false
	}
	c.load(resp, true)
	c.hi, c.hiOpen = slices.Clone(k), k == nil
	if resp.More {
		first := c.page[0].k
		c.lo, c.loOpen = slices.Clone(first), false
		if !again {
			c.b.t.spans = append(c.b.t.spans, span{start: c.vdir + string(first), end: end})
		}
	} else {
		c.lo, c.loOpen = nil, true
		if !again {
			c.b.t.spans = append(c.b.t.spans, span{start: c.vdir, end: end})
		}
	}
	c.b.t.ranged[c.b.dir] = true
	c.valid = true
	return true
}

func (c *cursor) load(resp *clientv3.GetResponse, descending bool) {
	c.page = c.page[:0]
	kvs := resp.Kvs
	if descending {
		kvs = slices.Clone(kvs)
		slices.Reverse(kvs)
	}
	for _, kv := range kvs {
		c.page = append(c.page, pairOf(kv, len(c.vdir)))
	}
}

func pairOf(kv *mvccpb.KeyValue, strip int) kvPair {
	v := kv.Value
	if v == nil {
		v = []byte{}
	}
	return kvPair{k: kv.Key[strip:], v: v}
}

// overlay lists the transaction's writes to the bucket's values, sorted.
func (c *cursor) overlay() []kvPair {
	var out []kvPair
	for k, e := range c.b.t.writes {
		if strings.HasPrefix(k, c.vdir) {
			out = append(out, kvPair{k: []byte(k[len(c.vdir):]), v: e.val})
		}
	}
	slices.SortFunc(out, func(a, b kvPair) int { return bytes.Compare(a.k, b.k) })
	return out
}

// ge finds the first entry >= k over all sources.
func (c *cursor) ge(k []byte) ([]byte, []byte) {
	ov := c.overlay()
	from := k
	var best *kvPair
	// stored values, skipping keys the transaction rewrote or deleted
	for {
		p, ok := c.storedGE(from)
		if !ok {
			break
		}
		if _, mine := c.b.t.writes[c.vdir+string(p.k)]; mine {
			from = append(slices.Clone(p.k), 0)
			continue
		}
		best = &p
		break
	}
	i := sort.Search(len(ov), func(i int) bool { return bytes.Compare(ov[i].k, k) >= 0 })
	for ; i < len(ov); i++ {
		if ov[i].v != nil {
			if best == nil || bytes.Compare(ov[i].k, best.k) < 0 {
				best = &ov[i]
			}
			break
		}
	}
	j := sort.SearchStrings(c.subs, string(k))
	if j < len(c.subs) && (best == nil || bytes.Compare([]byte(c.subs[j]), best.k) < 0) {
		best = &kvPair{k: []byte(c.subs[j])}
	}
	return c.at(best)
}

// lt finds the last entry < k (k nil: the last entry) over all sources.
func (c *cursor) lt(k []byte) ([]byte, []byte) {
	ov := c.overlay()
	to := k
	var best *kvPair
	for {
		p, ok := c.storedLT(to)
		if !ok {
			break
		}
		if _, mine := c.b.t.writes[c.vdir+string(p.k)]; mine {
			to = p.k
			continue
		}
		best = &p
		break
	}
	i := len(ov)
	if k != nil {
		i = sort.Search(len(ov), func(i int) bool { return bytes.Compare(ov[i].k, k) >= 0 })
	}
	for i--; i >= 0; i-- {
		if ov[i].v != nil {
			if best == nil || bytes.Compare(ov[i].k, best.k) > 0 {
				best = &ov[i]
			}
			break
		}
	}
	j := len(c.subs)
	if k != nil {
		j = sort.SearchStrings(c.subs, string(k))
	}
	if j > 0 && (best == nil || bytes.Compare([]byte(c.subs[j-1]), best.k) > 0) {
		best = &kvPair{k: []byte(c.subs[j-1])}
	}
	return c.at(best)
}

func (c *cursor) at(p *kvPair) ([]byte, []byte) {
	if p == nil || c.b.t.err != nil {
		c.ok = false
		return nil, nil
	}
	c.pos, c.ok = p.k, true
	return p.k, p.v
}

func (c *cursor) First() ([]byte, []byte)        { return c.ge([]byte{}) }
func (c *cursor) Last() ([]byte, []byte)         { return c.lt(nil) }
func (c *cursor) Seek(k []byte) ([]byte, []byte) { return c.ge(k) }

func (c *cursor) Next() ([]byte, []byte) {
	if !c.ok {
		return nil, nil
	}
	return c.ge(append(slices.Clone(c.pos), 0))
}

func (c *cursor) Prev() ([]byte, []byte) {
	if !c.ok {
		return nil, nil
	}
	return c.lt(c.pos)
}

// --- names ---

func esc(n []byte) string {
	var sb strings.Builder
	for _, c := range n {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}

func unesc(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				out = append(out, byte(c))
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

package audit

import (
	"bytes"
	"fmt"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
)

// beginShared reports whether the previous attempt of these items landed
// although its answer was lost (writing them again would log them twice);
// otherwise it reads the stored position.
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

// syncShared reads the log's position as stored (another replica may have
// moved it) inside the commit's transaction, so the commit conflicts if
// any of it changes before it lands.
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
	l.base, _ = newestStart(b.bases)
	l.lastCP = 0
	if k, _ := b.checkpoints.Cursor().Last(); k != nil {
		l.lastCP = u64(k)
	}
	return nil
}

// sharedChunk is how many receipts one commit of a shared log holds, to
// stay under etcd's 128 operations per transaction.
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

// positionShared starts a shared log's commit from the stored position:
// the one this writer's last commit left when it can rely on that
// (*speculated; the commit checks it), else the one beginShared reads.
// *committedRev learns the commit's revision.
func (l *Log) positionShared(tx store.Tx, b buckets, items []item, speculated *bool, committedRev *int64) (bool, error) {
	if *speculated {
		// The previous run speculated and conflicted: another replica writes.
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
	// Every commit moves the head: the commit fails if another replica wrote.
	rv.Unchanged(b.root, known)
	rv.Unchanged(b.bases, known)
	rv.Unchanged(b.checkpoints, known)
	return false, nil
}

// specBackoff is how many commits read the stored position after a
// speculation conflicted.
const specBackoff = 8

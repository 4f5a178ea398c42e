package audit

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

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
			// Queue empty: commit now if someone waits, else linger once
			// (until nudged) and take what came.
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
// has finished, so callers never block on a full queue meanwhile (receipts
// are bounded by MaxBacklog). open is false when the queue was closed.
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

// answerWaiting answers waiters, while the verification waits for the
// store, as a failed commit does; it returns the receipts, which stay held.
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

// tick retries failed commits and signs a checkpoint when the interval has
// passed and the tree grew.
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

// write commits items with their tree hashes, the new head and, when due,
// a signed checkpoint, in one transaction.
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
		visit := storeNodes(b.tree, &perr)
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

// committed hands back the items' references and passes a signed
// checkpoint on.
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
		for _, q := range l.wqueues {
			q.push(*cp)
		}
	}
}

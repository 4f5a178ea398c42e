package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/store"
)

// writeTx tracks what one bbolt transaction changed.
type writeTx struct {
	tx      store.Tx
	root    store.Bucket
	touched map[string]bool
	// created holds cookbooks that had no version before this transaction:
	// the index has no documents of theirs to find and delete.
	created map[string]bool
}

// stored returns the canonical JSON of id@version, or nil.
func (w *writeTx) stored(id, version string) ([]byte, error) {
	raw := w.root.Get(bundleKey(id, version))
	if raw == nil {
		return nil, nil
	}
	return unpack(raw)
}

func (w *writeTx) put(b *Bundle, canonical []byte, hash string) error {
	if !w.touched[b.CookbookID] && latestVersion(w.root, b.CookbookID) == "" {
		w.created[b.CookbookID] = true
	}
	if err := w.root.Put(bundleKey(b.CookbookID, b.Version), pack(canonical)); err != nil {
		return err
	}
	raw, err := json.Marshal(itemOf(b, hash))
	if err != nil {
		return err
	}
	if err := w.root.Put(itemKey(b.CookbookID, b.Version), raw); err != nil {
		return err
	}
	w.touched[b.CookbookID] = true
	return nil
}

func (w *writeTx) delete(id, version string) error {
	if err := w.root.Delete(bundleKey(id, version)); err != nil {
		return err
	}
	if err := w.root.Delete(itemKey(id, version)); err != nil {
		return err
	}
	w.touched[id] = true
	return nil
}

// write runs fn in one transaction; if it touched cookbooks, the same
// transaction bumps the revision and logs the change, and the index update
// is queued after the commit (a failed update is repaired before the next
// read). Concurrent writes commit together in arrival order, each with its
// own revision; no caller returns before its commit is durable, and a
// failing member makes the group commit one by one.
func (s *Service) write(ctx context.Context, fn func(w *writeTx) error) error {
	r := &writeReq{fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	s.groupMu.Lock()
	s.group = append(s.group, r)
	if s.leading {
		s.groupMu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-r.lead:
			// The previous committer handed over: r heads the queue.
		}
		s.groupMu.Lock()
	}
	s.leading = true
	batch := s.group
	s.group = nil
	s.groupMu.Unlock()

	s.commitGroup(ctx, batch)
	// Past maxIndexLag revisions the committer brings the index up to date
	// before handing over (not during a background rebuild).
	if s.indexLag() > maxIndexLag && !s.rebuilding.Load() {
		s.writeMu.Lock()
		s.applyQueuedLocked(ctx)
		s.writeMu.Unlock()
	}

	s.groupMu.Lock()
	if len(s.group) > 0 {
		close(s.group[0].lead)
	} else {
		s.leading = false
	}
	s.groupMu.Unlock()
	return r.err
}

// writeReq is one write waiting to be committed.
type writeReq struct {
	fn   func(w *writeTx) error
	err  error
	done chan struct{} // closed once err is final
	lead chan struct{} // closed when this caller is to commit the queue
}

// commitGroup commits batch, together when it holds several writes and
// all of them succeed, else one by one, and queues the index updates.
func (s *Service) commitGroup(ctx context.Context, batch []*writeReq) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if len(batch) > 1 {
		var g groupTx
		err := s.db.Update(func(tx store.Tx) error {
			g = groupTx{touched: map[string]bool{}, created: map[string]bool{}}
			for _, r := range batch {
				if err := g.run(tx, r.fn); err != nil {
					return err
				}
			}
			return g.finish(tx)
		})
		if err == nil {
			s.grouped.Add(1)
			s.afterCommit(g)
			return
		}
	}
	for _, r := range batch {
		var g groupTx
		r.err = s.db.Update(func(tx store.Tx) error {
			g = groupTx{touched: map[string]bool{}, created: map[string]bool{}}
			if err := g.run(tx, r.fn); err != nil {
				return err
			}
			return g.finish(tx)
		})
		if r.err == nil {
			s.afterCommit(g)
		}
	}
}

// groupTx is what the writes of one bbolt transaction changed: the
// revisions they took (first..last) and the union of their cookbooks.
type groupTx struct {
	first, last uint64
	touched     map[string]bool
	created     map[string]bool
	upd         index.Update
}

// run applies one write: fn, then its revision and change-log record when
// it touched anything.
func (g *groupTx) run(tx store.Tx, fn func(w *writeTx) error) error {
	root, err := catalogBucket(tx)
	if err != nil {
		return err
	}
	w := &writeTx{tx: tx, root: root, touched: map[string]bool{}, created: map[string]bool{}}
	if err := runWrite(fn, w); err != nil {
		return err
	}
	if len(w.touched) == 0 {
		return nil
	}
	newRev := readU64(root.Get(keyRev)) + 1
	if err := root.Put(keyRev, store.U64(newRev)); err != nil {
		return err
	}
	raw, _ := json.Marshal(slices.Sorted(maps.Keys(w.touched)))
	if err := root.Put(changeKey(newRev), raw); err != nil {
		return err
	}
	if newRev > MaxChanges {
		if err := root.Delete(changeKey(newRev - MaxChanges)); err != nil {
			return err
		}
	}
	if g.first == 0 {
		g.first = newRev
	}
	g.last = newRev
	for id := range w.created {
		// Created by this write unless an earlier write of the group had
		// already put a version of it (then it is created by that one).
		if !g.touched[id] {
			g.created[id] = true
		}
	}
	maps.Copy(g.touched, w.touched)
	return nil
}

// runWrite turns a panic in fn (maybe on another caller's goroutine) into
// an error, so every waiting caller is released.
func runWrite(fn func(w *writeTx) error, w *writeTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("catalog write failed unexpectedly: %v", r)
		}
	}()
	return fn(w)
}

// finish reads the index documents of every cookbook the writes touched,
// as the transaction leaves them.
func (g *groupTx) finish(tx store.Tx) error {
	if g.last == 0 {
		return nil
	}
	root, err := catalogBucket(tx)
	if err != nil {
		return err
	}
	g.upd, err = docsFor(root, g.touched)
	g.upd.Rev = g.last
	for id := range g.created {
		g.upd.Created = append(g.upd.Created, id)
	}
	return err
}

// afterCommit records the group's revisions and queues its index update,
// applied off the writer's path in revision order; every read applies what
// is queued first, so a write's caller never waits for the index.
func (s *Service) afterCommit(g groupTx) {
	if g.last == 0 {
		return
	}
	s.queueMu.Lock()
	s.queued = append(s.queued, g)
	s.raiseStoreRev(g.last)
	start := !s.indexing
	s.indexing = true
	s.queueMu.Unlock()
	if start {
		s.indexers.Add(1)
		go s.indexQueued()
	}
}

// indexLinger is how long queued index updates wait for more; maxIndexLag
// how far the index may fall behind before a committer waits for it.
const (
	indexLinger = 20 * time.Millisecond
	maxIndexLag = 8
)

// raiseStoreRev records rev as committed unless a later revision is known
// already (on etcd, another replica's write seen through the watch).
func (s *Service) raiseStoreRev(rev uint64) {
	for {
		cur := s.storeRev.Load()
		if rev <= cur || s.storeRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// indexLag is how many revisions the index is behind the store.
func (s *Service) indexLag() uint64 {
	store, idx := s.storeRev.Load(), s.indexRev.Load()
	if store <= idx {
		return 0
	}
	return store - idx
}

// indexQueued applies queued updates until none is left.
func (s *Service) indexQueued() {
	defer s.indexers.Done()
	for {
		// Updates within indexLinger join one batch (one index segment).
		time.Sleep(indexLinger)
		s.writeMu.Lock()
		s.applyQueuedLocked(context.Background())
		s.writeMu.Unlock()
		s.queueMu.Lock()
		if len(s.queued) == 0 {
			s.indexing = false
			s.queueMu.Unlock()
			return
		}
		s.queueMu.Unlock()
	}
}

// applyQueuedLocked brings the index to the last queued revision, merging
// consecutive updates into one batch; a gap catches up over the change
// log. A failure is logged and repaired by the next read.
func (s *Service) applyQueuedLocked(ctx context.Context) {
	s.queueMu.Lock()
	batch := s.queued
	s.queued = nil
	s.queueMu.Unlock()
	if !s.hasIndex() {
		// No index (a rebuild runs or failed): the next one catches up.
		return
	}
	for len(batch) > 0 && batch[0].last <= s.indexRev.Load() {
		batch = batch[1:] // already covered by a rebuild or a catch-up
	}
	if len(batch) == 0 {
		return
	}
	n := 1
	for n < len(batch) && batch[n].first == batch[n-1].last+1 {
		n++
	}
	if s.indexRev.Load() != batch[0].first-1 || n < len(batch) {
		if _, err := s.catchUpLocked(ctx); err != nil {
			s.logger.Error("catalog index catch-up failed; it will be repaired on the next read", "error", err.Error())
		}
		return
	}
	upd := mergeUpdates(batch)
	if err := s.applyLocked(ctx, upd); err != nil {
		s.logger.Error("catalog index update failed; it will be repaired on the next read", "rev", upd.Rev, "error", err.Error())
	}
}

// mergeUpdates merges consecutive groups' updates: each cookbook gets its
// last group's documents, created when its first group created it.
func mergeUpdates(gs []groupTx) index.Update {
	if len(gs) == 1 {
		return gs[0].upd
	}
	first, last := map[string]int{}, map[string]int{}
	var out index.Update
	for i, g := range gs {
		for _, id := range g.upd.Cookbooks {
			if _, seen := first[id]; !seen {
				first[id] = i
				out.Cookbooks = append(out.Cookbooks, id)
			}
			last[id] = i
		}
	}
	for _, id := range out.Cookbooks {
		if slices.Contains(gs[first[id]].upd.Created, id) {
			out.Created = append(out.Created, id)
		}
	}
	for i, g := range gs {
		for _, d := range g.upd.Docs {
			if last[d.CookbookID] == i {
				out.Docs = append(out.Docs, d)
			}
		}
	}
	out.Rev = gs[len(gs)-1].upd.Rev
	return out
}

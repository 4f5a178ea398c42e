package catalog

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

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

// stored returns the stored bytes of id@version, or nil.
func (w *writeTx) stored(id, version string) []byte { return w.root.Get(bundleKey(id, version)) }

func (w *writeTx) put(b *Bundle, canonical []byte, hash string) error {
	if !w.touched[b.CookbookID] && latestVersion(w.root, b.CookbookID) == "" {
		w.created[b.CookbookID] = true
	}
	if err := w.root.Put(bundleKey(b.CookbookID, b.Version), canonical); err != nil {
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

// write runs fn in one bbolt transaction; if it touched cookbooks, the same
// transaction bumps the revision and logs the change, and after the commit
// the index is updated to that revision. A failed index update leaves the
// committed data in place and is repaired before the next read.
func (s *Service) write(ctx context.Context, fn func(w *writeTx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var upd index.Update
	var newRev uint64
	err := s.db.Update(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		w := &writeTx{tx: tx, root: root, touched: map[string]bool{}, created: map[string]bool{}}
		if err := fn(w); err != nil {
			return err
		}
		if len(w.touched) == 0 {
			return nil
		}
		newRev = readU64(root.Get(keyRev)) + 1
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
		upd, err = docsFor(root, w.touched)
		upd.Rev = newRev
		for id := range w.created {
			upd.Created = append(upd.Created, id)
		}
		return err
	})
	if err != nil {
		return err
	}
	if newRev == 0 {
		return nil
	}
	s.storeRev.Store(newRev)
	if s.indexRev.Load() != newRev-1 {
		// The index missed an earlier revision; catch up over the log,
		// which covers this one too.
		if _, err := s.catchUpLocked(ctx); err != nil {
			s.logger.Error("catalog index catch-up failed; it will be repaired on the next read", "error", err.Error())
		}
		return nil
	}
	if err := s.applyLocked(ctx, upd); err != nil {
		s.logger.Error("catalog index update failed; it will be repaired on the next read", "rev", newRev, "error", err.Error())
	}
	return nil
}

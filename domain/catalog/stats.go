package catalog

import (
	"context"
	"errors"

	"github.com/accordsai/accords-mcp/store"
)

// StoreRev reads the catalog revision committed in db without opening the
// index (doctor on a read-only database).
func StoreRev(db *store.DB) (uint64, error) {
	var rev uint64
	err := db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		rev = readU64(root.Get(keyRev))
		return nil
	})
	return rev, err
}

// SettledIndexStats is IndexStats once no write sits between its commit and
// its index update, so differing revisions mean a missed change.
func (s *Service) SettledIndexStats() (docs, indexRev, storeRev uint64, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.applyQueuedLocked(context.Background())
	return s.IndexStats()
}

// IndexStats reports the index's document count and revision next to the
// store's (a write in progress may show the store one ahead).
func (s *Service) IndexStats() (docs, indexRev, storeRev uint64, err error) {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	storeRev = s.storeRev.Load()
	if s.idx == nil {
		if s.rebuilding.Load() {
			return 0, 0, storeRev, ErrIndexRebuilding
		}
		return 0, 0, storeRev, errors.New("index is not open")
	}
	if docs, err = s.idx.DocCount(); err != nil {
		return 0, 0, storeRev, err
	}
	indexRev, err = s.idx.Rev()
	return docs, indexRev, storeRev, err
}

package catalog

import (
	"errors"

	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

// StoreRev reads the catalog revision committed in db without opening the
// index (doctor on a read-only database).
func StoreRev(db *store.DB) (uint64, error) {
	var rev uint64
	err := db.View(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		rev = readU64(root.Get(keyRev))
		return nil
	})
	return rev, err
}

// IndexStats reports the open index's document count and the revision it
// reflects, next to the store's revision (doctor and metrics).
func (s *Service) IndexStats() (docs, indexRev, storeRev uint64, err error) {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	storeRev = s.storeRev.Load()
	if s.idx == nil {
		return 0, 0, storeRev, errors.New("index is not open")
	}
	if docs, err = s.idx.DocCount(); err != nil {
		return 0, 0, storeRev, err
	}
	indexRev, err = s.idx.Rev()
	return docs, indexRev, storeRev, err
}

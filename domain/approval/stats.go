package approval

import (
	"encoding/json"

	"github.com/accordsai/accords-mcp/store"
)

// CountPending counts the live, non-terminal handles of every scope (the
// pending-handles metric).
func (s *Store) CountPending() (int, error) {
	now := s.now()
	n := 0
	err := s.db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketHandles)
		if root == nil {
			return nil
		}
		return root.ForEachBucket(func(scope []byte) error {
			return root.Bucket(scope).ForEach(func(_, v []byte) error {
				var r Record
				if v != nil && json.Unmarshal(v, &r) == nil && !r.Terminal && !s.stale(r, now) {
					n++
				}
				return nil
			})
		})
	})
	return n, err
}

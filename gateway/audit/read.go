package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// Filter selects receipts for List.
type Filter struct {
	// Scope restricts to one tenant ("" means every scope: operator use only).
	Scope   string
	Tool    string
	Outcome string
	// CallID finds one call's receipt (the `_meta["accords/call_id"]` of
	// its result).
	CallID string
	Since  time.Time
	// Limit caps the result (newest first); 0 means 50.
	Limit int
}

// List returns receipts matching f, newest first.
func List(db *store.DB, f Filter) ([]Receipt, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	out := []Receipt{}
	err := db.View(func(tx store.Tx) error {
		b, rb := storedReceipts(tx)
		if b == nil {
			return errors.New("audit bucket missing")
		}
		if rb == nil {
			return nil
		}
		c := rb.Cursor()
		for k, v := c.Last(); k != nil && len(out) < f.Limit; k, v = c.Prev() {
			var r Receipt
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("receipt %x unreadable: %w", k, err)
			}
			if (f.Scope == "" || r.Scope == f.Scope) && (f.CallID == "" || r.CallID == f.CallID) &&
				(f.Tool == "" || r.Tool == f.Tool) && (f.Outcome == "" || r.Outcome == f.Outcome) &&
				(f.Since.IsZero() || !olderThan(r.Timestamp, f.Since)) {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

// ErrCallNotFound means no stored receipt has the call id.
var ErrCallNotFound = errors.New("no receipt with this call id")

// FindCall returns the receipt of the call with id callID (newest first:
// a recent call is found quickly).
func FindCall(db *store.DB, callID string) (Receipt, error) {
	if callID == "" {
		return Receipt{}, errors.New("a call id is required")
	}
	rs, err := List(db, Filter{CallID: callID, Limit: 1})
	if err != nil {
		return Receipt{}, err
	}
	if len(rs) == 0 {
		return Receipt{}, fmt.Errorf("%w %q (not committed yet, pruned by retention, or never written)", ErrCallNotFound, callID)
	}
	return rs[0], nil
}

// List returns receipts after committing everything queued, so a caller
// sees its own previous calls.
func (l *Log) List(f Filter) ([]Receipt, error) {
	// A failed flush must not hide the receipts already written.
	_ = l.Flush()
	return List(l.db, f)
}

// storedReceipts are the audit bucket of tx and its receipts bucket, each
// nil when absent (a database read as it is, never migrated).
func storedReceipts(tx store.Tx) (root, receipts store.Bucket) {
	if root = tx.Bucket(store.BucketAudit); root != nil {
		receipts = root.Bucket(bucketReceipts)
	}
	return root, receipts
}

// RecordedProblem is the verification failure a server found and stored
// (at start, against the log itself or its anchor) that no operator has
// acknowledged yet; nil when there is none.
func RecordedProblem(db *store.DB) (*Problem, error) {
	var p *Problem
	err := db.View(func(tx store.Tx) error {
		if b := tx.Bucket(store.BucketAudit); b != nil {
			p = recorded(b)
		}
		return nil
	})
	return p, err
}

package audit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

// Problem kinds reported by Verify.
const (
	ProblemAltered   = "altered"
	ProblemRemoved   = "removed"
	ProblemReordered = "reordered"
	ProblemTruncated = "truncated"
	ProblemCorrupt   = "corrupt"
)

// Problem is the first inconsistency found.
type Problem struct {
	Kind    string `json:"kind"`
	Seq     uint64 `json:"seq"`
	Message string `json:"message"`
}

// Report is the result of Verify.
type Report struct {
	OK         bool        `json:"ok"`
	Count      int         `json:"count"`
	FirstSeq   uint64      `json:"first_seq,omitempty"`
	LastSeq    uint64      `json:"last_seq,omitempty"`
	Head       *Head       `json:"head,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Problem    *Problem    `json:"problem,omitempty"`
}

func (r *Report) fail(kind string, seq uint64, format string, args ...any) Report {
	r.OK = false
	r.Problem = &Problem{Kind: kind, Seq: seq, Message: fmt.Sprintf(format, args...)}
	return *r
}

// Verify checks the whole chain from the retention checkpoint (or genesis)
// to the stored head and reports the first receipt that was altered, removed
// or reordered, or a tail truncated below the head. It needs no key.
func Verify(db *store.DB) (Report, error) {
	var rep Report
	err := db.View(func(tx *bolt.Tx) error {
		rep = verifyTx(tx)
		return nil
	})
	return rep, err
}

func verifyTx(tx *bolt.Tx) Report {
	rep := Report{OK: true}
	b := tx.Bucket(store.BucketAudit)
	if b == nil {
		return rep.fail(ProblemCorrupt, 0, "audit bucket missing")
	}
	var head Head
	hasHead, err := store.GetJSON(b, keyHead, &head)
	if err != nil {
		return rep.fail(ProblemCorrupt, 0, "stored head unreadable: %v", err)
	}
	var cp Checkpoint
	hasCP, err := store.GetJSON(b, keyCheckpoint, &cp)
	if err != nil {
		return rep.fail(ProblemCorrupt, 0, "stored checkpoint unreadable: %v", err)
	}
	if hasHead {
		rep.Head = &head
	}
	if hasCP {
		rep.Checkpoint = &cp
	}
	prev, nextSeq := Genesis, uint64(1)
	if hasCP {
		prev, nextSeq = cp.Hash, cp.Seq+1
	}
	rb := b.Bucket(bucketReceipts)
	if rb != nil {
		c := rb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return rep.fail(ProblemCorrupt, 0, "unexpected key %q in the receipts bucket", k)
			}
			keySeq := binary.BigEndian.Uint64(k)
			r, canonical, err := decodeStrict(v)
			if err != nil {
				return rep.fail(ProblemAltered, keySeq, "receipt %d altered: not a valid receipt (%v)", keySeq, err)
			}
			if r.Seq != keySeq {
				return rep.fail(ProblemReordered, keySeq, "receipt %d reordered: position %d holds receipt %d", keySeq, keySeq, r.Seq)
			}
			if !canonical {
				return rep.fail(ProblemAltered, keySeq, "receipt %d altered: stored bytes differ from its canonical form", keySeq)
			}
			want, _, err := chainHash(r)
			if err != nil || want != r.Hash {
				return rep.fail(ProblemAltered, keySeq, "receipt %d altered: content does not match its hash", keySeq)
			}
			if keySeq != nextSeq {
				if keySeq < nextSeq {
					return rep.fail(ProblemReordered, keySeq, "receipt %d reordered: expected receipt %d at this point", keySeq, nextSeq)
				}
				what := fmt.Sprintf("receipts %d..%d removed", nextSeq, keySeq-1)
				if nextSeq == keySeq-1 {
					what = fmt.Sprintf("receipt %d removed", nextSeq)
				}
				return rep.fail(ProblemRemoved, nextSeq, "%s: the next receipt present is %d", what, keySeq)
			}
			if r.PrevHash != prev {
				// Both receipts are self-consistent, so the predecessor was
				// rewritten with a recomputed hash (or replaced).
				return rep.fail(ProblemAltered, keySeq-1, "receipt %d altered: its hash was recomputed and no longer matches the prev_hash of receipt %d", keySeq-1, keySeq)
			}
			if rep.Count == 0 {
				rep.FirstSeq = keySeq
			}
			rep.Count++
			rep.LastSeq = keySeq
			prev, nextSeq = r.Hash, keySeq+1
		}
	}
	last := nextSeq - 1
	if !hasHead {
		if rep.Count > 0 {
			return rep.fail(ProblemCorrupt, 0, "stored head missing while %d receipts exist", rep.Count)
		}
		return rep
	}
	switch {
	case head.Seq > last:
		return rep.fail(ProblemTruncated, last+1, "log truncated: the stored head is receipt %d but the log ends at receipt %d (%d receipts missing from the tail)", head.Seq, last, head.Seq-last)
	case head.Seq < last:
		return rep.fail(ProblemAltered, head.Seq+1, "receipts after the stored head (%d) were added outside the server: first is %d", head.Seq, head.Seq+1)
	case head.Hash != prev:
		return rep.fail(ProblemAltered, last, "receipt %d altered: its hash does not match the stored head", last)
	}
	return rep
}

// Filter selects receipts for List.
type Filter struct {
	// Scope restricts to one tenant ("" means every scope: operator use only).
	Scope   string
	Tool    string
	Outcome string
	Since   time.Time
	// Limit caps the result (newest first); 0 means 50.
	Limit int
}

// List returns receipts matching f, newest first.
func List(db *store.DB, f Filter) ([]Receipt, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	out := []Receipt{}
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketAudit)
		if b == nil {
			return errors.New("audit bucket missing")
		}
		rb := b.Bucket(bucketReceipts)
		if rb == nil {
			return nil
		}
		c := rb.Cursor()
		for k, v := c.Last(); k != nil && len(out) < f.Limit; k, v = c.Prev() {
			var r Receipt
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("receipt %x unreadable: %w", k, err)
			}
			if f.Scope != "" && r.Scope != f.Scope {
				continue
			}
			if f.Tool != "" && r.Tool != f.Tool {
				continue
			}
			if f.Outcome != "" && r.Outcome != f.Outcome {
				continue
			}
			if !f.Since.IsZero() {
				t, err := time.Parse(time.RFC3339Nano, r.Timestamp)
				if err == nil && t.Before(f.Since) {
					continue
				}
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// List returns receipts after committing everything queued, so a caller
// sees its own previous calls.
func (l *Log) List(f Filter) ([]Receipt, error) {
	// A failed flush must not hide the receipts already written.
	_ = l.Flush()
	return List(l.db, f)
}

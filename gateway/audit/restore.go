package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// A restore records itself in the restored log: a signed restored note
// (kept for good) names the replaced log, where the two part and how far
// the replaced one went, so verification takes a checkpoint of the
// replaced history for what it is; without the note it is a rollback.

// RestoreDiff compares the log of a database about to be replaced by a
// restore with the log of the backup restored into its place.
type RestoreDiff struct {
	Source       string `json:"source,omitempty"` // a path, or "-" for stdin
	PreviousLog  string `json:"previous_log,omitempty"`
	PreviousSize uint64 `json:"previous_size"`
	RestoredLog  string `json:"restored_log,omitempty"`
	RestoredSize uint64 `json:"restored_size"`
	// Common is how many receipts from the start the two logs share
	// (pruned receipts count as shared).
	Common uint64 `json:"common"`
	// Discarded counts the receipts the replaced database held past Common.
	Discarded uint64 `json:"discarded"`
}

// Summary is the diff in one sentence.
func (d RestoreDiff) Summary() string {
	src := d.Source
	if src == "" {
		src = "a backup"
	}
	switch {
	case d.PreviousLog == "":
		return fmt.Sprintf("restored %s ending at receipt %d; the replaced database held no audit log", src, d.RestoredSize)
	case d.PreviousLog != d.RestoredLog:
		return fmt.Sprintf("restored %s (log %s, ending at receipt %d) in place of log %s: its %d receipts are discarded", src, d.RestoredLog, d.RestoredSize, d.PreviousLog, d.Discarded)
	case d.Discarded == 0:
		return fmt.Sprintf("restored %s ending at receipt %d; no receipt of the replaced log is discarded", src, d.RestoredSize)
	}
	return fmt.Sprintf("restored %s ending at receipt %d; %d receipts the replaced log held after receipt %d (up to %d) are discarded and numbers from %d are used again",
		src, d.RestoredSize, d.Discarded, d.Common, d.PreviousSize, d.RestoredSize+1)
}

// position is a log's origin and head, read from a database.
type position struct {
	origin string
	head   Head
}

func readPosition(db *store.DB) (position, error) {
	var p position
	err := db.View(func(tx store.Tx) error {
		b, _ := storedReceipts(tx)
		if b == nil {
			return nil
		}
		var info logInfo
		if _, err := store.GetJSON(b, keyLog, &info); err != nil {
			return err
		}
		p.origin = info.Origin
		_, err := store.GetJSON(b, keyHead, &p.head)
		return err
	})
	return p, err
}

// receiptHash is the stored hash of receipt seq, if stored.
func receiptHash(db *store.DB, seq uint64) (string, bool) {
	var h string
	_ = db.View(func(tx store.Tx) error {
		if _, rb := storedReceipts(tx); rb != nil {
			if v := rb.Get(store.U64(seq)); v != nil {
				h = peek(v).Hash
			}
		}
		return nil
	})
	return h, h != ""
}

// maxCompareSteps bounds the search for where two copies of one log part.
const maxCompareSteps = 100000

// CompareForRestore compares the log of the database being replaced (prev;
// nil when there is none) with the log of the backup about to take its
// place. It only reads.
func CompareForRestore(prev, restored *store.DB, source string) (RestoreDiff, error) {
	d := RestoreDiff{Source: source}
	rp, err := readPosition(restored)
	if err != nil {
		return d, fmt.Errorf("read the backup's audit log: %w", err)
	}
	d.RestoredLog, d.RestoredSize = rp.origin, rp.head.Seq
	if prev == nil {
		return d, nil
	}
	pp, err := readPosition(prev)
	if err != nil {
		return d, fmt.Errorf("read the current audit log: %w", err)
	}
	d.PreviousLog, d.PreviousSize = pp.origin, pp.head.Seq
	if pp.origin != "" && pp.origin == rp.origin {
		// Walk back from the shorter end to the newest receipt both hold
		// alike (pruned counts as shared).
		s := min(pp.head.Seq, rp.head.Seq)
		for steps := 0; s > 0 && steps < maxCompareSteps; steps++ {
			hp, okp := receiptHash(prev, s)
			hr, okr := receiptHash(restored, s)
			if !okp || !okr || hp == hr {
				break
			}
			s--
		}
		d.Common = s
	}
	// What the replaced database held past the common part.
	err = prev.View(func(tx store.Tx) error {
		_, rb := storedReceipts(tx)
		if rb == nil {
			return nil
		}
		c := rb.Cursor()
		for k, _ := c.Seek(store.U64(d.Common + 1)); k != nil && u64(k) <= pp.head.Seq; k, _ = c.Next() {
			d.Discarded++
		}
		return nil
	})
	return d, err
}

const replacedPrefix = " [replaced "

// replacedMarker is the machine-read end of a restored note's text.
func replacedMarker(d RestoreDiff) string {
	if d.PreviousLog == "" {
		return ""
	}
	common := d.Common
	if d.PreviousLog != d.RestoredLog {
		common = 0
	}
	return fmt.Sprintf("%s%s %d %d]", replacedPrefix, d.PreviousLog, d.PreviousSize, common)
}

// replaced is what a restored note says of the log it replaced.
type replaced struct {
	origin       string
	size, common uint64
}

func parseReplaced(text string) (replaced, bool) {
	i := strings.LastIndex(text, replacedPrefix)
	if i < 0 || !strings.HasSuffix(text, "]") {
		return replaced{}, false
	}
	f := strings.Fields(text[i+len(replacedPrefix) : len(text)-1])
	if len(f) != 3 {
		return replaced{}, false
	}
	size, err1 := strconv.ParseUint(f[1], 10, 64)
	common, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return replaced{}, false
	}
	return replaced{origin: f[0], size: size, common: common}, true
}

// restoreAccounts reports whether a restored note says cp is of the
// history a restore replaced (its log, past where the two parted, at most
// as far as the replaced log went).
func restoreAccounts(restores []Base, cp Checkpoint) bool {
	for _, r := range restores {
		rp, ok := parseReplaced(r.Text)
		if ok && cp.Origin == rp.origin && cp.Size > rp.common && cp.Size <= rp.size {
			return true
		}
	}
	return false
}

// readRestores verifies the restored notes (v nil: parse only); a note
// that does not verify is an error.
func readRestores(raws []keyed, origin string, v note.Verifier) ([]Base, *Problem) {
	var out []Base
	for _, k := range raws {
		b, err := openBase(k.raw, v)
		switch {
		case errors.Is(err, ErrSignature):
			return nil, &Problem{Kind: ProblemForged, Message: fmt.Sprintf("restore record %d is not signed by the audit key (%s)", k.key, keyLabel(v))}
		case err != nil:
			return nil, &Problem{Kind: ProblemCorrupt, Message: fmt.Sprintf("restore record %d unreadable: %v", k.key, err)}
		case b.Kind != BaseRestored || b.Origin != origin:
			return nil, &Problem{Kind: ProblemForged, Message: fmt.Sprintf("restore record %d is a %s note of log %q: moved or forged", k.key, b.Kind, b.Origin)}
		}
		out = append(out, b)
	}
	return out, nil
}

// writeRestored signs a restored note at the current size into the
// restores bucket (a restore's receipt follows it in the same commit).
func (l *Log) writeRestored(b buckets, rng *compact.Range, head Head, d RestoreDiff) error {
	n := uint64(1)
	if k, _ := b.restores.Cursor().Last(); k != nil {
		n = u64(k) + 1
	}
	base, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseRestored, Size: rng.End(), Root: rootOf(rng),
		Chain: head.Hash, Time: l.opts.Now(), Text: d.Summary() + replacedMarker(d)})
	if err != nil {
		return err
	}
	return b.restores.Put(store.U64(n), base.Signed)
}

// RecordRestore records that a backup was restored into the log's
// database: a signed restored note and a TypeRestore receipt, committed
// together, then a checkpoint.
func (l *Log) RecordRestore(d RestoreDiff, operator string) (Ref, error) {
	if err := l.Flush(); err != nil {
		return Ref{}, err
	}
	d.RestoredLog = l.origin
	ref, err := l.append(l.operatorReceipt("restore_", TypeRestore, operator, OutcomeRestored, d.Summary()), true, &d)
	if err != nil {
		return ref, err
	}
	return ref, l.Checkpoint()
}

// RecordRestoreIn opens the log of db with opts, records the restore and
// closes it: the final checkpoint goes to opts.Anchor.
func RecordRestoreIn(db *store.DB, opts Options, d RestoreDiff, operator string) (Ref, error) {
	opts.CheckAnchor = false // the record is what makes the anchor consistent again
	l, err := Open(db, opts)
	if err != nil {
		return Ref{}, err
	}
	ref, err := l.RecordRestore(d, operator)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return ref, err
}

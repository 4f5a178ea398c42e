package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
)

// The tenant floor: receipts it protects stay below the retention base with
// the tree hashes of their inclusion proofs; the base's note names how many
// and a digest of their numbers, so removing or swapping one is caught.

// keepPlan is what one pruning transaction keeps and removes of the
// receipts up to its cut.
type keepPlan struct {
	keep   []uint64 // stays below the base (in order)
	remove []uint64
	gone   map[string]uint64 // removed receipts by scope
	// byCount and byAge are removed receipts after the old base by the
	// bound that removed them; dropped were kept by an earlier base.
	byCount, byAge, dropped int
}

// planKeep decides for every receipt up to cut whether it stays: when it is
// not older than the age bound and fewer than Floor receipts of its tenant
// (counted in l.tenants) are newer. A shared log drops at most
// sharedFloorDrops formerly kept receipts per transaction.
func (l *Log) planKeep(b buckets, ret Retention, cutoff time.Time, start, cut uint64) keepPlan {
	p := keepPlan{gone: map[string]uint64{}}
	floor := ret.Floor
	if ret.MaxCount == 0 {
		floor = 0 // the floor guards against the count bound only
	}
	drops := -1
	if l.opts.Shared {
		drops = sharedFloorDrops
	}
	walked := map[string]uint64{}
	c := b.receipts.Cursor()
	for k, v := c.First(); k != nil && u64(k) <= cut; k, v = c.Next() {
		seq := u64(k)
		scope := peek(v).Scope
		// Receipts of the tenant newer than this one; a damaged count reads
		// as none newer, which keeps.
		var newer uint64
		if n := l.tenants[scope]; n > walked[scope]+1 {
			newer = n - walked[scope] - 1
		}
		walked[scope]++
		old := !cutoff.IsZero() && olderThan(peek(v).Timestamp, cutoff)
		keep := !old && newer < floor
		if seq <= start && !keep && drops == 0 {
			keep = true
		}
		if keep {
			p.keep = append(p.keep, seq)
			continue
		}
		p.remove = append(p.remove, seq)
		p.gone[scope]++
		switch {
		case seq <= start:
			p.dropped++
			if drops > 0 {
				drops--
			}
		case old:
			p.byAge++
		default:
			p.byCount++
		}
	}
	return p
}

// keptPathIDs are the tree nodes of receipt seq's inclusion proof.
func keptPathIDs(seq, size uint64) []compact.NodeID {
	nodes, err := proof.Inclusion(seq-1, size)
	if err != nil {
		return nil
	}
	return nodes.IDs
}

// keptDigest names a set of kept receipt numbers.
func keptDigest(seqs []uint64) string {
	h := sha256.New()
	for _, s := range seqs {
		h.Write(store.U64(s))
	}
	return PrefixSHA256 + hex.EncodeToString(h.Sum(nil))
}

const keptPrefix = " [kept "

// keptMarker ends a retention base's note: " [kept N sha256:<digest>]".
func keptMarker(seqs []uint64) string {
	if len(seqs) == 0 {
		return ""
	}
	return fmt.Sprintf("%s%d %s]", keptPrefix, len(seqs), keptDigest(seqs))
}

// parseKept reads keptMarker back from a base note's text.
func parseKept(text string) (n int, digest string, ok bool) {
	i := strings.LastIndex(text, keptPrefix)
	if i < 0 || !strings.HasSuffix(text, "]") {
		return 0, "", false
	}
	count, digest, found := strings.Cut(text[i+len(keptPrefix):len(text)-1], " ")
	n, err := strconv.Atoi(count)
	if !found || err != nil || n <= 0 || !strings.HasPrefix(digest, PrefixSHA256) {
		return 0, "", false
	}
	return n, digest, true
}

// loadTenants reads the receipt counts by scope, counting and storing
// them once for a log written before they were kept.
func (l *Log) loadTenants(b buckets) error {
	l.tenants = map[string]uint64{}
	ok, err := store.GetJSON(b.root, keyTenants, &l.tenants)
	if err != nil || ok {
		return err
	}
	c := b.receipts.Cursor()
	for k, v := c.First(); k != nil && u64(k) <= l.head.Seq; k, v = c.Next() {
		l.tenants[peek(v).Scope]++
	}
	return store.PutJSON(b.root, keyTenants, l.tenants)
}

// countTenants is counts with the receipts among items added.
func countTenants(counts map[string]uint64, items []item) map[string]uint64 {
	out := maps.Clone(counts)
	if out == nil {
		out = map[string]uint64{}
	}
	for i := range items {
		if items[i].isReceipt() {
			out[items[i].scope]++
		}
	}
	return out
}

// keptReceipt checks a receipt found below the retention base: the base's
// note must say receipts are kept, and it must be the leaf the base's
// signed tree holds at its number.
func (w *walker) keptReceipt(seq uint64, raw []byte) bool {
	base := w.retention
	if _, _, ok := parseKept(base.Text); !ok {
		w.problem(ProblemCorrupt, seq, "receipt %d is present although the signed start of the log is after receipt %d", seq, w.start)
		return w.rep.Problem == nil
	}
	fail := func(kind, format string, args ...any) bool {
		w.rep.fail(kind, seq, format, args...)
		return false
	}
	if n := len(w.kept); n > 0 && seq <= w.kept[n-1] {
		return fail(ProblemReordered, "receipt %d, kept below the retention base, comes after receipt %d", seq, w.kept[n-1])
	}
	if _, kind, msg := checkStored(seq, raw); kind != "" {
		return fail(kind, "receipt %d, kept below the retention base, %s", seq, msg)
	}
	if w.src.path == nil {
		return fail(ProblemTree, "receipt %d is kept below the retention base, but its inclusion proof is missing", seq)
	}
	path, err := w.src.path(seq, base.Size)
	if err != nil {
		return fail(ProblemTree, "the inclusion proof of receipt %d, kept below the retention base, is missing: %v", seq, err)
	}
	if err := VerifyInclusion(seq-1, base.Size, LeafHash(raw), path, base.Root); err != nil {
		return fail(ProblemAltered, "receipt %d, kept below the retention base, is not the receipt the signed base covers at that number", seq)
	}
	w.kept = append(w.kept, seq)
	w.rep.Kept++
	return true
}

// keptComplete checks that the receipts found below the retention base are
// exactly those its signed note names.
func (w *walker) keptComplete() bool {
	if w.retention == nil {
		return true
	}
	n, digest, ok := parseKept(w.retention.Text)
	if !ok {
		n = 0
	}
	if len(w.kept) == n && (n == 0 || keptDigest(w.kept) == digest) {
		return true
	}
	if len(w.kept) < n {
		w.rep.fail(ProblemRemoved, w.start, "the signed retention base at %d keeps %d receipts under the tenant floor, the log holds %d of them: receipts kept by retention were removed", w.start, n, len(w.kept))
		return false
	}
	w.rep.fail(ProblemAltered, w.start, "the receipts below the retention base at %d are not the %d the signed base keeps under the tenant floor", w.start, n)
	return false
}

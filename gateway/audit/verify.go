package audit

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// Problem kinds reported by Verify.
const (
	ProblemAltered    = "altered"
	ProblemRemoved    = "removed"
	ProblemReordered  = "reordered"
	ProblemTruncated  = "truncated"
	ProblemCorrupt    = "corrupt"
	ProblemTree       = "tree"        // stored tree hashes do not match the receipts
	ProblemRewritten  = "rewritten"   // receipts are not the ones a signed checkpoint covers
	ProblemForged     = "forged"      // a checkpoint or base note not signed by the key
	ProblemUnsigned   = "unsigned"    // receipts no signed checkpoint or base accounts for
	ProblemRolledBack = "rolled_back" // a saved checkpoint covers more than the log holds
	ProblemForeign    = "foreign"     // a saved checkpoint of another log
)

// Problem is the first inconsistency found.
type Problem struct {
	Kind    string `json:"kind"`
	Seq     uint64 `json:"seq"`
	Message string `json:"message"`
}

// CheckpointInfo summarises a checkpoint.
type CheckpointInfo struct {
	Size uint64 `json:"size"`
	Root string `json:"root"`
}

// BaseInfo summarises a base note.
type BaseInfo struct {
	Kind string `json:"kind"`
	Size uint64 `json:"size"`
	Time string `json:"time"`
	Note string `json:"note"`
	// What a retention base's pass removed by each bound, and kept below
	// it under the tenant floor.
	RemovedByCount int `json:"removed_by_count,omitempty"`
	RemovedByAge   int `json:"removed_by_age,omitempty"`
	Kept           int `json:"kept,omitempty"`
}

// SavedInfo is the outcome for one saved checkpoint.
type SavedInfo struct {
	Size uint64 `json:"size"`
	Root string `json:"root"`
	// Status: consistent, before_retention (pruned under a signed base),
	// acknowledged, or SavedReplaced.
	Status string `json:"status"`
}

// SavedReplaced: the saved checkpoint is of history a signed restore
// record says a restore replaced.
const SavedReplaced = "replaced_by_restore"

// Signature statuses.
const (
	SignaturesVerified   = "verified"
	SignaturesUnverified = "not checked (no public key)"
)

// Report is the result of Verify.
type Report struct {
	OK       bool   `json:"ok"`
	Origin   string `json:"origin,omitempty"`
	Count    int    `json:"count"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	Head     *Head  `json:"head,omitempty"`
	TreeSize uint64 `json:"tree_size"`
	Root     string `json:"root,omitempty"`
	// Checkpoints is how many signed checkpoints matched the receipts.
	Checkpoints int             `json:"checkpoints"`
	Newest      *CheckpointInfo `json:"newest_checkpoint,omitempty"`
	// Unsigned counts receipts after the newest checkpoint.
	Unsigned uint64    `json:"unsigned_receipts"`
	Base     *BaseInfo `json:"base,omitempty"`
	// Kept counts receipts kept below the retention base under the tenant
	// floor, each proven against the base's signed root.
	Kept         int         `json:"kept,omitempty"`
	Acknowledged []BaseInfo  `json:"acknowledged,omitempty"`
	Restores     []BaseInfo  `json:"restores,omitempty"`
	Saved        []SavedInfo `json:"saved,omitempty"`
	Signatures   string      `json:"signatures"`
	// Legacy: the log has no signed history yet.
	Legacy  bool     `json:"legacy,omitempty"`
	Problem *Problem `json:"problem,omitempty"`
}

// ChainOK reports whether the log verified, counting an intact chain
// without signed history yet (adopted at the next start) as verified.
func (r Report) ChainOK() bool {
	return r.OK || (r.Legacy && r.Problem != nil && r.Problem.Kind == ProblemUnsigned)
}

func (r *Report) fail(kind string, seq uint64, format string, args ...any) {
	if r.Problem != nil {
		return
	}
	r.OK = false
	r.Problem = &Problem{Kind: kind, Seq: seq, Message: fmt.Sprintf(format, args...)}
}

// VerifyOptions are the trust inputs of Verify.
type VerifyOptions struct {
	// Verifier is the audit public key; without it signatures are not
	// checked and Report.Signatures says so.
	Verifier note.Verifier
	// Saved are checkpoints recorded elsewhere (an anchor file, a copy of
	// `audit checkpoint`): the log must extend each.
	Saved [][]byte
}

// Verify checks the whole log: the chain from the signed start of
// verification (genesis, a retention base or an acknowledgement) to the
// head, every stored tree hash, every checkpoint's signature and root, and
// consistency with the saved checkpoints.
func Verify(db *store.DB, opts VerifyOptions) (Report, error) {
	var rep Report
	err := db.View(func(tx store.Tx) error {
		src, err := dbSource(tx)
		if err != nil {
			return err
		}
		rep = verify(src, opts, 0)
		return nil
	})
	return rep, err
}

// source is what verification reads: a database or an export.
type source struct {
	hasInfo     bool
	origin      string
	head        *Head
	legacy      *legacyCheckpoint
	checkpoints []keyed
	bases       []keyed
	restores    []keyed
	// receipts yields stored receipts with seq >= from in order.
	receipts func(from uint64, yield func(seq uint64, raw []byte) bool) error
	// frontier is the stored compact range [0, size).
	frontier func(size uint64) (*compact.Range, error)
	// tree returns a checker of stored tree hashes from leaf on, or nil.
	tree   func(fromLeaf uint64) *treeChecker
	hashAt func(seq uint64) (string, bool)
	// path is the inclusion proof of kept receipt seq in the tree of size.
	path func(seq, size uint64) ([][]byte, error)
}

type keyed struct {
	key uint64
	raw []byte
}

func dbSource(tx store.Tx) (*source, error) {
	b, err := auditBuckets(tx)
	if err != nil {
		return nil, err
	}
	src := &source{}
	var info logInfo
	if src.hasInfo, err = store.GetJSON(b.root, keyLog, &info); err != nil {
		return nil, err
	}
	src.origin = info.Origin
	var head Head
	if ok, err := store.GetJSON(b.root, keyHead, &head); err != nil {
		return nil, err
	} else if ok {
		src.head = &head
	}
	var lc legacyCheckpoint
	if ok, err := store.GetJSON(b.root, keyLegacyCheckpoint, &lc); err != nil {
		return nil, err
	} else if ok {
		src.legacy = &lc
	}
	src.checkpoints = readKeyed(b.checkpoints)
	src.bases = readKeyed(b.bases)
	src.restores = readKeyed(b.restores)
	src.receipts = func(from uint64, yield func(uint64, []byte) bool) error {
		if b.receipts == nil {
			return nil
		}
		c := b.receipts.Cursor()
		for k, v := c.Seek(store.U64(from)); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return fmt.Errorf("unexpected key %q in the receipts bucket", k)
			}
			if !yield(binary.BigEndian.Uint64(k), v) {
				return nil
			}
		}
		return nil
	}
	if b.tree == nil {
		src.frontier = func(size uint64) (*compact.Range, error) { return nil, errors.New("the audit tree bucket is missing") }
		return src, nil
	}
	src.frontier = func(size uint64) (*compact.Range, error) { return loadRange(b.tree, size) }
	src.path = func(seq, size uint64) ([][]byte, error) { return inclusionProof(bucketNodes(b.tree), seq-1, size) }
	src.tree = func(from uint64) *treeChecker { return newTreeChecker(b.tree, from) }
	src.hashAt = func(seq uint64) (string, bool) {
		v := b.receipts.Get(store.U64(seq))
		if v == nil {
			return "", false
		}
		return peek(v).Hash, true
	}
	return src, nil
}

func readKeyed(bk store.Bucket) []keyed {
	if bk == nil {
		return nil
	}
	var out []keyed
	c := bk.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		out = append(out, keyed{key: u64(k), raw: append([]byte(nil), v...)})
	}
	return out
}

// walker carries the state of one verification pass.
type walker struct {
	rep  *Report
	src  *source
	opts VerifyOptions

	start uint64 // receipts 1..start are not expected
	prev  string
	next  uint64
	rng   *compact.Range
	tree  *treeChecker

	cps      []Checkpoint
	ci       int
	saved    []Checkpoint
	si       int
	acks     []Base
	restores []Base

	// full: a walk of every receipt, not the start-up stretch; kept are
	// the receipts found below the retention base.
	full      bool
	retention *Base
	kept      []uint64

	skipUntil uint64
	skipping  *Base
	matched   *Checkpoint
}

// verify runs the checks; from > 0 starts the receipt walk at seq from
// (the startup check of the newest stretch) instead of the log's start.
func verify(src *source, opts VerifyOptions, from uint64) Report {
	rep := Report{OK: true, Origin: src.origin, Head: src.head, Signatures: SignaturesVerified}
	if opts.Verifier == nil {
		rep.Signatures = SignaturesUnverified
	}
	w := &walker{rep: &rep, src: src, opts: opts, prev: Genesis, next: 1, full: from == 0}
	if !src.hasInfo {
		w.legacyWalk()
		return rep
	}
	retention := w.readNotes()
	if rep.Problem != nil {
		return rep
	}
	if retention != nil {
		rep.Base = baseInfo(*retention)
		w.retention = retention
		w.start, w.prev, w.next = retention.Size, retention.Chain, retention.Size+1
	}
	rng, err := src.frontier(w.start)
	if err != nil {
		rep.fail(ProblemTree, w.start, "the tree hashes at the start of the log (%d) are missing: %v", w.start, err)
		return rep
	}
	if retention != nil && !bytes.Equal(rootOf(rng), retention.Root) {
		rep.fail(ProblemTree, w.start, "the stored tree hashes at the retention base (%d) do not match the signed base", w.start)
		return rep
	}
	w.rng = rng
	if from > w.next {
		if !w.seekStretch(from) {
			return rep
		}
	}
	if src.tree != nil {
		w.tree = src.tree(w.rng.End())
	}
	w.skipCheckpoints()
	first := w.next
	if from == 0 {
		first = 0 // receipts kept below the base too
	}
	if err := src.receipts(first, w.receipt); err != nil {
		rep.fail(ProblemCorrupt, 0, "%v", err)
	}
	w.finish()
	return rep
}

// seekStretch moves the walk's start to receipt from (stored frontier,
// stored chain hash) after checking the newest checkpoint before it
// against the stored tree.
func (w *walker) seekStretch(from uint64) bool {
	for _, a := range w.acks {
		if a.Size >= from-1 {
			return true // the acknowledged stretch restarts later; walk it all
		}
	}
	rng, err := w.src.frontier(from - 1)
	if err != nil {
		w.rep.fail(ProblemTree, from-1, "%v", err)
		return false
	}
	prev, ok := w.src.hashAt(from - 1)
	if !ok {
		w.rep.fail(ProblemRemoved, from-1, "receipt %d removed", from-1)
		return false
	}
	for i := len(w.cps) - 1; i >= 0; i-- {
		cp := w.cps[i]
		if cp.Size > from-1 || cp.Size <= w.start {
			continue
		}
		r, err := w.src.frontier(cp.Size)
		if err != nil {
			w.rep.fail(ProblemTree, cp.Size, "%v", err)
			return false
		}
		if !bytes.Equal(rootOf(r), cp.Root) {
			w.rep.fail(ProblemRewritten, cp.Size, "the stored tree at size %d does not match the checkpoint signed for it: history was rewritten", cp.Size)
			return false
		}
		w.matched = &w.cps[i]
		break
	}
	w.rng, w.prev, w.next = rng, prev, from
	return true
}

// readNotes verifies every base and checkpoint; it returns the newest
// retention (or adoption) base.
func (w *walker) readNotes() *Base {
	v := w.opts.Verifier
	var retention *Base
	for _, k := range w.src.bases {
		b, err := openBase(k.raw, v)
		switch {
		case errors.Is(err, ErrSignature):
			w.rep.fail(ProblemForged, k.key, "the base note at size %d is not signed by the audit key (%s): a forged retention or acknowledgement record", k.key, keyLabel(v))
			return nil
		case err != nil:
			w.rep.fail(ProblemCorrupt, k.key, "base note at size %d unreadable: %v", k.key, err)
			return nil
		case b.Size != k.key || b.Origin != w.src.origin:
			w.rep.fail(ProblemForged, k.key, "the base note stored at size %d is for size %d of log %q: moved or forged", k.key, b.Size, b.Origin)
			return nil
		}
		if b.Kind == BaseRestored {
			w.rep.fail(ProblemForged, k.key, "a restore record is stored as the base at size %d: moved or forged", k.key)
			return nil
		}
		if b.Kind == BaseAcknowledged {
			w.acks = append(w.acks, b)
		} else {
			bb := b
			retention = &bb
		}
	}
	if retention != nil {
		// Acknowledgements before the retention base are moot.
		w.acks = slices.DeleteFunc(w.acks, func(a Base) bool { return a.Size <= retention.Size })
	}
	for _, a := range w.acks {
		w.rep.Acknowledged = append(w.rep.Acknowledged, *baseInfo(a))
	}
	restores, p := readRestores(w.src.restores, w.src.origin, v)
	if p != nil {
		w.rep.fail(p.Kind, p.Seq, "%s", p.Message)
		return nil
	}
	w.restores = restores
	for _, r := range restores {
		w.rep.Restores = append(w.rep.Restores, *baseInfo(r))
	}
	for _, k := range w.src.checkpoints {
		cp, err := OpenCheckpoint(k.raw, w.src.origin, v)
		switch {
		case errors.Is(err, ErrSignature):
			w.rep.fail(ProblemForged, k.key, "the checkpoint at size %d is not signed by the audit key (%s): the log was rewritten and re-signed with another key", k.key, keyLabel(v))
			return nil
		case err != nil:
			w.rep.fail(ProblemForged, k.key, "checkpoint at size %d: %v", k.key, err)
			return nil
		case cp.Size != k.key:
			w.rep.fail(ProblemForged, k.key, "the checkpoint stored at size %d is for size %d", k.key, cp.Size)
			return nil
		}
		w.cps = append(w.cps, cp)
	}
	for i, raw := range w.opts.Saved {
		if v == nil {
			w.rep.fail(ProblemCorrupt, 0, "a saved checkpoint needs the audit public key to be checked")
			return nil
		}
		cp, err := OpenCheckpoint(raw, "", v)
		if err != nil {
			w.rep.fail(ProblemForged, 0, "saved checkpoint %d: %v", i+1, err)
			return nil
		}
		if cp.Origin != w.src.origin && restoreAccounts(w.restores, cp) {
			w.rep.Saved = append(w.rep.Saved, savedInfo(cp, SavedReplaced))
			continue
		}
		if cp.Origin != w.src.origin {
			w.rep.fail(ProblemForeign, 0, "saved checkpoint %d belongs to log %q, this database holds log %q: the database was replaced", i+1, cp.Origin, w.src.origin)
			return nil
		}
		w.saved = append(w.saved, cp)
	}
	slices.SortFunc(w.saved, func(a, b Checkpoint) int { return cmp.Compare(a.Size, b.Size) })
	return retention
}

func keyLabel(v note.Verifier) string {
	if v == nil {
		return "no key"
	}
	return v.Name()
}

// skipCheckpoints passes over checkpoints and saved checkpoints at or
// before the current tree size (before the start of verification): a
// saved one exactly at the start is compared with it.
func (w *walker) skipCheckpoints() {
	end := w.rng.End()
	for w.ci < len(w.cps) && w.cps[w.ci].Size < end {
		w.ci++
	}
	for w.si < len(w.saved) && w.saved[w.si].Size < end {
		status := "before_retention"
		if w.rng.End() > w.start {
			status = "acknowledged"
		}
		w.rep.Saved = append(w.rep.Saved, savedInfo(w.saved[w.si], status))
		w.si++
	}
	w.compareRoots()
}

func savedInfo(cp Checkpoint, status string) SavedInfo {
	return SavedInfo{Size: cp.Size, Root: base64.StdEncoding.EncodeToString(cp.Root), Status: status}
}

func baseInfo(b Base) *BaseInfo {
	bi := &BaseInfo{Kind: b.Kind, Size: b.Size, Time: b.Time.UTC().Format("2006-01-02T15:04:05Z07:00"), Note: b.Text}
	if b.Kind == BaseRetention {
		var from, to uint64
		_, _ = fmt.Sscanf(b.Text, retentionText, &from, &to, &bi.RemovedByCount, &bi.RemovedByAge)
		bi.Kept, _, _ = parseKept(b.Text)
	}
	return bi
}

// compareRoots checks the checkpoints whose size the walk has reached.
func (w *walker) compareRoots() {
	end := w.rng.End()
	var root []byte
	for w.ci < len(w.cps) && w.cps[w.ci].Size == end {
		if root == nil {
			root = rootOf(w.rng)
		}
		if !bytes.Equal(root, w.cps[w.ci].Root) {
			w.problem(ProblemRewritten, end, "the receipts up to %d are not the ones the checkpoint signed for size %d: history was rewritten (re-chained, reordered or replaced)", end, end)
			return
		}
		w.matched = &w.cps[w.ci]
		w.rep.Checkpoints++
		w.ci++
	}
	for w.si < len(w.saved) && w.saved[w.si].Size == end {
		if root == nil {
			root = rootOf(w.rng)
		}
		if !bytes.Equal(root, w.saved[w.si].Root) {
			if restoreAccounts(w.restores, w.saved[w.si]) {
				w.rep.Saved = append(w.rep.Saved, savedInfo(w.saved[w.si], SavedReplaced))
				w.si++
				continue
			}
			w.problem(ProblemRewritten, end, "the receipts up to %d are not the ones the saved checkpoint for size %d covers: history was rewritten", end, end)
			return
		}
		w.rep.Saved = append(w.rep.Saved, savedInfo(w.saved[w.si], "consistent"))
		w.si++
	}
}

// problem records a failure unless an acknowledgement covers seq; then the
// walk skips to the acknowledgement and restarts from it.
func (w *walker) problem(kind string, seq uint64, format string, args ...any) {
	if w.skipping != nil {
		return
	}
	for i := range w.acks {
		if a := w.acks[i]; a.Size >= seq && a.Size >= w.next-1 {
			for j := range w.rep.Acknowledged {
				if w.rep.Acknowledged[j].Size == a.Size {
					w.rep.Acknowledged[j].Note += fmt.Sprintf(" (found now: %s at receipt %d: %s)", kind, seq, fmt.Sprintf(format, args...))
				}
			}
			w.skipping = &a
			w.skipUntil = a.Size
			return
		}
	}
	w.rep.fail(kind, seq, format, args...)
}

// reseed restarts verification from the acknowledgement being skipped to.
func (w *walker) reseed() bool {
	a := *w.skipping
	w.skipping = nil
	rng, err := w.src.frontier(a.Size)
	if err != nil || !bytes.Equal(rootOf(rng), a.Root) {
		w.rep.fail(ProblemTree, a.Size, "the stored tree hashes at the acknowledgement (%d) do not match the signed acknowledgement", a.Size)
		return false
	}
	w.rng, w.prev, w.next = rng, a.Chain, a.Size+1
	w.acks = slices.DeleteFunc(w.acks, func(b Base) bool { return b.Size <= a.Size })
	if w.src.tree != nil {
		w.tree = w.src.tree(a.Size)
	}
	w.skipCheckpoints()
	return w.rep.Problem == nil
}

func (w *walker) receipt(keySeq uint64, raw []byte) bool {
	if w.rep.Problem != nil {
		return false
	}
	if w.skipping != nil {
		if keySeq <= w.skipUntil {
			return true
		}
		if !w.reseed() {
			return false
		}
	}
	if keySeq <= w.start {
		if w.full && w.retention != nil {
			return w.keptReceipt(keySeq, raw)
		}
		w.problem(ProblemCorrupt, keySeq, "receipt %d is present although the signed start of the log is after receipt %d", keySeq, w.start)
		return w.rep.Problem == nil
	}
	r, kind, msg := checkStored(keySeq, raw)
	switch {
	case kind != "":
		w.problem(kind, keySeq, "receipt %d %s", keySeq, msg)
	case keySeq < w.next:
		w.problem(ProblemReordered, keySeq, "receipt %d reordered: expected receipt %d at this point", keySeq, w.next)
	case keySeq > w.next:
		what := fmt.Sprintf("receipts %d..%d removed", w.next, keySeq-1)
		if w.next == keySeq-1 {
			what = fmt.Sprintf("receipt %d removed", w.next)
		}
		w.problem(ProblemRemoved, w.next, "%s: the next receipt present is %d", what, keySeq)
	case r.PrevHash != w.prev:
		w.problem(ProblemAltered, keySeq-1, "receipt %d altered: its hash was recomputed and no longer matches the prev_hash of receipt %d", keySeq-1, keySeq)
	default:
		return w.accept(keySeq, raw, r.Hash)
	}
	return w.rep.Problem == nil
}

// checkStored decodes the receipt stored at seq and checks that it holds
// that number, is in canonical form and matches its hash; a failure is the
// problem's kind and what befell the receipt.
func checkStored(seq uint64, raw []byte) (r Receipt, kind, msg string) {
	r, canonical, err := decodeStrict(raw)
	switch {
	case err != nil:
		return r, ProblemAltered, fmt.Sprintf("altered: not a valid receipt (%v)", err)
	case r.Seq != seq:
		return r, ProblemReordered, fmt.Sprintf("reordered: position %d holds receipt %d", seq, r.Seq)
	case !canonical:
		return r, ProblemAltered, "altered: stored bytes differ from its canonical form"
	case !digestMatches(r):
		return r, ProblemAltered, "altered: content does not match its hash"
	}
	return r, "", ""
}

func (w *walker) accept(seq uint64, raw []byte, hash string) bool {
	var visit compact.VisitFn
	if w.tree != nil {
		visit = w.tree.visit
	}
	if err := w.rng.Append(LeafHash(raw), visit); err != nil {
		w.rep.fail(ProblemCorrupt, seq, "%v", err)
		return false
	}
	if w.tree != nil && w.tree.problem != "" {
		msg, kind := w.tree.problem, ProblemTree
		if w.tree.leaf {
			kind = ProblemAltered
		}
		w.tree.problem, w.tree.leaf = "", false
		w.problem(kind, seq, "%s", msg)
		return w.rep.Problem == nil
	}
	if w.rep.Count == 0 {
		w.rep.FirstSeq = seq
	}
	w.rep.Count++
	w.rep.LastSeq = seq
	w.prev, w.next = hash, seq+1
	w.compareRoots()
	return w.rep.Problem == nil
}

// finish checks the end of the log against its head and checkpoints.
func (w *walker) finish() {
	rep := w.rep
	if rep.Problem != nil {
		return
	}
	if w.skipping != nil && !w.reseed() {
		return
	}
	last := w.next - 1
	rep.TreeSize = w.rng.End()
	rep.Root = base64.StdEncoding.EncodeToString(rootOf(w.rng))
	head := w.src.head
	switch {
	case head == nil && last > w.start:
		rep.fail(ProblemCorrupt, 0, "stored head missing while receipts exist")
	case head == nil:
	case head.Seq > last:
		rep.fail(ProblemTruncated, last+1, "log truncated: the stored head is receipt %d but the log ends at receipt %d (%d receipts missing from the tail)", head.Seq, last, head.Seq-last)
	case head.Seq < last:
		rep.fail(ProblemAltered, head.Seq+1, "receipts after the stored head (%d) were added outside the server: first is %d", head.Seq, head.Seq+1)
	case head.Hash != w.prev && !(last == 0 && head.Hash == ""):
		rep.fail(ProblemAltered, last, "receipt %d altered: its hash does not match the stored head", last)
	}
	if rep.Problem != nil {
		return
	}
	if w.ci < len(w.cps) {
		cp := w.cps[len(w.cps)-1]
		rep.fail(ProblemTruncated, last+1, "log truncated: a signed checkpoint covers %d receipts but the log ends at receipt %d (receipts %d..%d removed and the head moved back)", cp.Size, last, last+1, cp.Size)
		return
	}
	var beyond *Checkpoint
	for ; w.si < len(w.saved); w.si++ {
		if cp := w.saved[w.si]; restoreAccounts(w.restores, cp) {
			rep.Saved = append(rep.Saved, savedInfo(cp, SavedReplaced))
		} else {
			beyond = &w.saved[w.si]
		}
	}
	if beyond != nil {
		cp := *beyond
		rep.fail(ProblemRolledBack, last+1, "log rolled back: the saved checkpoint covers %d receipts but the log ends at receipt %d (receipts %d..%d are gone, with their signatures)", cp.Size, last, last+1, cp.Size)
		return
	}
	if w.tree != nil {
		if msg := w.tree.rest(); msg != "" {
			rep.fail(ProblemTree, last, "%s", msg)
			return
		}
	}
	if w.full && !w.keptComplete() {
		return
	}
	signedTo := w.start
	if w.matched != nil {
		rep.Newest = &CheckpointInfo{Size: w.matched.Size, Root: base64.StdEncoding.EncodeToString(w.matched.Root)}
		signedTo = max(signedTo, w.matched.Size)
	}
	for _, a := range rep.Acknowledged {
		signedTo = max(signedTo, a.Size)
	}
	if signedTo == 0 && last > 0 && len(w.src.bases) == 0 {
		rep.fail(ProblemUnsigned, 1, "no signed checkpoint covers receipts 1..%d although the log signs one at its first commit: its signatures were removed (a rewritten log?)", last)
		return
	}
	if last > signedTo {
		rep.Unsigned = last - signedTo
	}
}

// legacyWalk verifies a log without signed history: the chain only; such
// a log fails as unsigned unless it is empty.
func (w *walker) legacyWalk() {
	rep := w.rep
	rep.Legacy = true
	if w.src.legacy != nil {
		w.start, w.prev, w.next = w.src.legacy.Seq, w.src.legacy.Hash, w.src.legacy.Seq+1
	}
	w.rng = placeholderRange(w.start)
	if err := w.src.receipts(0, w.receipt); err != nil {
		rep.fail(ProblemCorrupt, 0, "%v", err)
	}
	w.finish()
	if rep.Problem != nil && rep.Problem.Kind != ProblemUnsigned {
		return
	}
	rep.OK, rep.Problem = true, nil
	switch {
	case len(w.opts.Saved) > 0:
		rep.fail(ProblemRolledBack, 1, "the log has no signed history, but a saved checkpoint says it had one: it was deleted or replaced")
	case w.next-1 > 0:
		rep.fail(ProblemUnsigned, w.start+1, "the log has no signed checkpoints (written by an accords-mcp before signed audit, or its signed history was removed); its chain verifies; start the server once to sign it")
	}
}

// verifyLegacy checks the chain of a log being adopted.
func verifyLegacy(b buckets) (Report, error) {
	src, err := dbSource(b.root.Tx())
	if err != nil {
		return Report{}, err
	}
	src.hasInfo = false
	return verify(src, VerifyOptions{}, 0), nil
}

// checkStretch is the start-up check: the newest stretch of receipts, the
// tree under the newest checkpoint and the signatures.
func (l *Log) checkStretch(b buckets) *Problem {
	src, err := dbSource(b.root.Tx())
	if err != nil {
		return &Problem{Kind: ProblemCorrupt, Message: err.Error()}
	}
	from := uint64(1)
	if n := uint64(l.opts.StartupStretch); l.head.Seq > n {
		from = l.head.Seq - n + 1
	}
	return verify(src, VerifyOptions{Verifier: l.key.Verifier()}, from).Problem
}

// stored is what retention and verification read of stored receipt bytes.
type stored struct {
	Hash      string `json:"hash"`
	Timestamp string `json:"timestamp"`
	Scope     string `json:"scope"`
}

func peek(raw []byte) stored {
	var r stored
	_ = json.Unmarshal(raw, &r)
	return r
}

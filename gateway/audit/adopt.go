package audit

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// legacyCheckpoint is the retention record of older logs.
type legacyCheckpoint struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "accords-mcp/audit/" + hex.EncodeToString(b[:])
}

// adopt turns a log without signed history into a signed one: a new log
// gets its origin; an older log (receipts, maybe an unsigned retention
// record) gets its tree built and a signed base and checkpoint, once its
// chain verified. A chain that does not verify is adopted too (so appends
// go on) but flagged by checkStretch until acknowledged.
func (l *Log) adopt(b buckets) error {
	info := logInfo{Origin: newOrigin(), Created: l.opts.Now().UTC().Format(time.RFC3339Nano)}
	l.origin = info.Origin
	if err := store.PutJSON(b.root, keyLog, info); err != nil {
		return err
	}
	var legacy legacyCheckpoint
	hasLegacy, err := store.GetJSON(b.root, keyLegacyCheckpoint, &legacy)
	if err != nil {
		return err
	}
	first, _ := b.receipts.Cursor().First()
	if l.head.Hash == "" && first == nil && !hasLegacy {
		l.head.Hash = Genesis
		l.rng = factory.NewEmptyRange(0)
		return nil
	}
	if l.head.Hash == "" {
		l.head = Head{Seq: legacy.Seq, Hash: legacy.Hash}
	}
	rep, err := verifyLegacy(b)
	if err != nil {
		return err
	}
	var note string
	if !rep.ChainOK() {
		note = "the chain written before signed audit did not verify: " + rep.Problem.Message
		if err := store.PutJSON(b.root, keyIntegrity, rep.Problem); err != nil {
			return err
		}
	}
	l.rng = placeholderRange(legacy.Seq)
	if err := putRange(b.tree, l.rng); err != nil {
		return err
	}
	b.tree.SetFillPercent(1)
	var perr error
	if err := appendReceipts(l.rng, b.receipts, l.head.Seq, storeNodes(b.tree, &perr)); err != nil || perr != nil {
		return cmp.Or(err, perr)
	}
	if l.rng.End() != l.head.Seq { // a gap: flagged by the legacy verification above
		l.rng = placeholderRange(l.head.Seq) // keeps appends numbered; the log is flagged
		return nil
	}
	if legacy.Seq > 0 || note != "" {
		base, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseAdopted, Size: legacy.Seq, Root: rootOf(placeholderRange(legacy.Seq)),
			Chain: chainAt(legacy), Time: l.opts.Now(), Text: "adopted a log written before signed audit; " + note})
		if err != nil {
			return err
		}
		if err := b.bases.Put(store.U64(legacy.Seq), base.Signed); err != nil {
			return err
		}
		l.base = base
	}
	if err := b.root.Delete(keyLegacyCheckpoint); err != nil {
		return err
	}
	if l.head.Seq > legacy.Seq {
		cp, err := signCheckpoint(l.key, l.origin, l.rng.End(), rootOf(l.rng))
		if err != nil {
			return err
		}
		l.lastCP = cp.Size
		return b.checkpoints.Put(store.U64(cp.Size), cp.Note)
	}
	return nil
}

func chainAt(c legacyCheckpoint) string {
	if c.Seq == 0 {
		return Genesis
	}
	return c.Hash
}

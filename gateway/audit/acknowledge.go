package audit

import (
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
)

// Acknowledge records that an operator accepts the log as it is: a signed
// base at the current size (verification starts again after it), then an
// acknowledgement receipt. The failure that was flagged is lifted.
func (l *Log) Acknowledge(operator, note string, p *Problem) (Ref, error) {
	if err := l.Flush(); err != nil {
		return Ref{}, err
	}
	what := "no verification failure"
	if p != nil {
		what = fmt.Sprintf("%s at receipt %d: %s", p.Kind, p.Seq, p.Message)
	}
	ref, err := l.append(l.operatorReceipt("ack_", TypeAcknowledgement, operator, OutcomeAcknowledged, note+" | acknowledged: "+what), true, nil)
	if err == nil {
		l.problem.Store(nil)
	}
	return ref, err
}

// operatorReceipt is the receipt of an operator's act through the CLI,
// its call id prefix, then random.
func (l *Log) operatorReceipt(prefix, typ, operator, outcome, note string) Receipt {
	return Receipt{CallID: prefix + hex.EncodeToString(randomBytes(8)), Timestamp: l.opts.Now().UTC().Format(time.RFC3339Nano),
		Caller: operator, Transport: "cli", Type: typ, Outcome: outcome, Note: oneLine(note)}
}

// writeAckBase signs the base of an acknowledgement at the current size:
// checkpoints beyond it (which the log no longer reaches) are dropped, and
// verification restarts from it.
func (l *Log) writeAckBase(b buckets, rng *compact.Range, head Head) error {
	p := l.problem.Load()
	text := "operator acknowledged the log as it stands"
	if p != nil {
		text = fmt.Sprintf("acknowledged %s at receipt %d: %s", p.Kind, p.Seq, p.Message)
	}
	base, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseAcknowledged, Size: rng.End(), Root: rootOf(rng),
		Chain: head.Hash, Time: l.opts.Now(), Text: text})
	if err != nil {
		return err
	}
	// Whatever lies beyond the acknowledged size belongs to no receipt the
	// log continues from: checkpoints that covered more, tree hashes and
	// receipts past the head (added or left behind outside the server).
	for _, cut := range []struct {
		bk   store.Bucket
		from uint64
	}{{b.checkpoints, rng.End() + 1}, {b.tree, leafKey(rng.End())}, {b.receipts, head.Seq + 1}} {
		if err := deleteKeys(cut.bk, cut.from, math.MaxUint64, nil); err != nil {
			return err
		}
	}
	if l.lastCP > rng.End() {
		l.lastCP = 0
	}
	return b.bases.Put(store.U64(base.Size), base.Signed)
}

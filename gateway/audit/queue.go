package audit

import (
	"encoding/hex"
	"strings"
)

// item is one entry of the writer's queue: a receipt, or a request to
// commit what is queued (barrier), apply retention (prune) or sign a
// checkpoint (sign); done, when set, is answered once it was handled.
type item struct {
	// rec and ref: a shared log's receipt, numbered at commit, and where
	// its reference is handed back.
	rec     Receipt
	ref     *Ref
	seq     uint64
	scope   string
	restore *RestoreDiff
	raw     []byte
	leaf    []byte
	hash    string
	ts      string
	ack     bool
	barrier bool
	prune   bool
	sign    bool
	done    chan error
}

func (it *item) isReceipt() bool { return it.raw != nil }

// Append numbers and chains r and queues it; it returns at once with the
// receipt's reference. It fails when the log is closed or the backlog of
// uncommittable receipts is full. On a shared log the number is given at
// commit, so Append returns at once with an empty Ref: the receipt is
// committed within Linger (with whatever else is queued) and is found by
// its call id.
func (l *Log) Append(r Receipt) (Ref, error) { return l.append(r, false, nil) }

// AppendSync is Append that waits until the receipt is committed. On a
// failed commit the receipt stays queued and is written by the next
// successful commit, under the same reference.
func (l *Log) AppendSync(r Receipt) (Ref, error) { return l.append(r, true, nil) }

// append queues r; restore, when set, makes its commit sign a restored
// record just before it (RecordRestore).
func (l *Log) append(r Receipt, wait bool, restore *RestoreDiff) (Ref, error) {
	r = sanitize(r)
	if r.Type == "" {
		r.Type = TypeToolCall
	}
	it := item{ts: r.Timestamp, scope: r.Scope, ack: r.Type == TypeAcknowledgement, restore: restore}
	if wait || it.ack || it.restore != nil {
		it.done = make(chan error, 1)
		l.verifyNow() // the caller waits for the writer
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Ref{}, ErrClosed
	}
	if l.backlog.Load() >= int64(l.opts.MaxBacklog) {
		l.mu.Unlock()
		return Ref{}, ErrBacklog
	}
	if l.opts.Shared {
		// Numbered by the commit, from the stored head (write).
		it.rec = r
		it.raw = []byte{} // a receipt, not a control item
		if it.done != nil {
			it.ref = &Ref{Origin: l.origin}
		}
		l.backlog.Add(1)
		l.queue <- it
		urgent := l.urgent(it)
		l.mu.Unlock()
		if urgent {
			l.wake()
		}
		if it.done == nil {
			// Nobody waits for its number (read calls): it is committed
			// with the next group, or once commits succeed again.
			return Ref{}, nil
		}
		err := <-it.done
		return *it.ref, err
	}
	r.Seq, r.PrevHash = l.nextSeq, l.tip
	raw, err := seal(&r)
	if err != nil {
		l.mu.Unlock()
		return Ref{}, err
	}
	it.seq, it.raw, it.hash, it.leaf = r.Seq, raw, r.Hash, LeafHash(raw)
	l.nextSeq++
	l.tip = r.Hash
	l.backlog.Add(1)
	l.queue <- it
	urgent := l.urgent(it)
	l.mu.Unlock()
	if urgent {
		l.wake()
	}
	ref := Ref{Seq: it.seq, LeafHash: hex.EncodeToString(it.leaf), Origin: l.origin}
	if it.done == nil {
		return ref, nil
	}
	return ref, <-it.done
}

// Flush waits until everything queued before it is committed.
func (l *Log) Flush() error { return l.send(item{barrier: true}) }

// Prune applies retention now (it also runs periodically).
func (l *Log) Prune() error { return l.send(item{prune: true}) }

// Checkpoint commits what is queued and signs a checkpoint of the tree if
// it grew since the last one.
func (l *Log) Checkpoint() error { return l.send(item{sign: true}) }

func (l *Log) send(it item) error {
	it.done = make(chan error, 1)
	l.verifyNow()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.queue <- it
	l.mu.Unlock()
	l.wake()
	return <-it.done
}

// urgent reports whether queuing it must wake a lingering writer: someone
// waits for its commit, or the queue is half full.
func (l *Log) urgent(it item) bool { return it.done != nil || len(l.queue) >= cap(l.queue)/2 }

// wake nudges the writer out of its linger.
func (l *Log) wake() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// sanitize makes every string valid UTF-8: JSON encoding would otherwise
// replace invalid bytes on the way out and the stored bytes would no longer
// be the canonical form of the decoded receipt. Empty rule lists are nil so
// they are omitted (an empty list would not survive a round trip).
func sanitize(r Receipt) Receipt {
	for _, f := range []*string{&r.CallID, &r.Timestamp, &r.Caller, &r.Transport, &r.Session, &r.Scope, &r.Tool,
		&r.CapabilityUsed, &r.ParamsHash, &r.ResultHash, &r.Outcome, &r.Note, &r.Type, &r.TaskRef, &r.ParentCallID} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	for _, list := range []*[]string{&r.RulesEvaluated, &r.RulesMatched} {
		if len(*list) == 0 {
			*list = nil
			continue
		}
		cp := make([]string, len(*list))
		for i, s := range *list {
			cp[i] = strings.ToValidUTF8(s, "\uFFFD")
		}
		*list = cp
	}
	return r
}

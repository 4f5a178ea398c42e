package audit

import (
	"encoding/hex"
	"strings"
)

// item is one entry of the writer's queue: a receipt, or a request to
// commit what is queued (barrier), apply retention (prune) or sign a
// checkpoint (sign); done, when set, is answered once it was handled.
type item struct {
	rec     Receipt // a shared log's receipt, numbered at commit (ref gets its reference)
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
// receipt's reference (empty on a shared log, which numbers at commit). It
// fails when the log is closed or the backlog is full.
func (l *Log) Append(r Receipt) (Ref, error) { return l.append(r, false, nil) }

// AppendSync is Append that waits until the receipt is committed. After a
// failed commit the receipt stays queued under the same reference.
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
	var ref Ref
	if l.opts.Shared {
		it.rec, it.raw = r, []byte{} // numbered by the commit (write)
		if it.done != nil {
			it.ref = &Ref{Origin: l.origin}
		}
	} else {
		r.Seq, r.PrevHash = l.nextSeq, l.tip
		raw, err := seal(&r)
		if err != nil {
			l.mu.Unlock()
			return Ref{}, err
		}
		it.seq, it.raw, it.hash, it.leaf = r.Seq, raw, r.Hash, LeafHash(raw)
		l.nextSeq, l.tip = l.nextSeq+1, r.Hash
		ref = Ref{Seq: it.seq, LeafHash: hex.EncodeToString(it.leaf), Origin: l.origin}
	}
	l.backlog.Add(1)
	l.queue <- it
	urgent := l.urgent(it)
	l.mu.Unlock()
	if urgent {
		l.wake()
	}
	if it.done == nil {
		return ref, nil
	}
	err := <-it.done
	if it.ref != nil {
		ref = *it.ref
	}
	return ref, err
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

// sanitize makes every string valid UTF-8 (so the stored bytes stay the
// canonical form of the decoded receipt) and empty rule lists nil (an
// empty list would not survive a round trip).
func sanitize(r Receipt) Receipt {
	for _, f := range []*string{&r.CallID, &r.Timestamp, &r.Caller, &r.Transport, &r.Session, &r.Scope, &r.Tool,
		&r.CapabilityUsed, &r.ParamsHash, &r.ResultHash, &r.Outcome, &r.Note, &r.Type, &r.TaskRef, &r.ParentCallID,
		&r.Client, &r.EventType, &r.Scroll, &r.BodyHash} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	for _, list := range []*[]string{&r.RulesEvaluated, &r.RulesMatched, &r.Tags} {
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

package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/tools"
)

// auditRef is the audit log as the gateway, the tools, /healthz and the
// metrics hold it: a restore through the daemon closes the log of the old
// file and opens one on the restored file, and every holder follows.
type auditRef struct{ p atomic.Pointer[audit.Log] }

func (r *auditRef) set(l *audit.Log)        { r.p.Store(l) }
func (r *auditRef) current() *audit.Log     { return r.p.Load() }
func (r *auditRef) Healthy() (bool, string) { return r.p.Load().Healthy() }
func (r *auditRef) Integrity() (*audit.Problem, error) {
	return r.p.Load().Integrity()
}
func (r *auditRef) Append(rec audit.Receipt) (audit.Ref, error) { return r.p.Load().Append(rec) }
func (r *auditRef) AppendSync(rec audit.Receipt) (audit.Ref, error) {
	return r.p.Load().AppendSync(rec)
}

// ListReceipts implements tools.AuditLister.
func (r *auditRef) ListReceipts(q tools.AuditQuery) ([]any, error) {
	return listReceipts(r.p.Load(), q)
}

// listReceipts is the audit log as the tools read it.
func listReceipts(l *audit.Log, q tools.AuditQuery) ([]any, error) {
	rs, err := l.List(audit.Filter{Scope: q.Scope, Tool: q.Tool, Outcome: q.Outcome, Since: q.Since, Limit: q.Limit})
	out := make([]any, len(rs))
	for i := range rs {
		out[i] = rs[i]
	}
	return out, err
}

// ProveReceipt implements tools.ReceiptProver.
func (r *auditRef) ProveReceipt(q tools.ReceiptQuery) (any, error) {
	return proveReceipt(r.p.Load(), q)
}

// proveReceipt commits what is queued (a caller proves the receipt of a
// call it just made), finds the receipt by seq or call id and proves it with
// the audit package's Prove; a receipt of another scope is not found.
func proveReceipt(l *audit.Log, q tools.ReceiptQuery) (any, error) {
	// A failed flush must not hide the receipts already written.
	_ = l.Flush()
	seq := q.Seq
	if seq == 0 {
		rec, err := audit.FindCall(l.DB(), q.CallID)
		if errors.Is(err, audit.ErrCallNotFound) {
			return nil, fmt.Errorf("%w: %w", tools.ErrReceiptNotFound, err)
		} else if err != nil {
			return nil, err
		}
		if rec.Scope != q.Scope {
			return nil, fmt.Errorf("%w: no receipt of this scope has call id %q", tools.ErrReceiptNotFound, q.CallID)
		}
		seq = rec.Seq
	}
	p, err := audit.Prove(l.DB(), seq)
	switch {
	case errors.Is(err, audit.ErrNoReceipt):
		return nil, fmt.Errorf("%w: %w", tools.ErrReceiptNotFound, err)
	case errors.Is(err, audit.ErrNotCovered):
		return nil, fmt.Errorf("%w: %w", tools.ErrReceiptNotCovered, err)
	case err != nil:
		return nil, err
	}
	var rec struct {
		Scope string `json:"scope"`
	}
	if err := json.Unmarshal([]byte(p.Receipt), &rec); err != nil {
		return nil, fmt.Errorf("receipt %d unreadable: %w", seq, err)
	}
	if rec.Scope != q.Scope {
		return nil, fmt.Errorf("%w: this scope has no receipt %d", tools.ErrReceiptNotFound, seq)
	}
	return p, nil
}

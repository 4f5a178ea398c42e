package app

import (
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

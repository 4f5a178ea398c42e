package tools

import (
	"context"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// AuditQuery selects one scope's receipts.
type AuditQuery struct {
	Scope   string
	Tool    string
	Outcome string
	Since   time.Time
	Limit   int
}

// AuditLister reads receipts, newest first, each as its JSON object, and
// proves them (the audit log, adapted by the composition root).
type AuditLister interface {
	ListReceipts(q AuditQuery) ([]any, error)
	ReceiptProver
}

// Audit listing bounds.
const (
	auditDefaultLimit = 50
	auditMaxLimit     = 500
)

// Toolset audit: the scope's own receipts.

type auditListIn struct {
	Tool    string `json:"tool,omitempty"`
	Outcome string `json:"outcome,omitempty" jsonschema:"ok or an error code"`
	Since   string `json:"since,omitempty" jsonschema:"RFC 3339 or a duration (24h)"`
	Limit   int    `json:"limit,omitempty"`
}

var auditReceiptsList = Define(Tool{
	Name:        "vaultclaw_audit_receipts_list",
	Description: "List this scope's audit receipts, newest first.",
	Toolset:     ToolsetAudit,
	Capability:  CapAuditView,
	Effect:      ReadsLocal,
	Needs:       NeedAudit,
	Output:      obj("receipts", objs()),
}, func(s *jsonschema.Schema) {
	Range(s, "limit", 1, auditMaxLimit)
	Default(s, "limit", auditDefaultLimit)
}, listAuditReceipts)

func listAuditReceipts(ctx context.Context, d *Deps, c *Call, in auditListIn) (Result, error) {
	f := AuditQuery{Scope: c.Scope(), Tool: strings.TrimSpace(in.Tool), Outcome: strings.TrimSpace(in.Outcome), Limit: in.Limit}
	if f.Limit <= 0 {
		f.Limit = auditDefaultLimit
	}
	if s := strings.TrimSpace(in.Since); s != "" {
		since, err := parseSince(s, time.Now())
		if err != nil {
			return Result{}, err
		}
		f.Since = since
	}
	rs, err := d.Audit.ListReceipts(f)
	if err != nil {
		return Result{}, apperr.Internal("list audit receipts", err)
	}
	return OK(map[string]any{"scope": c.Scope(), "count": len(rs), "receipts": rs})
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, apperr.Validation("since", "since must be an RFC 3339 timestamp (2026-01-02T15:04:05Z) or a positive duration such as 15m or 24h, got %q", s)
}

package tools

import (
	"context"
	"errors"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// ReceiptQuery names one receipt of a scope: by Seq, or by CallID when Seq
// is 0.
type ReceiptQuery struct {
	Scope  string
	Seq    uint64
	CallID string
}

// ReceiptProver proves a receipt of one scope: the stored receipt bytes,
// the RFC 6962 inclusion proof and the newest signed checkpoint, as
// `accords-mcp audit prove` prints them. A receipt of another scope is ErrReceiptNotFound, so
// a caller learns nothing of other tenants' calls.
type ReceiptProver interface {
	ProveReceipt(q ReceiptQuery) (any, error)
}

// ProveReceipt's failures a caller can act on (wrapped, with the reason).
var (
	ErrReceiptNotFound   = errors.New("receipt not found")
	ErrReceiptNotCovered = errors.New("receipt not yet covered by a signed checkpoint")
)

type receiptProveIn struct {
	Seq    uint64 `json:"seq,omitempty" jsonschema:"the receipt's sequence number"`
	CallID string `json:"call_id,omitempty" jsonschema:"or the call id (_meta accords/call_id of a result)"`
}

var receiptProve = Define(Tool{
	Name: "vaultclaw_receipt_prove",
	Description: "Prove one of this scope's audit receipts: its bytes, RFC 6962 inclusion proof and signed checkpoint " +
		"(as `accords-mcp audit prove`), to verify against the published audit key.",
	Toolset:    ToolsetAudit,
	Capability: CapAuditView,
	Effect:     ReadsLocal,
	Needs:      NeedAudit,
	Output: obj("seq", integer(), "leaf_index", integer(), "leaf_hash", str(), "receipt", str(), "tree_size", integer(),
		"root", str(), "inclusion_proof", strs(), "checkpoint", str(), "tlog_proof", str()),
}, func(s *jsonschema.Schema) {
	Range(s, "seq", 1, 1<<53)
}, proveReceipt)

func proveReceipt(_ context.Context, d *Deps, c *Call, in receiptProveIn) (Result, error) {
	callID := strings.TrimSpace(in.CallID)
	if (in.Seq == 0) == (callID == "") {
		return Result{}, apperr.Validation("seq", "name the receipt by exactly one of seq and call_id")
	}
	p, err := d.Audit.ProveReceipt(ReceiptQuery{Scope: c.Scope(), Seq: in.Seq, CallID: callID})
	switch {
	case errors.Is(err, ErrReceiptNotFound):
		return Result{}, apperr.New(apperr.CodeNotFound, "%s", err.Error())
	case errors.Is(err, ErrReceiptNotCovered):
		e := apperr.New(apperr.CodeNotFound, "%s", err.Error()).With("reason", "not_yet_signed")
		e.Retryable = true
		return Result{}, e
	case err != nil:
		return Result{}, apperr.Internal("prove a receipt", err)
	}
	return OK(p)
}

func integer() *jsonschema.Schema { return &jsonschema.Schema{Type: "integer"} }

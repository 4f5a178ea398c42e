package tools

import (
	"context"
	"encoding/json"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/platform/envelope"
)

// Outcome is how one tool call ended, as the audit receipt, the metrics and
// the logs need it. The adapter fills it when it renders the envelope, so
// no one has to read the result's JSON back.
type Outcome struct {
	// Recorded is false until the adapter (or a gateway refusal) rendered
	// the call's envelope.
	Recorded bool
	OK       bool
	// Code, Category and VaultCode are the envelope's error fields (empty
	// on success).
	Code      string
	Category  string
	VaultCode string
	// RequestID and VaultHTTPStatus correlate the call with Vaultclaw.
	RequestID       string
	VaultHTTPStatus int
	// Approval is set for an MCP_APPROVAL_REQUIRED handoff.
	Approval *approval.Approval
	// Envelope is the serialised envelope: the structuredContent the client
	// receives.
	Envelope json.RawMessage
	// TraceID is the call's trace when it was traced (set by the gateway
	// once the call returned), so its log line points at the trace.
	TraceID string
}

type outcomeKey struct{}

// TrackOutcome returns ctx carrying the slot the call's outcome is recorded
// in, and the slot. The outermost middleware that wants the outcome creates
// it; inner ones get the same slot back.
func TrackOutcome(ctx context.Context) (context.Context, *Outcome) {
	if o, ok := ctx.Value(outcomeKey{}).(*Outcome); ok {
		return ctx, o
	}
	o := &Outcome{}
	return context.WithValue(ctx, outcomeKey{}, o), o
}

// record stores the outcome of env in ctx's slot, if there is one.
func record(ctx context.Context, env *envelope.Envelope, appr *approval.Approval, raw json.RawMessage) {
	o, ok := ctx.Value(outcomeKey{}).(*Outcome)
	if !ok {
		return
	}
	*o = Outcome{Recorded: true, OK: env.OK, Approval: appr, Envelope: raw,
		RequestID: env.Meta.RequestID, VaultHTTPStatus: env.Meta.VaultHTTPStatus}
	if e := env.Error; e != nil {
		o.Code, o.Category, o.VaultCode = e.Code, e.Category, e.VaultCode
	}
}

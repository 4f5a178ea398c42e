package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds of an emitted event.
const (
	maxEventTags    = 32
	maxEventTagLen  = 64
	maxEventBodyLen = 64 << 10
)

// eventNameRule is the shape of an event's type and scroll.
var eventNameRule = ident.New("A-Za-z0-9", "A-Za-z0-9._:/-", 128)

type receiptEmitIn struct {
	Type   string     `json:"type" jsonschema:"the event's type, e.g. workflow.step"`
	Body   rawBody    `json:"body"`
	Tags   StringList `json:"tags,omitempty"`
	Scroll string     `json:"scroll,omitempty" jsonschema:"the stream it belongs to, e.g. automation"`
}

// ReceiptEmitName names vaultclaw_receipt_emit (the tool of external-event
// receipts).
const ReceiptEmitName = "vaultclaw_receipt_emit"

var receiptEmit = Define(Tool{
	Name:        ReceiptEmitName,
	Description: "Record another system's event (a workflow step) as a signed audit receipt.",
	Toolset:     ToolsetAudit,
	Capability:  CapReceiptsEmit,
	// Appending to the log replaces nothing, but it is a write: read-only
	// callers and servers never emit.
	Effect:  ReplacesLocal,
	Gateway: true,
	// Listed as an object, the usual body; any JSON value is accepted.
	Narrowed: map[string]*jsonschema.Schema{"body": {Type: "object"}},
	Output:   obj("seq", &jsonschema.Schema{Type: "integer"}, "call_id", str(), "leaf_hash", str(), "log", str()),
}, func(s *jsonschema.Schema) {
	body := anyValue()
	body.Description = "the event's JSON body"
	s.Properties["body"] = body
}, emitReceipt)

// rawBody keeps the body as the tool layer hands it over.
type rawBody struct{ raw json.RawMessage }

func (b *rawBody) UnmarshalJSON(raw []byte) error {
	b.raw = append(json.RawMessage(nil), raw...)
	return nil
}

// emitReceipt checks the event and has the gateway append its receipt.
func emitReceipt(ctx context.Context, _ *Deps, _ *Call, in receiptEmitIn) (Result, error) {
	g, err := gatewayControl(ctx)
	if err != nil {
		return Result{}, err
	}
	ev := Event{Type: strings.TrimSpace(in.Type), Scroll: strings.TrimSpace(in.Scroll)}
	if !eventNameRule.Valid(ev.Type) {
		return Result{}, apperr.Validation("type", "type must be 1 to 128 characters of letters, digits and . _ : / - starting with a letter or digit")
	}
	if ev.Scroll != "" && !eventNameRule.Valid(ev.Scroll) {
		return Result{}, apperr.Validation("scroll", "scroll must be 1 to 128 characters of letters, digits and . _ : / - starting with a letter or digit")
	}
	if len(in.Body.raw) == 0 {
		return Result{}, apperr.Validation("body", "body is required (any JSON value)")
	}
	if len(in.Tags) > maxEventTags {
		return Result{}, apperr.Validation("tags", "at most %d tags", maxEventTags)
	}
	for _, t := range in.Tags {
		if len(t) > maxEventTagLen {
			return Result{}, apperr.Validation("tags", "a tag is at most %d characters", maxEventTagLen)
		}
	}
	ev.Tags = []string(in.Tags)
	ev.Body = in.Body.raw
	if len(ev.Body) > maxEventBodyLen {
		return Result{}, apperr.Validation("body", "body is %d bytes, over %d", len(ev.Body), maxEventBodyLen)
	}
	em, err := g.EmitReceipt(ev)
	if err != nil {
		return Result{}, err
	}
	return OK(em)
}

package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Paths of the operations on the control socket.
const (
	PathSearch        = "/v1/ops/search"
	PathList          = "/v1/ops/catalog/list"
	PathImport        = "/v1/ops/catalog/import"
	PathExport        = "/v1/ops/catalog/export"
	PathDelete        = "/v1/ops/catalog/delete"
	PathRender        = "/v1/ops/render"
	PathReindex       = "/v1/ops/reindex"
	PathAuditVerify   = "/v1/ops/audit/verify"
	PathAuditTail     = "/v1/ops/audit/tail"
	PathAuditCP       = "/v1/ops/audit/checkpoint"
	PathAuditProve    = "/v1/ops/audit/prove"
	PathAuditFind     = "/v1/ops/audit/find"
	PathAuditExport   = "/v1/ops/audit/export"
	PathAuditAck      = "/v1/ops/audit/acknowledge"
	PathSessionStatus = "/v1/ops/session/status"
	PathSessionConfig = "/v1/ops/session/configure"
	PathSessionClear  = "/v1/ops/session/clear"
	PathDoctor        = "/v1/doctor"
	PathBackup        = "/v1/backup"
	PathRestore       = "/v1/restore"
)

// Headers of the backup response.
const (
	HeaderSchema = "X-Accords-Schema-Version"
	HeaderSize   = "X-Accords-Snapshot-Size"
)

// statusOpError is the HTTP status of a response carrying an operation's
// error (as opposed to a failure of the socket or the route).
const statusOpError = http.StatusUnprocessableEntity

// wireError carries an error across the socket so it prints as it would
// offline: an *apperr.Error keeps every field, any other error its message.
type wireError struct {
	Code      string         `json:"code,omitempty"`
	Category  string         `json:"category,omitempty"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable,omitempty"`
	VaultCode string         `json:"vault_code,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
	// Text is err.Error() when it differs from what the fields say (an
	// *apperr.Error wrapped with context, or any other error).
	Text  string `json:"text,omitempty"`
	Plain bool   `json:"plain,omitempty"`
}

func toWire(err error) *wireError {
	ae, ok := errors.AsType[*apperr.Error](err)
	if !ok {
		return &wireError{Text: err.Error(), Plain: true}
	}
	w := &wireError{Code: ae.Code, Category: ae.Category, Message: ae.Message, Retryable: ae.Retryable, VaultCode: ae.VaultCode, Details: ae.Details}
	if t := err.Error(); t != ae.Error() {
		w.Text = t
	}
	return w
}

func (w *wireError) err() error {
	if w.Plain {
		return errors.New(w.Text)
	}
	ae := &apperr.Error{Code: w.Code, Category: w.Category, Message: w.Message, Retryable: w.Retryable, VaultCode: w.VaultCode, Details: w.Details}
	if w.Text == "" {
		return ae
	}
	return &wrapped{text: w.Text, ae: ae}
}

// wrapped is an *apperr.Error with context around it: it prints as the
// original and unwraps to it.
type wrapped struct {
	text string
	ae   *apperr.Error
}

func (w *wrapped) Error() string { return w.text }
func (w *wrapped) Unwrap() error { return w.ae }

// errorBody is the body of a statusOpError response, and one line of a
// streamed response.
type errorBody struct {
	Error *wireError `json:"error"`
}

// streamLine is one line of the reindex stream: progress, then a result or
// an error.
type streamLine struct {
	Progress *progressLine  `json:"progress,omitempty"`
	Result   *ReindexResult `json:"result,omitempty"`
	Error    *wireError     `json:"error,omitempty"`
}

type progressLine struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

type refRequest struct {
	CookbookID string `json:"cookbook_id"`
	Version    string `json:"version,omitempty"`
}

type importRequest struct {
	Raw    []byte `json:"raw"`
	Policy string `json:"policy"`
}

type tailRequest struct {
	N int `json:"n"`
}

type findRequest struct {
	CallID string `json:"call_id"`
}

type proveRequest struct {
	Seq uint64 `json:"seq"`
}

type ackRequest struct {
	Operator string `json:"operator"`
	Note     string `json:"note"`
}

type ackResult struct {
	Message string `json:"message"`
}

type checkpointResult struct {
	Note []byte `json:"note"`
}

// trailerReceipts is the trailer of an export stream: how many receipts
// it held.
const trailerReceipts = "X-Accords-Receipts"

type doctorRequest struct {
	Scope string          `json:"scope"`
	Env   json.RawMessage `json:"env,omitempty"`
}

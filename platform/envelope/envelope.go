// Package envelope defines the {ok,data,error,meta} object every tool returns.
// It is the only place where an *apperr.Error becomes client-facing JSON.
package envelope

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Envelope is every tool's result, the same JSON as structuredContent and
// text (docs/contract.md); all four keys are always present.
type Envelope struct {
	OK    bool       `json:"ok"`
	Data  any        `json:"data"`
	Error *ErrorBody `json:"error"`
	Meta  Meta       `json:"meta"`
}

// ErrorBody is the serialised form of an apperr.Error.
type ErrorBody struct {
	Code      string         `json:"code"`
	Category  string         `json:"category"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	VaultCode string         `json:"vault_code"`
	Details   map[string]any `json:"details"`
}

// Meta carries request correlation. Extra keys (for example the resolver
// version) are merged into the same JSON object.
type Meta struct {
	RequestID       string
	VaultHTTPStatus int
	VaultCode       string
	// Warnings are problems that did not stop the call (D21); the key is absent
	// when there are none.
	Warnings []string
	Extra    map[string]any
}

// MarshalJSON flattens Extra next to the fixed keys; fixed keys win.
func (m Meta) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, 4+len(m.Extra))
	maps.Copy(out, m.Extra)
	out["request_id"] = m.RequestID
	out["vault_http_status"] = m.VaultHTTPStatus
	out["vault_code"] = m.VaultCode
	if len(m.Warnings) > 0 {
		out["warnings"] = m.Warnings
	} else {
		delete(out, "warnings")
	}
	return json.Marshal(out)
}

// UnmarshalJSON is the inverse of MarshalJSON (used by tests and clients).
func (m *Meta) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Meta{}
	for k, v := range raw {
		switch k {
		case "request_id":
			m.RequestID, _ = v.(string)
		case "vault_http_status":
			if f, ok := v.(float64); ok {
				m.VaultHTTPStatus = int(f)
			}
		case "vault_code":
			m.VaultCode, _ = v.(string)
		case "warnings":
			list, _ := v.([]any)
			for _, w := range list {
				if s, ok := w.(string); ok {
					m.Warnings = append(m.Warnings, s)
				}
			}
		default:
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[k] = v
		}
	}
	return nil
}

// Success wraps data. Success meta never carries a vault code.
func Success(data any, meta Meta) Envelope {
	meta.VaultCode = ""
	return Envelope{OK: true, Data: data, Meta: meta}
}

// Failure maps any error to an envelope. Meta is derived from the error's
// details, as the predecessor did, so clients can correlate with Vault logs.
func Failure(err error) Envelope {
	ae := apperr.As(err)
	details := ae.Details
	if details == nil {
		details = map[string]any{}
	}
	meta := Meta{VaultCode: ae.VaultCode, Warnings: slices.Clone(ae.Warnings)}
	if s, ok := details["request_id"].(string); ok {
		meta.RequestID = s
	}
	switch v := details["vault_http_status"].(type) {
	case int:
		meta.VaultHTTPStatus = v
	case float64:
		meta.VaultHTTPStatus = int(v)
	}
	return Envelope{
		OK:   false,
		Data: nil,
		Error: &ErrorBody{
			Code:      ae.Code,
			Category:  ae.Category,
			Message:   ae.Message,
			Retryable: ae.Retryable,
			VaultCode: ae.VaultCode,
			Details:   details,
		},
		Meta: meta,
	}
}

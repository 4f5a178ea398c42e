package vault

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// CodeNetworkError is the synthetic Vault code of a transport failure.
const CodeNetworkError = "NETWORK_ERROR"

// CodeHTTPError is used when an error response names no code.
const CodeHTTPError = "HTTP_ERROR"

// CodeMalformedResponse is the vault_code of a success status whose body is
// not a JSON object.
const CodeMalformedResponse = "MALFORMED_RESPONSE"

// APIError is a Vault failure before normalization: an HTTP error response
// (Status >= 400) or a transport failure (Status 0, Code NETWORK_ERROR).
type APIError struct {
	Status    int
	Code      string // as sent (defaulted to HTTP_ERROR when blank)
	Message   string // as sent (defaulted to the reason phrase when blank)
	Details   map[string]any
	RequestID string
	Cause     error
}

// vaultCodeMap maps Vault error codes to MCP codes (the table is in
// docs/contract.md). Keys are upper-cased vault codes.
var vaultCodeMap = map[string]string{}

func init() {
	add := func(mcp string, codes ...string) {
		for _, c := range codes {
			vaultCodeMap[c] = mcp
		}
	}
	add(apperr.CodeApprovalRequired, "CONNECTOR_APPROVAL_DECISION_REQUIRED", "PLAN_APPROVAL_REQUIRED", "CONNECTOR_APPROVAL_GRANT_REQUIRED")
	add(apperr.CodeApprovalDenied, "PLAN_APPROVAL_DENIED", "CONNECTOR_APPROVAL_RULE_DENIED")
	add(apperr.CodeUnboundedProfileInvalid, "UNBOUNDED_PROFILE_SLOT_UNRESOLVED", "UNBOUNDED_PROFILE_SLOT_VIOLATION", "UNBOUNDED_PROFILE_NOT_FOUND", "UNBOUNDED_PROFILE_REQUIRED_FIELDS_MISSING")
	add(apperr.CodeAuthUnauthenticated, "UNAUTHENTICATED", "UNAUTHORIZED")
	add(apperr.CodeAuthForbidden, "FORBIDDEN", "INSUFFICIENT_SCOPE")
	add(apperr.CodeValidation, "INVALID_ARGUMENT", "PLAN_INVALID", "PLAN_STEP_INVALID", "PLAN_BINDING_INVALID", "PLAN_BINDING_SOURCE_MISSING", "PLAN_TRANSITION_AMBIGUOUS", "PLAN_TRANSITION_NO_MATCH")
	add(apperr.CodePolicyError, "PLAN_POLICY_DRIFT", "ERR_GENERIC_HTTP_RESPONSE_MODE_NOT_ALLOWED", "ERR_GENERIC_HTTP_CONTENT_TYPE_NOT_ALLOWED", "ERR_GENERIC_HTTP_SECRET_ATTACHED_BODY_NOT_ALLOWED", "ERR_GENERIC_HTTP_EXTRACT_SPEC_INVALID", "ERR_GENERIC_HTTP_EXTRACT_PARSE_FAILED", "ERR_GENERIC_HTTP_EXTRACT_REQUIRED_FIELD_MISSING")
	add(apperr.CodeSecretError, "SECRET_SLOT_NOT_DEFINED", "SECRET_SLOT_UNRESOLVED", "SECRET_SLOT_CONFLICT", "SECRET_SLOT_BINDING_INVALID", "SECRET_SLOT_BINDING_NOT_FOUND", "SECRET_INTENT_INVALID", "SECRET_INTENT_NOT_FOUND", "SECRET_INTENT_TYPE_MISMATCH")
	add(apperr.CodePlanRunNotFound, "PLAN_RUN_NOT_FOUND")
	add(apperr.CodePlanRunInterrupted, "PLAN_RUN_INTERRUPTED")
}

// MappedVaultCodes lists every vault code with an explicit mapping (tests
// parametrise over it).
func MappedVaultCodes() map[string]string {
	out := make(map[string]string, len(vaultCodeMap))
	maps.Copy(out, vaultCodeMap)
	return out
}

// MapError is the one place a Vault failure becomes an *apperr.Error (code
// table and envelope in docs/contract.md; transport failures follow D2).
// Details carry request_id, vault_http_status and vault_error so
// envelope.Failure derives meta.
func MapError(e APIError) *apperr.Error {
	code := strings.TrimSpace(e.Code)
	retryable := e.Status >= 500 || e.Status == http.StatusTooManyRequests
	var mcpCode string
	switch e.Status {
	case 0:
		// D2: a transport failure is a network error, not internal.
		if code == "" {
			code = CodeNetworkError
		}
		mcpCode, retryable = apperr.CodeNetwork, true
	default:
		if code == "" {
			code = CodeHTTPError
		}
		if m, ok := vaultCodeMap[strings.ToUpper(code)]; ok {
			mcpCode = m
		} else if isNotFound(e.Status, code) {
			mcpCode = apperr.CodeNotFound
		} else if e.Status >= 500 {
			mcpCode, retryable = apperr.CodeNetwork, true
		} else {
			mcpCode = apperr.CodeInternal
		}
	}
	msg := e.Message
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(e.Status)
	}
	if strings.TrimSpace(msg) == "" {
		msg = fmt.Sprintf("request failed with status %d", e.Status)
	}
	rawCode := e.Code
	if strings.TrimSpace(rawCode) == "" {
		rawCode = code
	}
	var details any
	if e.Details != nil {
		details = e.Details
	}
	out := &apperr.Error{
		Code:      mcpCode,
		Category:  apperr.CategoryOf(mcpCode),
		Message:   msg,
		Retryable: retryable,
		VaultCode: code,
		Details: map[string]any{
			"request_id":        e.RequestID,
			"vault_http_status": e.Status,
			"vault_error":       map[string]any{"code": rawCode, "message": msg, "details": details},
		},
		Cause: e.Cause,
	}
	return out
}

// isNotFound is D16: a 404 whose code is NOT_FOUND or ends in _NOT_FOUND and
// has no mapping of its own is the caller's mistake (a wrong id), not an
// internal failure. Other statuses keep the table's answer.
func isNotFound(status int, code string) bool {
	c := strings.ToUpper(code)
	return status == http.StatusNotFound && (c == "NOT_FOUND" || strings.HasSuffix(c, "_NOT_FOUND"))
}

// parseErrorBody reads {"error":{code,message,details}} from an error
// response; anything else yields blanks (defaults are applied by MapError).
func parseErrorBody(raw []byte) (code, message string, details map[string]any) {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || len(body.Error) == 0 {
		return "", "", nil
	}
	var e struct {
		Code    any             `json:"code"`
		Message any             `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	if json.Unmarshal(body.Error, &e) != nil {
		return "", "", nil
	}
	code, _ = e.Code.(string)
	message, _ = e.Message.(string)
	var d map[string]any
	if len(e.Details) > 0 && json.Unmarshal(e.Details, &d) == nil {
		details = d
	}
	return code, message, details
}

// ErrorVaultCode returns the trimmed vault code an error carries ("" if none).
func ErrorVaultCode(err error) string {
	if err == nil {
		return ""
	}
	return apperr.As(err).VaultCode
}

// ErrorStatus returns the Vault HTTP status an error carries (0 if none).
func ErrorStatus(err error) int {
	if err == nil {
		return 0
	}
	switch v := apperr.As(err).Details["vault_http_status"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return 0
}

// ErrorVaultDetails returns details.vault_error.details of a Vault error.
func ErrorVaultDetails(err error) map[string]any {
	if err == nil {
		return nil
	}
	ve, _ := apperr.As(err).Details["vault_error"].(map[string]any)
	d, _ := ve["details"].(map[string]any)
	return d
}

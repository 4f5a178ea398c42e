// Package apperr is the error value: code, category and message, mapping one
// to one onto the envelope's "error" object.
package apperr

import (
	"errors"
	"fmt"
)

// Categories, exactly as clients expect them.
const (
	CatAuth       = "auth"
	CatApproval   = "approval"
	CatValidation = "validation"
	CatPolicy     = "policy"
	CatSecrets    = "secrets"
	CatPlans      = "plans"
	CatNetwork    = "network"
	CatInternal   = "internal"
)

// Error codes the server emits. Vault-derived codes are produced by the vault
// package's normaliser; the rest by the packages named in the comments.
const (
	CodeValidation = "MCP_VALIDATION_ERROR"
	CodeInternal   = "MCP_INTERNAL"
	// CodeStoreUnavailable: the shared store is out of reach or the disk is
	// full; nothing was written, and the call may be retried.
	CodeStoreUnavailable     = "MCP_STORE_UNAVAILABLE"
	CodeNetwork              = "MCP_NETWORK_ERROR"
	CodeSessionNotConfigured = "MCP_SESSION_NOT_CONFIGURED"
	CodeTenantHeaderRequired = "MCP_TENANT_HEADER_REQUIRED"
	CodePermissionDenied     = "MCP_PERMISSION_DENIED"
	CodeRateLimited          = "MCP_RATE_LIMITED"
	// CodePolicyViolation: a pre-execution rule of the policy file denied
	// the call (details.violated_rules).
	CodePolicyViolation = "MCP_POLICY_VIOLATION"

	CodeApprovalRequired         = "MCP_APPROVAL_REQUIRED"
	CodeApprovalDenied           = "MCP_APPROVAL_DENIED"
	CodeApprovalPendingNotFound  = "MCP_APPROVAL_PENDING_NOT_FOUND"
	CodeWaitTimeout              = "MCP_WAIT_TIMEOUT"
	CodeUnboundedProfileInvalid  = "MCP_UNBOUNDED_PROFILE_INVALID"
	CodeUnboundedProfileRequired = "MCP_UNBOUNDED_PROFILE_REQUIRED"
	CodePlanPrecheckUnresolved   = "MCP_PLAN_PROFILE_PRECHECK_UNRESOLVED"
	CodeModuleHashRequired       = "MCP_MODULE_HASH_REQUIRED"
	CodeAuthUnauthenticated      = "MCP_AUTH_UNAUTHENTICATED"
	CodeAuthForbidden            = "MCP_AUTH_FORBIDDEN"
	CodePolicyError              = "MCP_POLICY_ERROR"
	CodeSecretError              = "MCP_SECRET_ERROR"
	CodePlanRunNotFound          = "MCP_PLAN_RUN_NOT_FOUND"
	// CodeNotFound is a Vault 404 naming a missing resource (D16): the
	// caller passed an id Vault does not know.
	CodeNotFound           = "MCP_NOT_FOUND"
	CodePlanRunInterrupted = "MCP_PLAN_RUN_INTERRUPTED"

	CodeCatalogSchemaInvalid     = "MCP_CATALOG_SCHEMA_INVALID"
	CodeCatalogNotFound          = "MCP_CATALOG_NOT_FOUND"
	CodeCatalogConflict          = "MCP_CATALOG_CONFLICT"
	CodeCatalogSourceNotFound    = "MCP_CATALOG_SOURCE_NOT_FOUND"
	CodeRemoteChecksumMismatch   = "MCP_CATALOG_REMOTE_CHECKSUM_MISMATCH"
	CodeRemoteFetchFailed        = "MCP_CATALOG_REMOTE_FETCH_FAILED"
	CodeTemplateNotFound         = "MCP_TEMPLATE_NOT_FOUND"
	CodeTemplateRenderUnresolved = "MCP_TEMPLATE_RENDER_UNRESOLVED"
	CodeTemplateInputInvalid     = "MCP_TEMPLATE_INPUT_INVALID"

	CodeRecipientRequired         = "MCP_RECIPIENT_REQUIRED"
	CodeDocumentUploadRequired    = "MCP_DOCUMENT_UPLOAD_REQUIRED"
	CodeDocumentResolutionFailed  = "MCP_DOCUMENT_RESOLUTION_FAILED"
	CodeGmailDraftSendFailed      = "MCP_GMAIL_DRAFT_SEND_FAILED"
	CodePassportExtractionFailed  = "MCP_PASSPORT_EXTRACTION_FAILED"
	CodePassportProfileReadFailed = "MCP_PASSPORT_PROFILE_READ_FAILED"
	CodeManualFieldsRequired      = "MCP_MANUAL_FIELDS_REQUIRED"
)

// categoryByCode is the default category of MCP-side codes (docs/contract.md);
// anything not listed is "validation".
var categoryByCode = map[string]string{
	CodeInternal:                 CatInternal,
	CodeStoreUnavailable:         CatInternal,
	CodeNetwork:                  CatNetwork,
	CodeSessionNotConfigured:     CatAuth,
	CodeAuthUnauthenticated:      CatAuth,
	CodeAuthForbidden:            CatAuth,
	CodePermissionDenied:         CatPolicy,
	CodeRateLimited:              CatPolicy,
	CodePolicyViolation:          CatPolicy,
	CodePolicyError:              CatPolicy,
	CodeModuleHashRequired:       CatPolicy,
	CodeApprovalRequired:         CatApproval,
	CodeApprovalDenied:           CatApproval,
	CodeApprovalPendingNotFound:  CatApproval,
	CodeWaitTimeout:              CatApproval,
	CodeUnboundedProfileInvalid:  CatSecrets,
	CodeUnboundedProfileRequired: CatSecrets,
	CodeSecretError:              CatSecrets,
	CodePlanPrecheckUnresolved:   CatPlans,
	CodePlanRunNotFound:          CatPlans,
	CodePlanRunInterrupted:       CatPlans,
	CodeRemoteFetchFailed:        CatNetwork,
}

// CategoryOf returns the default category for an MCP error code.
func CategoryOf(code string) string {
	if c, ok := categoryByCode[code]; ok {
		return c
	}
	return CatValidation
}

// Error is a structured, client-facing failure. Message and Details must never
// contain a token or a secret value.
type Error struct {
	Code      string
	Category  string
	Message   string
	Retryable bool
	VaultCode string
	Details   map[string]any
	// Warnings go into the envelope's meta.warnings, not details.
	Warnings []string
	// Cause is kept for logs and errors.Is; it is never serialised.
	Cause error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Cause }

// New builds an error with the default category of code.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Category: CategoryOf(code), Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// With adds a detail and returns e for chaining.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// WithCause records the underlying error (not serialised).
func (e *Error) WithCause(err error) *Error {
	e.Cause = err
	return e
}

// Validation reports bad input; field names the offending argument (a dotted
// or JSON-pointer path) so an agent can correct itself.
func Validation(field, format string, args ...any) *Error {
	e := New(CodeValidation, format, args...)
	if field != "" {
		e.Details["field"] = field
	}
	return e
}

// unavailable is implemented by the store's error for a shared store
// out of reach (it cannot be imported here).
type unavailable interface {
	error
	StoreUnavailable() bool
}

func isUnavailable(err error) bool {
	u, ok := errors.AsType[unavailable](err)
	return ok && u.StoreUnavailable()
}

// StoreUnavailable reports that the shared store could not be reached:
// retryable, and nothing was written.
func StoreUnavailable(operation string, cause error) *Error {
	e := New(CodeStoreUnavailable, "the state store is unavailable during %s; nothing was changed, try again", operation)
	e.Retryable = true
	e.Details["operation"] = operation
	e.Cause = cause
	return e
}

// ReasonNoSpace is details.reason of a write refused because the disk
// holding the state is full or the user is over quota.
const ReasonNoSpace = "no_space"

// NoSpace is the retryable MCP_STORE_UNAVAILABLE with details.reason
// no_space.
func NoSpace(operation string, cause error) *Error {
	e := New(CodeStoreUnavailable, "no space left on the disk holding the state during %s; nothing was changed, free space and try again", operation)
	e.Retryable = true
	e.Details["operation"] = operation
	e.Details["reason"] = ReasonNoSpace
	e.Cause = cause
	return e
}

// Internal reports a failure that is not the caller's fault (a store out
// of reach, and a full disk, are MCP_STORE_UNAVAILABLE instead).
func Internal(operation string, cause error) *Error {
	if isUnavailable(cause) {
		return StoreUnavailable(operation, cause)
	}
	if noSpace(cause) {
		return NoSpace(operation, cause)
	}
	e := New(CodeInternal, "internal error during %s", operation)
	e.Details["operation"] = operation
	if cause != nil {
		e.Details["cause"] = cause.Error()
	}
	e.Cause = cause
	return e
}

// As extracts an *Error from err; any other error becomes MCP_INTERNAL.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	if ae, ok := errors.AsType[*Error](err); ok {
		if ae.Details == nil {
			ae.Details = map[string]any{}
		}
		if ae.Category == "" {
			ae.Category = CategoryOf(ae.Code)
		}
		return ae
	}
	return Internal("request", err)
}

// Is reports whether err carries the given code.
func Is(err error, code string) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Code == code
}

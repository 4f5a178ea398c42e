package tools

import (
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Every error message names the next step where one exists: which tool to
// call, which argument to fix. The steps live here, in the one place errors
// become envelopes, because they name MCP tools: the domain packages raising
// the errors serve the command line too, where a tool name means nothing.
// The step is appended to the message ("<message>; <step>"), so a message
// keeps the words it always began with.

// nextSteps are the steps by error code.
var nextSteps = map[string]string{
	apperr.CodeSessionNotConfigured:     "call vaultclaw_session_configure with the agent token, or set VC_AGENT_TOKEN",
	apperr.CodeAuthUnauthenticated:      "Vaultclaw refused the session's token: call vaultclaw_session_configure with a valid one",
	apperr.CodeAuthForbidden:            "the agent token lacks a scope this needs; ask the vault's owner to grant it",
	apperr.CodeApprovalRequired:         "show the user the attestation link, then call vaultclaw_approval_wait with details.approval.next_action.arguments; do not retry the call",
	apperr.CodeApprovalPendingNotFound:  "vaultclaw_approvals_pending_list lists the approvals",
	apperr.CodeWaitTimeout:              "call vaultclaw_approval_wait again with the same handle",
	apperr.CodePlanRunNotFound:          "check run_id; vaultclaw_approval_handles_list lists this scope's runs",
	apperr.CodeUnboundedProfileRequired: "vaultclaw_unbounded_profile_upsert creates a profile covering details.requirements",
	apperr.CodePlanPrecheckUnresolved:   "bind the step's secret attachments to literal values, or set profile_id on the step (vaultclaw_unbounded_profile_resolve finds one)",
	apperr.CodeCatalogNotFound:          "vaultclaw_recipes_search and vaultclaw_cookbooks_list show what is stored",
	apperr.CodeCatalogConflict:          "pass conflict_policy OVERWRITE to replace it or SKIP_IF_EXISTS to keep it, or raise the version",
	apperr.CodeCatalogSourceNotFound:    "vaultclaw_catalog_sources_list lists the sources; vaultclaw_catalog_source_upsert adds one",
	apperr.CodeTemplateNotFound:         "vaultclaw_recipes_search with entry_type template.verb.v1 or template.plan.v1 finds templates",
	apperr.CodeTemplateRenderUnresolved: "pass the inputs details.missing_inputs names and render again",
	apperr.CodeRecipientRequired:        "ask the user for one e-mail address and pass it as recipient_email",
	apperr.CodeDocumentUploadRequired:   "ask the user to upload the passport, then call again with details.action.resume_arguments",
}

// notFoundSteps are the steps of MCP_NOT_FOUND by Vault code; others get
// notFoundStep.
var notFoundSteps = map[string]string{
	"CONNECTOR_NOT_FOUND": "check connector_id; vaultclaw_connectors_list lists the connectors",
	"JOB_NOT_FOUND":       "check job_id; vaultclaw_approval_handles_list lists this scope's jobs and runs",
	"DOCUMENT_NOT_FOUND":  "check the document id; vaultclaw_document_types_latest finds the latest of a type",
}

const notFoundStep = "check the ids in the arguments; Vault does not know one of them"

// withNextStep returns e with its next step appended to the message (a
// copy: errors may be shared). Errors with nothing to add come back as
// they are.
func withNextStep(e *apperr.Error) *apperr.Error {
	step := nextStepOf(e)
	if step == "" || strings.Contains(e.Message, step) {
		return e
	}
	out := *e
	out.Message = strings.TrimRight(e.Message, ". ") + "; " + step
	return &out
}

func nextStepOf(e *apperr.Error) string {
	switch e.Code {
	case apperr.CodeNotFound:
		if s, ok := notFoundSteps[strings.ToUpper(e.VaultCode)]; ok {
			return s
		}
		return notFoundStep
	case apperr.CodeSessionNotConfigured:
		// A session that cannot be decrypted says what to do itself.
		if e.Details["reason"] != nil {
			return ""
		}
	case apperr.CodeNetwork:
		if e.Details["outcome_unknown"] == true {
			return "retry with the same idempotency_key (details.idempotency_key) and the action runs at most once"
		}
		return ""
	case apperr.CodeValidation:
		if e.VaultCode != "" {
			return "fix the request fields Vault names in details.vault_error.details and validate again"
		}
	}
	return nextSteps[e.Code]
}

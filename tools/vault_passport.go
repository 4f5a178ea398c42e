package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset vault, continued: the passport e-mail workflow.

type passportWorkflowIn struct {
	RequestText        string         `json:"request_text,omitempty" jsonschema:"the natural-language request; recipient and subject are parsed from it when not given"`
	Request            string         `json:"request,omitempty" jsonschema:"alias of request_text"`
	Text               string         `json:"text,omitempty" jsonschema:"alias of request_text"`
	RecipientEmail     string         `json:"recipient_email,omitempty" jsonschema:"the one recipient e-mail address"`
	Subject            string         `json:"subject,omitempty" jsonschema:"e-mail subject; default Passport Copy and Details"`
	BodyStyle          string         `json:"body_style,omitempty" jsonschema:"formal, casual, concise or detailed (case-insensitive); detected from the text when absent"`
	PassportDocumentID string         `json:"passport_document_id,omitempty" jsonschema:"passport document id; skips the latest-document lookup"`
	ManualFields       map[string]any `json:"manual_fields,omitempty" jsonschema:"passport field values that override the profile: given_name, family_name, passport_number, passport_expiry_date, passport_issuing_country"`
	Execute            *bool          `json:"execute,omitempty" jsonschema:"false returns the plan and plan input without reading the profile or sending; default true"`
	RunID              string         `json:"run_id,omitempty" jsonschema:"resume a submitted run (after an approval) and report SENT once it succeeded"`
}

var passportEmailWorkflow = Define(Tool{
	Name:  passport.ToolName,
	Title: "E-mail a passport copy with its details",
	Description: "Send one recipient a Gmail message with the passport attached and its fields (name, number, expiry, " +
		"issuing country) in the body: resolves the passport document, reads or extracts the fields, then creates and " +
		"sends a draft as one plan. Returns READY_TO_SEND (execute:false), SENT only when the run succeeded, RUNNING, " +
		"or a recovery error (MCP_RECIPIENT_REQUIRED, MCP_DOCUMENT_UPLOAD_REQUIRED, MCP_PASSPORT_EXTRACTION_FAILED, " +
		"MCP_PASSPORT_PROFILE_READ_FAILED, MCP_MANUAL_FIELDS_REQUIRED, MCP_APPROVAL_REQUIRED, MCP_GMAIL_DRAFT_SEND_FAILED).",
	Toolset:    ToolsetVault,
	Capability: CapVaultExecute,
	Hints:      Hints{OpenWorld: true},
	Needs:      NeedPassport,
	Renders:    true,
}, func(s *jsonschema.Schema) {
	Default(s, "execute", true)
}, runPassportWorkflow)

func runPassportWorkflow(ctx context.Context, d *Deps, c *Call, in passportWorkflowIn) (Result, error) {
	res, err := d.Passport.Run(ctx, c.Scope(), passport.Input{
		RequestText: firstNonBlank(in.RequestText, in.Request, in.Text), RecipientEmail: in.RecipientEmail,
		Subject: in.Subject, BodyStyle: in.BodyStyle, PassportDocumentID: in.PassportDocumentID,
		ManualFields: in.ManualFields, Execute: in.Execute, RunID: in.RunID, BeforeSend: renderedCheck(ctx),
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Data: res.Data, Meta: vaultMeta(res.RequestID, res.HTTPStatus)}, nil
}

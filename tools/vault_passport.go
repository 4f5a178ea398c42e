package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset vault, continued: the passport e-mail workflow.

type passportWorkflowIn struct {
	RequestText        string         `json:"request_text,omitempty"`
	Request            string         `json:"request,omitempty"`
	Text               string         `json:"text,omitempty"`
	RecipientEmail     string         `json:"recipient_email,omitempty"`
	Subject            string         `json:"subject,omitempty"`
	BodyStyle          string         `json:"body_style,omitempty" jsonschema:"formal, casual, concise, detailed"`
	PassportDocumentID string         `json:"passport_document_id,omitempty"`
	ManualFields       map[string]any `json:"manual_fields,omitempty" jsonschema:"fields MCP_MANUAL_FIELDS_REQUIRED asked for"`
	Execute            *bool          `json:"execute,omitempty" jsonschema:"false: preview only"`
	RunID              string         `json:"run_id,omitempty" jsonschema:"resume after an approval"`
}

var passportEmailWorkflow = Define(Tool{
	Name:        passport.ToolName,
	Description: "E-mail someone the user's passport and its fields, as routed.",
	Toolset:     ToolsetVault,
	Capability:  CapVaultExecute,
	Effect:      Executes,
	Needs:       NeedPassport,
	Unlisted:    []string{"request", "text"},
	Output:      obj("status", str(), "pre_send_summary", obj()),
	Renders:     true,
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

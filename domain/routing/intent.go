package routing

import (
	"slices"
	"strings"
)

// Passport workflow intent: a request to e-mail passport fields resolves to
// this route and tool instead of a Gmail route.
const (
	PassportRouteID = "vaultclaw.passport_email_fields.v1"
	PassportTool    = "vaultclaw_passport_email_workflow"
)

var passportNegations = []string{"without passport fields", "no passport fields", "without passport details",
	"no passport details", "without the passport fields", "without the passport details", "without my passport fields",
	"without my passport details"}

// passportIntent fires for "e-mail … passport … fields/details in the body".
func (r *Resolver) passportIntent(t *text, inputs, facts map[string]any) (Result, bool) {
	if !t.has("passport") || !(t.has("email") || t.has("gmail") || t.has("mail")) {
		return Result{}, false
	}
	if slices.ContainsFunc(passportNegations, t.hasPhrase) {
		return Result{}, false
	}
	if !(t.hasPhrase("passport fields") || t.hasPhrase("passport details") ||
		(t.has("fields") && t.has("body")) || (t.has("details") && t.has("body"))) {
		return Result{}, false
	}
	res := newResult()
	res.Domain, res.Confidence = "google.gmail", ConfidenceHigh
	res.Route = RouteRef{RouteID: PassportRouteID, EntryID: PassportTool, EntryType: "tool.workflow.v1", Source: "intent"}
	res.Execution = Execution{Strategy: StrategyToolInvoke, Tool: PassportTool}
	res.Inputs = map[string]any{"request_text": t.raw, "execute": true}
	to, _ := inputs["to"].([]string)
	if len(to) == 0 {
		// The answer to the "to" question comes back as a fact.
		for _, fk := range []string{"recipient_email", "to"} {
			if v, ok := coerceFact(InputSpec{Type: TypeStringArray}, facts[fk]); ok {
				to = v.([]string)
				res.AutofilledInputs = append(res.AutofilledInputs, Autofill{InputKey: "recipient_email", Source: SourceFacts,
					Reason: "filled recipient_email from context.facts." + fk, FactKey: fk})
				break
			}
		}
	}
	switch len(to) {
	case 0:
		res.Status = StatusMissingInputs
		res.MissingInputs = []string{"to"}
		res.MissingInputGuidance = []Guidance{{InputKey: "to", RequiredForRoute: PassportRouteID, ResolutionMode: ModeAskUser, Question: r.question("to")}}
		res.ProgressHint = progressHint(res.MissingInputGuidance)
		res.NeedsClarification = true
		res.Reasons = []string{"passport field extraction requested but recipient email is missing"}
		res.FallbackHint = "Provide a recipient email to continue the passport-field workflow."
	case 1:
		res.Status = StatusExecutable
		res.Inputs["recipient_email"] = to[0]
		if s, ok := inputs["subject"].(string); ok && strings.TrimSpace(s) != "" {
			res.Inputs["subject"] = s
		}
		res.Reasons = []string{"matched explicit intent to include passport fields/details in the email body"}
	default:
		res.Status = StatusAmbiguous
		res.NeedsClarification = true
		res.Reasons = []string{"passport field extraction requested with multiple recipient emails"}
		res.FallbackHint = "Provide exactly one recipient email when requesting passport fields in the email body."
	}
	return res, true
}

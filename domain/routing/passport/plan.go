// Package passport is the "e-mail a copy of my passport with its details"
// workflow (D11): recipient and document resolution, profile read,
// extraction and merge, and one identity + Gmail plan run through the
// execution service.
package passport

import (
	"maps"
	"regexp"
	"strings"
)

// Fixed identifiers of the workflow.
const (
	DocumentTypeID  = "identity.passport"
	DocumentSubject = "self"
	DefaultSubject  = "Passport Copy and Details"
	ToolName        = "vaultclaw_passport_email_workflow"
	PlanType        = "connector.execution.plan.v1"
	profileRead     = "identity.profile.read.v1"
	extractionRun   = "identity.extraction.run.v1"
)

// Slot is one required passport field.
type Slot struct {
	Key   string `json:"slot"`
	Label string `json:"label"`
}

// Slots are the five required fields in slot order.
var Slots = []Slot{
	{"given_name", "First Name"},
	{"family_name", "Last Name"},
	{"passport_number", "Passport Number"},
	{"passport_expiry_date", "Expiry Date"},
	{"passport_issuing_country", "Issuing Country"},
}

// bodyOrder is the order of the labelled lines in the e-mail body.
var bodyOrder = []string{"given_name", "family_name", "passport_number", "passport_issuing_country", "passport_expiry_date"}

func slotKeys() []string {
	out := make([]string, len(Slots))
	for i, s := range Slots {
		out[i] = s.Key
	}
	return out
}

func labelOf(key string) string {
	for _, s := range Slots {
		if s.Key == key {
			return s.Label
		}
	}
	return key
}

var (
	reEmailAnywhere = regexp.MustCompile(`(?i)\b[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}\b`)
	reEmailExact    = regexp.MustCompile(`(?i)^[a-z0-9._%+\-]+@[a-z0-9\-]+(\.[a-z0-9\-]+)*\.[a-z]{2,}$`)
	reSubjects      = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bsubject\s*(?:is|=|:)\s*(?:"([^"\n]+)"|'([^'\n]+)')`),
		regexp.MustCompile(`(?i)\bsubject\s+(?:"([^"\n]+)"|'([^'\n]+)')`),
		regexp.MustCompile(`(?i)\bsubject\s*(?:is|=|:)?\s+((?:[^\s"',.;:!?]+[ \t]*){1,11})`),
	}
)

func firstGroup(re *regexp.Regexp, s string) string {
	m := re.FindStringSubmatch(s)
	for i := 1; i < len(m); i++ {
		if v := strings.TrimSpace(m[i]); v != "" {
			return v
		}
	}
	return ""
}

// parseSubject returns the subject named in the request text, or "".
func parseSubject(text string) string {
	for _, re := range reSubjects {
		if v := strings.Trim(firstGroup(re, text), " .,:;!?\"'"); v != "" {
			return v
		}
	}
	return ""
}

// detectStyle maps the request wording to a body style.
func detectStyle(text string) string {
	t := " " + strings.Join(strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return r < 'a' || r > 'z'
	}), " ") + " "
	switch {
	case strings.Contains(t, " formal "):
		return "formal"
	case strings.Contains(t, " casual "):
		return "casual"
	case strings.Contains(t, " concise ") || strings.Contains(t, " brief "):
		return "concise"
	case strings.Contains(t, " detailed ") || strings.Contains(t, " detail "):
		return "detailed"
	}
	return ""
}

// composeBody is the labelled plain-text body. values maps a slot to its
// text: a {{step_output:…}} placeholder inside the plan.
func composeBody(style string, value func(slot string) string) string {
	var lines []string
	switch style {
	case "formal":
		lines = []string{"Hello,", "", "Please find attached a copy of my passport and the requested passport details below.", ""}
	case "casual":
		lines = []string{"Hi,", "", "I've attached a copy of my passport and included the details below.", ""}
	case "concise":
	case "detailed":
		// "detailed" adds a closing line; the predecessor rendered it like
		// the default.
		lines = []string{"Attached is a copy of my passport and the requested details.", ""}
	default:
		lines = []string{"Attached is a copy of my passport and the requested details.", ""}
	}
	for _, k := range bodyOrder {
		lines = append(lines, labelOf(k)+": "+value(k))
	}
	if style == "detailed" {
		lines = append(lines, "", "All details above are taken from my identity profile and match the attached passport.")
	}
	return strings.Join(lines, "\n")
}

func placeholder(stepID string) func(string) string {
	return func(slot string) string { return "{{step_output:" + stepID + ":/values/" + slot + "}}" }
}

func planInputRef(path string) map[string]any {
	return map[string]any{"source": "plan_input", "path": path}
}

func binding(path string, ref map[string]any) map[string]any {
	return map[string]any{"path": path, "ref": ref}
}

func identityBase(extra map[string]any) map[string]any {
	m := map[string]any{"subject_ref": DocumentSubject, "profile_kind": "KYC", "slots": []any{}}
	maps.Copy(m, extra)
	return m
}

func step(id, connector, verb string, base map[string]any, binds []any, next string) map[string]any {
	s := map[string]any{"step_id": id, "connector_id": connector, "verb": verb, "policy_version": "1",
		"request_base": base, "request_bindings": binds}
	if next != "" {
		s["default_success_next_step_id"] = next
	}
	return s
}

// buildPlan is the 7-step plan: read the profile; with all five values
// draft from it, else extract, re-read and draft.
func buildPlan(style string, manual map[string]string) (plan map[string]any, bodyExisting, bodyAfter string) {
	bodyExisting = composeBody(style, placeholder("read_existing_profile"))
	bodyAfter = composeBody(style, placeholder("read_after_extract_profile"))
	slotsBind := []any{binding("/slots", planInputRef("/passport/slots"))}
	var exists []any
	for _, k := range slotKeys() {
		exists = append(exists, map[string]any{"op": "exists", "ref": map[string]any{"source": "step_output",
			"step_id": "read_existing_profile", "path": "/values/" + k}})
	}
	readExisting := step("read_existing_profile", "identity", profileRead, identityBase(nil), slotsBind, "extract_passport_fields")
	readExisting["success_branches"] = []any{map[string]any{"when": map[string]any{"op": "and", "args": exists}, "next_step_id": "create_draft_from_existing"}}
	extracted := map[string]any{}
	for k, v := range manual {
		if v != "" {
			extracted[k] = v
		}
	}
	extract := step("extract_passport_fields", "identity", extractionRun, identityBase(map[string]any{
		"provider": "aws.textract.v1", "mode": "ANALYZE_AND_SAVE", "document_id": "passport_doc_placeholder", "extracted_fields": extracted,
	}), []any{binding("/document_id", planInputRef("/passport/document_id")), binding("/slots", planInputRef("/passport/slots"))},
		"read_after_extract_profile")
	readAfter := step("read_after_extract_profile", "identity", profileRead, identityBase(nil), slotsBind, "create_draft_after_extract")
	draft := func(id, body, next string) map[string]any {
		return step(id, "google", "google.gmail.drafts.create", map[string]any{"user_id": "me", "to": []any{}, "subject": "",
			"text_plain": body, "document_attachments": []any{}}, []any{
			binding("/to", planInputRef("/email/to")),
			binding("/subject", planInputRef("/email/subject")),
			binding("/document_attachments", planInputRef("/email/document_attachments")),
		}, next)
	}
	send := func(id, from string) map[string]any {
		return step(id, "google", "google.gmail.drafts.send", map[string]any{"user_id": "me", "draft_id": "draft_placeholder"},
			[]any{binding("/draft_id", map[string]any{"source": "step_output", "step_id": from, "path": "/draft_id"})}, "")
	}
	plan = map[string]any{
		"type":          PlanType,
		"start_step_id": "read_existing_profile",
		"steps": []any{
			readExisting, extract, readAfter,
			draft("create_draft_from_existing", bodyExisting, "send_draft_from_existing"),
			send("send_draft_from_existing", "create_draft_from_existing"),
			draft("create_draft_after_extract", bodyAfter, "send_draft_after_extract"),
			send("send_draft_after_extract", "create_draft_after_extract"),
		},
	}
	return plan, bodyExisting, bodyAfter
}

func planInput(docID, recipient, subject string, manual map[string]string) map[string]any {
	mf := map[string]any{}
	for k, v := range manual {
		if v != "" {
			mf[k] = v
		}
	}
	slots := make([]any, 0, len(Slots))
	for _, k := range slotKeys() {
		slots = append(slots, k)
	}
	return map[string]any{
		"passport": map[string]any{"subject_ref": DocumentSubject, "document_id": docID, "slots": slots, "manual_fields": mf},
		"email": map[string]any{"to": []any{recipient}, "subject": subject,
			"document_attachments": []any{map[string]any{"type_id": DocumentTypeID}}},
	}
}

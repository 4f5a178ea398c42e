package vaultsim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"sort"
	"strings"
)

// verbDef is one connector verb.
type verbDef struct {
	Name        string
	Description string
	// Bounded verbs need the connector's module hash on execute requests.
	Bounded bool
	// Mutating verbs change state (the default approval rules look at them).
	Mutating bool
	// NeedsQueryAST requires a top-level query_ast_v1.
	NeedsQueryAST bool
	Input         schema
	// Slots are the secret slots the verb defines ("" = free-form slots,
	// as for generic.http).
	Slots []string
}

// connectorDef is one connector with its policy.
type connectorDef struct {
	ID          string
	DisplayName string
	Version     string
	Verbs       map[string]*verbDef
	// aliases map accepted alternative verb names to canonical ones.
	aliases    map[string]string
	policyHash string
}

// verb resolves a verb name (case-sensitive, aliases allowed).
func (c *connectorDef) verb(name string) (*verbDef, bool) {
	if v, ok := c.Verbs[name]; ok {
		return v, true
	}
	if canon, ok := c.aliases[name]; ok {
		return c.Verbs[canon], true
	}
	return nil, false
}

func (c *connectorDef) policy() map[string]any {
	verbs := map[string]any{}
	for name, v := range c.Verbs {
		verbs[name] = map[string]any{
			"description":          v.Description,
			"bounded":              v.Bounded,
			"requires_module_hash": v.Bounded,
			"mutating":             v.Mutating,
			"input_schema_v1":      v.Input,
		}
	}
	aliases := map[string]any{}
	for a, canon := range c.aliases {
		aliases[a] = canon
	}
	return map[string]any{"policy_version": c.Version, "verbs": verbs, "verb_aliases": aliases}
}

// computePolicyHash derives a stable hash from the policy document, so a
// policy change changes the hash as it does in Vaultclaw.
func (c *connectorDef) computePolicyHash() string {
	raw, _ := json.Marshal(map[string]any{"id": c.ID, "policy": c.policy()})
	sum := sha256.Sum256(raw)
	return "ph_" + strings.ReplaceAll(c.ID, ".", "_") + "_" + hex.EncodeToString(sum[:8])
}

func (c *connectorDef) summary() map[string]any {
	names := make([]string, 0, len(c.Verbs))
	for n := range c.Verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	return map[string]any{"id": c.ID, "connector_id": c.ID, "display_name": c.DisplayName, "policy_version": c.Version, "policy_hash": c.policyHash, "verbs": names}
}

func (c *connectorDef) detail() map[string]any {
	out := c.summary()
	out["policy"] = c.policy()
	return out
}

func gmailMessage() map[string]any {
	return map[string]any{
		"user_id":              str(),
		"to":                   emails(1),
		"cc":                   emails(0),
		"bcc":                  emails(0),
		"subject":              str(),
		"text_plain":           str(),
		"text_html":            str(),
		"thread_id":            str(),
		"in_reply_to":          str(),
		"document_attachments": schema{"type": "array", "items": obj(map[string]any{"type_id": nonEmpty(), "filename": str(), "content_type": str()}, "type_id")},
	}
}

func withDeprecated(s schema) schema {
	s["x-deprecated"] = map[string]any{"body_text": "use text_plain or text_html"}
	return s
}

func defaultConnectors() map[string]*connectorDef {
	secretAttachment := obj(map[string]any{
		"slot": nonEmpty(), "mode": enum("read", "write"), "target": schema{"type": "string", "format": "uri"},
		"intent": str(), "expected_secret_types": strArray(), "required": boolean(),
		"header": str(), "scheme": str(),
	}, "slot", "mode", "target")
	generic := &connectorDef{ID: "generic.http", DisplayName: "Generic HTTP", Version: "1", Verbs: map[string]*verbDef{
		"generic.http.request.v1": {
			Name: "generic.http.request.v1", Description: "Perform an HTTP request, attaching secrets through an unbounded profile.",
			Mutating: true,
			Input: obj(map[string]any{
				"endpoint_key":        str(),
				"method":              enum("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"),
				"url":                 schema{"type": "string", "format": "uri"},
				"headers":             schema{"type": "object", "additionalProperties": str()},
				"query":               schema{"type": "object", "additionalProperties": str()},
				"body":                anyValue(),
				"json":                anyValue(),
				"response_mode":       enum("json", "text", "none"),
				"secret_attachments":  schema{"type": "array", "items": secretAttachment},
				"profile_id":          str(),
				"token_secret_id":     str(),
				"required_secret_ids": strArray(),
				"timeout_ms":          integer(1, 60000),
			}, "method", "url"),
		},
	}}
	email := withDeprecated(obj(gmailMessage(), "to"))
	draft := withDeprecated(obj(gmailMessage(), "to"))
	msgID := func(extra map[string]any) schema {
		p := map[string]any{"user_id": str(), "message_id": nonEmpty()}
		maps.Copy(p, extra)
		return obj(p, "message_id")
	}
	labelsChange := map[string]any{"add_label_ids": strArray(), "remove_label_ids": strArray()}
	google := &connectorDef{ID: "google", DisplayName: "Google Workspace (Gmail)", Version: "1", Verbs: map[string]*verbDef{
		"google.gmail.send.v1":              {Description: "Send an e-mail.", Bounded: true, Mutating: true, Input: email, Slots: []string{"oauth"}},
		"google.gmail.drafts.create":        {Description: "Create a draft.", Bounded: true, Mutating: true, Input: draft, Slots: []string{"oauth"}},
		"google.gmail.drafts.send":          {Description: "Send an existing draft.", Bounded: true, Mutating: true, Input: obj(map[string]any{"user_id": str(), "draft_id": nonEmpty()}, "draft_id"), Slots: []string{"oauth"}},
		"google.gmail.messages.list":        {Description: "List messages matching query_ast_v1.", Bounded: true, NeedsQueryAST: true, Input: obj(map[string]any{"user_id": str(), "page_limit": integer(1, 500), "page_token": str(), "include_spam_trash": boolean()}), Slots: []string{"oauth"}},
		"google.gmail.messages.get":         {Description: "Get a message.", Bounded: true, Input: msgID(map[string]any{"format": enum("full", "metadata", "minimal")}), Slots: []string{"oauth"}},
		"google.gmail.messages.get_content": {Description: "Get a message's text content.", Bounded: true, Input: msgID(nil), Slots: []string{"oauth"}},
		"google.gmail.messages.modify":      {Description: "Add or remove message labels.", Bounded: true, Mutating: true, Input: msgID(labelsChange), Slots: []string{"oauth"}},
		"google.gmail.messages.trash":       {Description: "Move a message to the trash.", Bounded: true, Mutating: true, Input: msgID(nil), Slots: []string{"oauth"}},
		"google.gmail.messages.untrash":     {Description: "Restore a message from the trash.", Bounded: true, Mutating: true, Input: msgID(nil), Slots: []string{"oauth"}},
		"google.gmail.labels.list":          {Description: "List labels.", Bounded: true, Input: obj(map[string]any{"user_id": str()}), Slots: []string{"oauth"}},
		"google.gmail.thread.get.v1":        {Description: "Get a thread.", Bounded: true, Input: obj(map[string]any{"user_id": str(), "thread_id": nonEmpty()}, "thread_id"), Slots: []string{"oauth"}},
		"google.gmail.thread.modify.v1":     {Description: "Add or remove thread labels.", Bounded: true, Mutating: true, Input: obj(map[string]any{"user_id": str(), "thread_id": nonEmpty(), "add_label_ids": strArray(), "remove_label_ids": strArray()}, "thread_id"), Slots: []string{"oauth"}},
	}, aliases: map[string]string{
		"google.gmail.send":                    "google.gmail.send.v1",
		"google.gmail.drafts.create.v1":        "google.gmail.drafts.create",
		"google.gmail.draft.create.v1":         "google.gmail.drafts.create",
		"google.gmail.drafts.send.v1":          "google.gmail.drafts.send",
		"google.gmail.messages.list.v1":        "google.gmail.messages.list",
		"google.gmail.messages.get.v1":         "google.gmail.messages.get",
		"google.gmail.messages.get_content.v1": "google.gmail.messages.get_content",
		"google.gmail.messages.modify.v1":      "google.gmail.messages.modify",
		"google.gmail.messages.trash.v1":       "google.gmail.messages.trash",
		"google.gmail.messages.untrash.v1":     "google.gmail.messages.untrash",
		"google.gmail.labels.list.v1":          "google.gmail.labels.list",
		"google.gmail.thread.get":              "google.gmail.thread.get.v1",
		"google.gmail.thread.modify":           "google.gmail.thread.modify.v1",
	}}
	kycSlots := schema{"type": "array", "items": nonEmpty()}
	identity := &connectorDef{ID: "identity", DisplayName: "Identity documents and KYC profile", Version: "1", Verbs: map[string]*verbDef{
		"identity.extraction.run.v1": {Description: "Extract fields from a stored identity document into the KYC profile.", Mutating: true,
			Input: obj(map[string]any{"subject_ref": str(), "profile_kind": enum("KYC"), "provider": str(), "mode": enum("ANALYZE_AND_SAVE", "ANALYZE_ONLY"), "document_id": nonEmpty(), "slots": kycSlots, "extracted_fields": schema{"type": "object"}}, "document_id")},
		"identity.profile.read.v1": {Description: "Read KYC profile slots.",
			Input: obj(map[string]any{"subject_ref": str(), "profile_kind": enum("KYC"), "slots": kycSlots}, "slots")},
	}}
	out := map[string]*connectorDef{}
	for _, c := range []*connectorDef{generic, google, identity} {
		for name, v := range c.Verbs {
			v.Name = name
		}
		if c.aliases == nil {
			c.aliases = map[string]string{}
		}
		c.policyHash = c.computePolicyHash()
		out[c.ID] = c
	}
	return out
}

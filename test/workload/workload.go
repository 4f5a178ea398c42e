// Package workload is what the end-to-end suites, the in-process benchmarks
// and the load tool (cmd/accords-load) send: the names of the catalog and
// session tools, and a deterministic generator of realistic cookbook
// catalogs (five entries a bundle, recipes and templates) with the search,
// render and route arguments that hit them. It knows nothing of the
// server's internals and imports nothing of this module, so any package's
// tests can use it.
package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Tool names, as the predecessor and this server both register them.
const (
	ToolUpsert  = "vaultclaw_cookbook_upsert"
	ToolSearch  = "vaultclaw_recipes_search"
	ToolRender  = "vaultclaw_template_render"
	ToolRoute   = "vaultclaw_route_resolve"
	ToolList    = "vaultclaw_cookbooks_list"
	ToolGet     = "vaultclaw_cookbook_get"
	ToolDelete  = "vaultclaw_cookbook_delete"
	ToolStatus  = "vaultclaw_session_status"
	ToolConfig  = "vaultclaw_session_configure"
	ToolSessClr = "vaultclaw_session_clear"
)

// DefaultSeed is the corpus seed of the benchmarks and the load tool, so
// their figures describe the same catalog.
const DefaultSeed = 20261130

// Word lists for titles, descriptions and tags. They are large enough that
// at 10,000 bundles a two-word query matches tens to hundreds of bundles,
// as searches in a real catalog do, rather than one or all.
var (
	connectors = []struct{ id, name string }{
		{"google.gmail", "Gmail"}, {"google.calendar", "Google Calendar"}, {"google.drive", "Google Drive"},
		{"google.sheets", "Google Sheets"}, {"slack.chat", "Slack"}, {"github.issues", "GitHub"},
		{"stripe.billing", "Stripe"}, {"notion.pages", "Notion"}, {"jira.issues", "Jira"},
		{"salesforce.crm", "Salesforce"}, {"twilio.sms", "Twilio"}, {"dropbox.files", "Dropbox"},
		{"zoom.meetings", "Zoom"}, {"hubspot.contacts", "HubSpot"}, {"asana.tasks", "Asana"},
		{"trello.boards", "Trello"}, {"quickbooks.ledger", "QuickBooks"}, {"shopify.orders", "Shopify"},
		{"zendesk.tickets", "Zendesk"}, {"generic.http", "HTTP"}, {"microsoft.outlook", "Outlook"},
		{"microsoft.teams", "Teams"}, {"airtable.bases", "Airtable"}, {"docusign.envelopes", "DocuSign"},
	}
	verbs = []string{
		"list", "get", "create", "update", "delete", "search", "send", "archive", "export", "import",
		"share", "approve", "assign", "close", "reopen", "schedule", "sync", "notify", "label", "move",
	}
	nouns = []string{
		"invoice", "contract", "meeting", "report", "ticket", "customer", "payment", "expense", "reminder",
		"newsletter", "receipt", "shipment", "order", "refund", "subscription", "appointment", "itinerary",
		"flight", "hotel", "payroll", "timesheet", "budget", "forecast", "proposal", "lead", "campaign",
		"survey", "feedback", "incident", "deployment", "backup", "release", "vendor", "supplier", "quote",
		"estimate", "statement", "agenda", "minutes", "roster", "shift", "lesson", "grade", "patient",
		"prescription", "claim", "policy", "lease", "tenant", "inspection", "warranty", "repair", "delivery",
		"inventory", "catalog", "donation", "volunteer", "grant", "membership", "booking", "reservation",
		"passport", "visa", "license", "permit", "certificate", "transcript", "portfolio", "dividend",
	}
	qualifiers = []string{
		"weekly", "monthly", "quarterly", "annual", "overdue", "pending", "urgent", "unread", "archived",
		"shared", "draft", "recurring", "international", "domestic", "confidential", "failed", "approved",
		"rejected", "upcoming", "expired", "flagged", "starred", "daily", "outstanding", "disputed",
		"scheduled", "incoming", "outgoing", "personal", "corporate",
	}
	actions = []string{
		"send", "summarize", "archive", "list", "create", "schedule", "reconcile", "forward", "approve",
		"export", "track", "notify", "collect", "review", "renew", "cancel", "file", "translate", "audit",
		"categorize",
	}
	suffixes = []string{
		"Toolkit", "Recipes", "Workflows", "Automations", "Playbook", "Helpers", "Essentials", "Kit",
		"Assistant", "Pack",
	}
	tagWords = []string{
		"finance", "accounting", "sales", "marketing", "support", "engineering", "hr", "legal", "travel",
		"operations", "healthcare", "education", "real-estate", "retail", "nonprofit", "personal", "email",
		"calendar", "documents", "messaging", "crm", "billing", "compliance", "security", "reporting",
		"analytics", "scheduling", "productivity", "logistics", "procurement", "payroll", "identity",
		"notifications", "storage", "collaboration", "ecommerce", "devops", "onboarding", "recruiting",
		"customer-success",
	}
	people = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"}
)

// Corpus deterministically generates bundle i of a catalog: the same seed
// and index always give the same bundle, so a driver never needs to keep
// the catalog in memory and a checker can regenerate what was written.
type Corpus struct {
	Seed uint64
}

// BundleInfo is what a workload needs to know about a generated bundle.
type BundleInfo struct {
	CookbookID string
	Version    string
	Title      string
	Connector  string
	Verb       string
	Tags       []string
	// Templates renderable with Inputs (all required inputs given).
	Templates []TemplateCall
	// Words that occur in the title or description, for queries.
	Words []string
}

// TemplateCall is a template id with inputs that satisfy its bindings.
type TemplateCall struct {
	TemplateID string
	Inputs     map[string]any
}

func (c Corpus) rng(i int, salt uint64) *rand.Rand {
	return rand.New(rand.NewPCG(c.Seed^0x9e3779b97f4a7c15, uint64(i)*0x100000001b3+salt))
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func pickDistinct(r *rand.Rand, xs []string, n int) []string {
	idx := r.Perm(len(xs))[:n]
	out := make([]string, n)
	for k, j := range idx {
		out[k] = xs[j]
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// CookbookID is the id of bundle i (stable, safe, unique per index).
func (c Corpus) CookbookID(i int) string {
	r := c.rng(i, 1)
	conn := pick(r, connectors)
	noun := pick(r, nouns)
	return fmt.Sprintf("bench.%s.%s-%05d", strings.ReplaceAll(conn.id, ".", "-"), noun, i)
}

// Bundle returns bundle i as the JSON object a client would send, with
// version v (for example "1.0.0"), and what a workload needs to know of it.
func (c Corpus) Bundle(i int, version string) (map[string]any, BundleInfo) {
	r := c.rng(i, 1)
	conn := pick(r, connectors)
	noun := pick(r, nouns)
	id := fmt.Sprintf("bench.%s.%s-%05d", strings.ReplaceAll(conn.id, ".", "-"), noun, i)
	qual := pick(r, qualifiers)
	noun2 := pick(r, nouns)
	noun3 := pick(r, nouns)
	action := pick(r, actions)
	title := fmt.Sprintf("%s %s %s %s", conn.name, capitalize(qual), capitalize(noun), pick(r, suffixes))
	desc := fmt.Sprintf("Recipes and templates to %s %s %ss with %s, including %s and %s handling for %s teams.",
		action, qual, noun, conn.name, noun2, noun3, pick(r, tagWords))
	tags := pickDistinct(r, tagWords, 3)
	verb := pick(r, verbs)
	info := BundleInfo{
		CookbookID: id, Version: version, Title: title, Connector: conn.id, Verb: noun + "s." + verb,
		Tags: tags, Words: []string{qual, noun, noun2, noun3, action, strings.ToLower(conn.name)},
	}

	entries := make([]any, 0, 5)
	// Two recipes: a verb request and a two-step plan.
	entries = append(entries, map[string]any{
		"entry_id":     noun + "_" + verb + "_recipe",
		"entry_type":   "recipe.verb.v1",
		"title":        fmt.Sprintf("%s %s %ss", capitalize(verb), qual, noun),
		"description":  fmt.Sprintf("Calls %s to %s %s %ss.", conn.name, verb, qual, noun),
		"tags":         []any{tags[0], noun},
		"connector_id": conn.id,
		"verb":         info.Verb,
		"request": map[string]any{
			"filter": map[string]any{"status": qual, "kind": noun},
			"limit":  float64(25 + r.IntN(75)),
		},
	})
	entries = append(entries, map[string]any{
		"entry_id":     noun + "_" + action + "_plan",
		"entry_type":   "recipe.plan.v1",
		"title":        fmt.Sprintf("%s %s and notify", capitalize(action), noun2),
		"description":  fmt.Sprintf("Looks up the %s, then tells the owner.", noun2),
		"connector_id": conn.id,
		"plan": map[string]any{
			"type":          "connector.execution.plan.v1",
			"start_step_id": "lookup",
			"steps": []any{
				map[string]any{"step_id": "lookup", "connector_id": conn.id, "verb": noun2 + "s.get",
					"request_base": map[string]any{"kind": noun2}, "default_success_next_step_id": "notify"},
				map[string]any{"step_id": "notify", "connector_id": "slack.chat", "verb": "messages.send",
					"request_base": map[string]any{"channel": "#" + tags[0], "text": "Done: " + noun2}},
			},
		},
	})
	// Three templates: two verb templates and one plan template, with
	// required bindings, defaults and an input schema.
	sendID := noun + "_send_template"
	entries = append(entries, map[string]any{
		"entry_id":     sendID,
		"entry_type":   "template.verb.v1",
		"title":        fmt.Sprintf("Send %s %s to a contact", qual, noun),
		"description":  fmt.Sprintf("Sends the %s %s by e-mail with an optional note.", qual, noun),
		"tags":         []any{"email", tags[1]},
		"connector_id": "google.gmail",
		"verb":         "messages.send",
		"base_request": map[string]any{
			"connector_id": "google.gmail",
			"verb":         "messages.send",
			"request":      map[string]any{"to": []any{}, "subject": "", "text_plain": "", "format": "plain"},
		},
		"bindings": []any{
			map[string]any{"target_path": "/request/to", "input_key": "to"},
			map[string]any{"target_path": "/request/subject", "input_key": "subject"},
			map[string]any{"target_path": "/request/text_plain", "input_key": "body", "required": false, "default": "See attached."},
			map[string]any{"target_path": "/request/format", "input_key": "format", "required": false, "default": "plain"},
		},
		"input_schema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"to":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"subject": map[string]any{"type": "string"},
				"body":    map[string]any{"type": "string"},
				"format":  map[string]any{"type": "string"},
			},
			"required": []any{"to", "subject"},
		},
	})
	getID := noun + "_" + verb + "_by_id_template"
	entries = append(entries, map[string]any{
		"entry_id":     getID,
		"entry_type":   "template.verb.v1",
		"title":        fmt.Sprintf("%s one %s by id", capitalize(verb), noun),
		"connector_id": conn.id,
		"verb":         info.Verb,
		"base_request": map[string]any{
			"connector_id": conn.id,
			"verb":         info.Verb,
			"request":      map[string]any{"id": "", "fields": []any{"id", "status"}},
		},
		"bindings": []any{
			map[string]any{"target_path": "/request/id", "input_key": noun + "_id"},
			map[string]any{"target_path": "/request/fields/2", "input_key": "extra_field", "required": false, "default": "owner"},
		},
	})
	planID := noun2 + "_followup_plan_template"
	entries = append(entries, map[string]any{
		"entry_id":    planID,
		"entry_type":  "template.plan.v1",
		"title":       fmt.Sprintf("Follow up on a %s %s", qual, noun2),
		"description": fmt.Sprintf("Creates a %s reminder and e-mails the summary.", noun2),
		"tags":        []any{"scheduling", tags[2]},
		"base_plan": map[string]any{
			"type":          "connector.execution.plan.v1",
			"start_step_id": "remind",
			"steps": []any{
				map[string]any{"step_id": "remind", "connector_id": "google.calendar", "verb": "events.create",
					"request_base": map[string]any{"summary": "", "start": ""}, "default_success_next_step_id": "mail"},
				map[string]any{"step_id": "mail", "connector_id": "google.gmail", "verb": "messages.send",
					"request_base": map[string]any{"to": []any{}, "subject": "Follow-up", "text_plain": ""}},
			},
		},
		"bindings": []any{
			map[string]any{"target_path": "/steps/0/request_base/summary", "input_key": "summary"},
			map[string]any{"target_path": "/steps/0/request_base/start", "input_key": "start"},
			map[string]any{"target_path": "/steps/1/request_base/to", "input_key": "to"},
			map[string]any{"target_path": "/steps/1/request_base/subject", "input_key": "subject", "required": false, "default": "Follow-up"},
		},
	})

	who := pick(r, people)
	info.Templates = []TemplateCall{
		{TemplateID: sendID, Inputs: map[string]any{"to": []any{who + "@example.com"}, "subject": capitalize(qual) + " " + noun}},
		{TemplateID: getID, Inputs: map[string]any{noun + "_id": fmt.Sprintf("%s-%d", noun, r.IntN(100000))}},
		{TemplateID: planID, Inputs: map[string]any{"summary": "Check " + noun2, "start": "2026-12-01T09:00:00Z", "to": []any{who + "@example.com"}}},
	}
	bundle := map[string]any{
		"type":        "accords.cookbook.bundle.v1",
		"cookbook_id": id,
		"version":     version,
		"title":       title,
		"description": desc,
		"tags":        toAny(tags),
		"entries":     entries,
	}
	return bundle, info
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// ListTag is the tag of a listing: about 3/40 of the catalog carries it.
func (Corpus) ListTag(r *rand.Rand) string { return tagWords[r.IntN(len(tagWords))] }

// SearchQuery returns a realistic free-text query for a catalog of n
// bundles: words from a random bundle's title and description, so it has
// hits, sometimes narrowed by a connector filter.
func (c Corpus) SearchQuery(r *rand.Rand, n int) map[string]any {
	_, info := c.Bundle(r.IntN(n), "1.0.0")
	args := map[string]any{"query": info.Words[0] + " " + info.Words[1], "limit": float64(10)}
	if r.IntN(4) == 0 {
		args["connector_id"] = info.Connector
	}
	return args
}

// RouteTexts are requests the route registry is meant to match (the
// registry path of the resolver).
var RouteTexts = []string{
	"send an email to alice@example.com with subject Quarterly invoice saying the invoice is attached",
	"what's the weather in boston tomorrow",
	"list my unread gmail messages",
	"email bob@example.com my passport details",
	"send my passport to carol@example.com",
	"show the labels in my gmail inbox",
	"draft an email to dave@example.com about the contract renewal",
	"tomorrow's weather in paris",
	"make a GET request to https://api.example.com/v1/status",
	"trash the message with id 18c2f0a1b2",
}

// SearchRouteText returns a request that matches no registry route but
// matches catalog entries, so the resolver falls back to search.
func (c Corpus) SearchRouteText(r *rand.Rand, n int) string {
	_, info := c.Bundle(r.IntN(n), "1.0.0")
	return fmt.Sprintf("%s the %s %s records in %s", info.Words[4], info.Words[0], info.Words[1], info.Words[5])
}

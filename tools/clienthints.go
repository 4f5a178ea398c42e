package tools

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hints for clients that defer tools behind a search (Claude Code's tool
// search), in each tool's _meta: a few words a search for the tool would
// use, whether the tool is loaded whatever the search, and how many
// characters its result may hold before the client cuts it.
const (
	metaSearchHint    = "anthropic/searchHint"
	metaAlwaysLoad    = "anthropic/alwaysLoad"
	metaMaxResultSize = "anthropic/maxResultSizeChars"
)

// MaxResultChars bounds the text of every result (D22): about 10,000
// tokens. Tools whose results can come near it say so in their _meta.
const MaxResultChars = 40000

// searchHints are each tool's search words, beyond its name.
var searchHints = map[string]string{
	"vaultclaw_session_configure":              "agent token setup",
	"vaultclaw_session_status":                 "session check",
	"vaultclaw_session_clear":                  "logout",
	"vaultclaw_whoami":                         "my identity and limits",
	"vaultclaw_connectors_list":                "available connectors",
	"vaultclaw_connector_get":                  "connector verbs",
	"vaultclaw_connector_validate":             "check request",
	"vaultclaw_connector_execute":              "send email, call API",
	"vaultclaw_connector_execute_job":          "run verb as job",
	"vaultclaw_plan_validate":                  "check plan",
	"vaultclaw_plan_execute":                   "run plan",
	"vaultclaw_plan_unbounded_profile_preview": "plan secret needs",
	"vaultclaw_unbounded_profile_resolve":      "find secret profile",
	"vaultclaw_unbounded_profiles_list":        "secret profiles",
	"vaultclaw_unbounded_profile_get":          "secret profile",
	"vaultclaw_unbounded_profile_upsert":       "create secret profile",
	"vaultclaw_slot_bindings_list":             "secret bindings",
	"vaultclaw_slot_bind":                      "bind API key",
	"vaultclaw_document_types_suggest":         "document types",
	"vaultclaw_document_types_latest":          "latest document",
	"vaultclaw_passport_email_workflow":        "email my passport",
	"vaultclaw_approval_wait":                  "wait for approval",
	"vaultclaw_approval_handles_list":          "my pending jobs",
	"vaultclaw_approvals_pending_list":         "pending approvals",
	"vaultclaw_approvals_pending_get":          "one approval",
	"vaultclaw_job_get":                        "job status",
	"vaultclaw_plan_run_get":                   "run status",
	"vaultclaw_cookbooks_list":                 "catalog",
	"vaultclaw_cookbook_get":                   "cookbook entries",
	"vaultclaw_cookbook_export":                "export bundle",
	"vaultclaw_cookbook_upsert":                "store bundle",
	"vaultclaw_cookbook_import":                "import bundle",
	"vaultclaw_cookbook_delete":                "delete cookbook",
	"vaultclaw_recipes_search":                 "find a recipe",
	"vaultclaw_recipe_get":                     "read a recipe",
	"vaultclaw_template_render":                "fill a template",
	"vaultclaw_catalog_sources_list":           "remote sources",
	"vaultclaw_catalog_source_upsert":          "add source",
	"vaultclaw_catalog_source_delete":          "remove source",
	"vaultclaw_cookbooks_remote_list":          "browse remote",
	"vaultclaw_cookbook_remote_install":        "install cookbook",
	"vaultclaw_route_resolve":                  "plain-language request",
	"vaultclaw_audit_receipts_list":            "audit log",
	"vaultclaw_receipt_prove":                  "prove a receipt",
	"vaultclaw_receipt_emit":                   "record workflow event",
	"vaultclaw_toolsets_list":                  "more tools",
	"vaultclaw_toolset_enable":                 "enable tools",
}

// alwaysLoad are the tools a deferring client loads at once: enough to find
// a route or a recipe and to finish an approval.
var alwaysLoad = []string{"vaultclaw_session_status", "vaultclaw_route_resolve", "vaultclaw_recipes_search", "vaultclaw_approval_wait"}

// largeResults are the tools whose result can approach MaxResultChars.
var largeResults = []string{"vaultclaw_cookbook_get", "vaultclaw_cookbook_export", "vaultclaw_audit_receipts_list"}

// clientMeta is t's _meta.
func clientMeta(name string) mcp.Meta {
	m := mcp.Meta{}
	if h := searchHints[name]; h != "" {
		m[metaSearchHint] = h
	}
	if slices.Contains(alwaysLoad, name) {
		m[metaAlwaysLoad] = true
	}
	if slices.Contains(largeResults, name) {
		m[metaMaxResultSize] = MaxResultChars
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

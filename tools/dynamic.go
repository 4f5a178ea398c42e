package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset dynamic: progressive disclosure. With dynamic toolsets on, a
// session starts with the core tools and these two, and grows on demand:
// vaultclaw_toolset_enable shows a toolset's tools to the calling session
// only, and the session is told (notifications/tools/list_changed). They
// change no data; which session they act on comes with the call
// (ToolsetControl), so enablement is per session, never per process.

// Core are the tools a dynamic session starts with: enough to check the
// session, find a route or a recipe, and discover the rest.
var Core = []string{
	"vaultclaw_session_status", "vaultclaw_route_resolve", "vaultclaw_recipes_search",
	"vaultclaw_toolsets_list", "vaultclaw_toolset_enable",
}

// Agent are the tools a session lists when no toolsets are selected
// (D23): what the seed workflows use (session, search, render, validate,
// execute, approvals, routing). Catalog writes, remote sources, profile
// and slot administration and audit listing are operator work, listed
// with ACCORDS_MCP_TOOLSETS=all or their toolset and callable by name
// either way.
var Agent = []string{
	"vaultclaw_session_configure", "vaultclaw_session_status",
	"vaultclaw_connectors_list", "vaultclaw_connector_get", "vaultclaw_connector_validate",
	"vaultclaw_connector_execute", "vaultclaw_connector_execute_job",
	"vaultclaw_plan_validate", "vaultclaw_plan_execute", "vaultclaw_passport_email_workflow",
	"vaultclaw_approval_wait", "vaultclaw_approval_handles_list", "vaultclaw_approvals_pending_list",
	"vaultclaw_job_get", "vaultclaw_plan_run_get",
	"vaultclaw_recipes_search", "vaultclaw_recipe_get", "vaultclaw_template_render",
	"vaultclaw_cookbooks_list", "vaultclaw_cookbook_get",
	"vaultclaw_route_resolve",
}

// ToolsetDescriptions say what each toolset is for (vaultclaw_toolsets_list,
// docs).
var ToolsetDescriptions = map[string]string{
	ToolsetSession:   "the scope's Vaultclaw session: configure, status, clear",
	ToolsetVault:     "connectors, documents, secret slots and profiles; validate and execute requests and plans",
	ToolsetApprovals: "approval requests, jobs and plan runs, and waiting for a person's decision",
	ToolsetCatalog:   "the local cookbook catalog: search, read, render templates, store bundles",
	ToolsetRemote:    "remote cookbook sources and installing from them",
	ToolsetRouting:   "natural-language requests to routes",
	ToolsetAudit:     "this scope's audit receipts",
	ToolsetDynamic:   "listing and enabling toolsets (dynamic mode only)",
}

// ToolsetState is one toolset as a session sees it.
type ToolsetState struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Enabled     bool   `json:"enabled"`
	// Tools are the toolset's tools the caller may call.
	Tools []string `json:"tools"`
}

// ToolsetControl is the calling session's view, put in the call's context
// by the gateway.
type ToolsetControl interface {
	// Toolsets lists the toolsets the server offers, in a stable order.
	Toolsets() []ToolsetState
	// Always are the core tools the session lists whatever it enables.
	Always() []string
	// Enable shows a toolset's tools, single tools, or both to the session
	// and tells it so. An unoffered toolset or an unknown tool is a
	// validation error and enables nothing.
	Enable(toolset string, tools []string) (Enabled, error)
}

// Enabled is what one vaultclaw_toolset_enable call changed.
type Enabled struct {
	// Toolset is the toolset named, if any.
	Toolset string `json:"toolset,omitempty"`
	// Tools are the named toolset's and the named tools the caller may call.
	Tools []string `json:"tools"`
	// Added are the tools the session did not list before.
	Added []string `json:"added"`
	// Hidden are named tools the caller may not call: they stay unlisted.
	Hidden []HiddenTool `json:"hidden,omitempty"`
}

// HiddenTool is a named tool the session does not list, and why (the
// reason a call of it would be refused with).
type HiddenTool struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

type toolsetControlKey struct{}

// WithToolsetControl returns ctx carrying the session's toolset control.
func WithToolsetControl(ctx context.Context, c ToolsetControl) context.Context {
	return context.WithValue(ctx, toolsetControlKey{}, c)
}

func toolsetControl(ctx context.Context) (ToolsetControl, error) {
	c, ok := ctx.Value(toolsetControlKey{}).(ToolsetControl)
	if !ok || c == nil {
		return nil, apperr.New(apperr.CodePermissionDenied, "dynamic toolsets are off for this session; every tool it may call is listed already").
			With("reason", "dynamic_toolsets_off")
	}
	return c, nil
}

var toolsetsList = Define(Tool{
	Name:        "vaultclaw_toolsets_list",
	Description: "List the toolsets and their tools; enable a toolset, or single tools to keep the list short.",
	Toolset:     ToolsetDynamic,
	Capability:  CapToolDiscovery,
	Effect:      ReadsLocal,
	Output:      obj("toolsets", objs(), "always", strs()),
}, nil, listToolsets)

func listToolsets(ctx context.Context, _ *Deps, _ *Call, _ Empty) (Result, error) {
	c, err := toolsetControl(ctx)
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"toolsets": c.Toolsets(), "always": c.Always()})
}

type toolsetEnableIn struct {
	Toolset string   `json:"toolset,omitempty"`
	Tools   []string `json:"tools,omitempty"`
}

// ToolsetEnableName names vaultclaw_toolset_enable: the stdio front end
// replays its calls on a new daemon, so an attached session keeps what it
// enabled.
const ToolsetEnableName = "vaultclaw_toolset_enable"

var toolsetEnable = Define(Tool{
	Name:        ToolsetEnableName,
	Description: "Add a toolset's tools, or single tools by name, to this session when a task needs them.",
	Toolset:     ToolsetDynamic,
	Capability:  CapToolDiscovery,
	Effect:      ChangesView,
	Output:      obj("toolset", str(), "tools", strs(), "added", strs(), "hidden", objs()),
}, func(s *jsonschema.Schema) {
	Enum(s, "toolset", SelectableToolsets...)
}, enableToolset)

func enableToolset(ctx context.Context, _ *Deps, _ *Call, in toolsetEnableIn) (Result, error) {
	c, err := toolsetControl(ctx)
	if err != nil {
		return Result{}, err
	}
	if in.Toolset == "" && len(in.Tools) == 0 {
		return Result{}, apperr.Validation("toolset", "name a toolset or tools to enable; vaultclaw_toolsets_list shows both")
	}
	en, err := c.Enable(in.Toolset, in.Tools)
	if err != nil {
		return Result{}, err
	}
	if en.Tools == nil {
		en.Tools = []string{}
	}
	if en.Added == nil {
		en.Added = []string{}
	}
	return OK(en)
}

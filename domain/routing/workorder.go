package routing

import (
	"fmt"
	"strings"
)

// The safe order of work from a request to a result; SKILL.md and the
// server's instructions both render it from here, so they never differ.

// WorkStep is one stage of the order of work.
type WorkStep struct {
	// Name is the stage, one word.
	Name string
	// Tools are the tools of the stage, the usual one first.
	Tools []string
	// What is when and how to use them.
	What string
}

// Tool names of the work order (the resolver's own are in toolFor).
const (
	toolRouteResolve   = "vaultclaw_route_resolve"
	toolRecipesSearch  = "vaultclaw_recipes_search"
	toolTemplateRender = "vaultclaw_template_render"
	toolConnValidate   = "vaultclaw_connector_validate"
	toolPlanValidate   = "vaultclaw_plan_validate"
	toolApprovalWait   = "vaultclaw_approval_wait"
	toolSessionConfig  = "vaultclaw_session_configure"
	toolToolsetsList   = "vaultclaw_toolsets_list"
	toolToolsetEnable  = "vaultclaw_toolset_enable"
)

// WorkOrder is search → render → validate → execute → wait.
func (r *Registry) WorkOrder() []WorkStep {
	return []WorkStep{
		{"search", []string{toolRouteResolve, toolRecipesSearch}, "find the route for the user's words; follow missing_input_guidance until it resolves"},
		{"render", []string{toolTemplateRender}, "fill the template into a request or plan; nothing runs"},
		{"validate", []string{toolConnValidate, toolPlanValidate}, "check it against the connector policy"},
		{"execute", []string{toolFor(StrategyConnectorJob), toolFor(StrategyPlanExecute)}, "run it; this can send mail and call APIs"},
		{"wait", []string{toolApprovalWait}, "on MCP_APPROVAL_REQUIRED a person decides: show the link and wait with the handle; never repeat the call"},
	}
}

// Instructions are the server's instructions: the envelope, then the order
// of work; dynamic adds how to find tools a session starts without.
func (r *Registry) Instructions(dynamic bool) string {
	var b strings.Builder
	b.WriteString("accords-mcp acts through a Vaultclaw vault; secrets never reach you. ")
	b.WriteString("Every tool returns {ok, data, error, meta}: data is the result (null on failure); error has code, category, " +
		"message (naming the next step), retryable and details; meta.warnings lists arguments the tool ignored.\n")
	b.WriteString("Safe order of work:\n")
	for i, s := range r.WorkOrder() {
		fmt.Fprintf(&b, "%d. %s: %s: %s.\n", i+1, s.Name, strings.Join(s.Tools, " or "), s.What)
	}
	fmt.Fprintf(&b, "No session (MCP_SESSION_NOT_CONFIGURED)? Call %s, or set VC_AGENT_TOKEN. ", toolSessionConfig)
	b.WriteString("Tools that act take an optional idempotency_key: after MCP_NETWORK_ERROR with outcome_unknown, retry with the same key and the action runs at most once.")
	if dynamic {
		fmt.Fprintf(&b, "\nOnly a few tools are listed at first: %s shows the others by toolset, %s adds a toolset's tools.", toolToolsetsList, toolToolsetEnable)
	}
	return b.String()
}

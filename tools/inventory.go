package tools

import (
	"cmp"
	"fmt"
	"slices"
)

// inventory is every tool of the server, grouped by toolset in the order
// the README lists them. This is the one place a tool is registered: its
// definition and handler live in the file of its toolset.
var inventory = []Tool{
	// session.go
	sessionConfigure, sessionStatus, sessionClear, whoami,
	// vault.go, vault_jobs.go, vault_passport.go
	connectorsList, connectorGet, connectorValidate, connectorExecute, connectorExecuteJob,
	planValidate, planExecute, unboundedProfileResolve, planUnboundedProfilePreview,
	documentTypesSuggest, documentTypesLatest, slotBindingsList, slotBind,
	unboundedProfilesList, unboundedProfileGet, unboundedProfileUpsert, passportEmailWorkflow,
	// approvals.go
	planRunGet, jobGet, approvalsPendingList, approvalsPendingGet, approvalWait, approvalHandlesList,
	// catalog.go
	cookbooksList, cookbookGet, cookbookUpsert, cookbookDelete, cookbookExport, cookbookImport,
	recipeGet, recipesSearch, templateRender,
	// remote.go
	catalogSourcesList, catalogSourceUpsert, catalogSourceDelete, cookbooksRemoteList, cookbookRemoteInstall,
	// routing.go
	routeResolve,
	// audit.go, audit_emit.go, audit_prove.go
	auditReceiptsList, receiptEmit, receiptProve,
	// dynamic.go
	toolsetsList, toolsetEnable,
}

// Inventory returns the static definitions in inventory order (grouped by
// toolset). They are not bound to services: use them to describe tools
// (snapshots, docs), not to call them.
func Inventory() []Tool { return slices.Clone(inventory) }

// Definitions returns the static definitions sorted by name.
func Definitions() []Tool {
	out := Inventory()
	slices.SortFunc(out, func(a, b Tool) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// All binds every tool to the services of d. A nil service is an error
// naming it and the tools that need it: a server never starts with tools
// that cannot work.
func All(d Deps) (*Registry, error) { return Select(d, nil) }

// Select binds the tools keep accepts (all when keep is nil); only the
// services those tools need must be set. Tests use it to build a registry
// of a few toolsets deliberately.
func Select(d Deps, keep func(Tool) bool) (*Registry, error) {
	have := d.present()
	missing := map[Needs][]string{}
	var bound []Tool
	for _, t := range inventory {
		if keep != nil && !keep(t) {
			continue
		}
		(t.Needs &^ have).each(func(n Needs) { missing[n] = append(missing[n], t.Name) })
		t.deps = d.only(t.Needs)
		bound = append(bound, t)
	}
	if len(missing) > 0 {
		return nil, missingError(missing)
	}
	return newRegistry(bound)
}

// InToolsets keeps the tools of the named toolsets (a Select filter).
func InToolsets(names ...string) func(Tool) bool {
	return func(t Tool) bool { return slices.Contains(names, t.Toolset) }
}

// Named keeps the named tools (a Select filter).
func Named(names ...string) func(Tool) bool {
	return func(t Tool) bool { return slices.Contains(names, t.Name) }
}

// checkDefinition reports a definition missing a field every tool needs.
func checkDefinition(t Tool) error {
	if t.Name == "" || t.handle == nil || t.InputSchema == nil || t.Toolset == "" || t.Capability == "" || t.Description == "" ||
		t.Output == nil || t.Effect == 0 {
		return fmt.Errorf("tool %q is incomplete (name, description, schemas, effect, handler, toolset and capability are required)", t.Name)
	}
	return nil
}

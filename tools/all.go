package tools

import (
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/vault"
)

// Deps are the domain services tool handlers call.
type Deps struct {
	Sessions *session.Service
	// Vault is the Vaultclaw client; ModuleHash the module-hash preflight.
	Vault      *vault.Client
	ModuleHash *vault.ModuleHash
	Catalog    *catalog.Service
	Remote     *remote.Service
	// Execution runs execute-job, plans and waits; Handles are the durable
	// approval handles.
	Execution *execution.Service
	Handles   *approval.Store
	// Router resolves natural-language requests (vaultclaw_route_resolve).
	Router *routing.Resolver
	// Passport runs vaultclaw_passport_email_workflow.
	Passport *passport.Service
	// Audit lists receipts for vaultclaw_audit_receipts_list.
	Audit AuditLister
}

// All returns every tool of the server. This is the one place tools are
// registered; each group lives in its own file.
func All(d Deps) (*Registry, error) {
	return NewRegistry(
		sessionTools(d.Sessions),
		vaultTools(d),
		auditTools(d.Audit, time.Now),
		catalogTools(d.Catalog),
		remoteTools(d.Remote),
		approvalTools(d.Sessions, d.Execution, d.Handles),
		planTools(d.Sessions, d.Execution),
		routingTools(d.Router),
		passportTools(d.Passport),
	)
}

package tools

import (
	"time"

	"github.com/accordsai/accords-mcp/catalog"
	"github.com/accordsai/accords-mcp/remote"
	"github.com/accordsai/accords-mcp/session"
	"github.com/accordsai/accords-mcp/vault"
)

// Deps are the domain services tool handlers call.
type Deps struct {
	Sessions *session.Service
	// Vault is the Vaultclaw client; ModuleHash the module-hash preflight.
	Vault      *vault.Client
	ModuleHash *vault.ModuleHash
	// Audit lists receipts for vaultclaw_audit_receipts_list.
	Audit   AuditLister
	Catalog *catalog.Service
	Remote  *remote.Service
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
	)
}

package tools

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/vault"
)

// Deps are the domain services tool handlers call. app builds them; this
// package never constructs a service.
type Deps struct {
	Sessions *session.Service
	// Vault is the Vaultclaw client of the pass-through tools.
	Vault   *vault.Client
	Catalog *catalog.Service
	Remote  *remote.Service
	// Execution runs validate, execute, execute-job, plans and waits;
	// Handles are the durable approval handles.
	Execution *execution.Service
	Handles   *approval.Store
	// Router resolves natural-language requests (vaultclaw_route_resolve).
	Router *routing.Resolver
	// Passport runs vaultclaw_passport_email_workflow.
	Passport *passport.Service
	// Audit lists receipts for vaultclaw_audit_receipts_list.
	Audit AuditLister
}

// Needs is the set of Deps fields a tool's handler reads.
type Needs uint16

// One bit per Deps field.
const (
	NeedSessions Needs = 1 << iota
	NeedVault
	NeedCatalog
	NeedRemote
	NeedExecution
	NeedHandles
	NeedRouter
	NeedPassport
	NeedAudit
	needCount = iota
)

var needNames = [needCount]string{"Sessions", "Vault", "Catalog", "Remote", "Execution", "Handles", "Router", "Passport", "Audit"}

// String names the fields, for example "Deps.Sessions, Deps.Vault".
func (n Needs) String() string {
	var out []string
	for i := range needCount {
		if n&(1<<i) != 0 {
			out = append(out, "Deps."+needNames[i])
		}
	}
	return strings.Join(out, ", ")
}

// present is the set of fields of d that are set.
func (d *Deps) present() Needs {
	var n Needs
	for i, set := range [needCount]bool{d.Sessions != nil, d.Vault != nil, d.Catalog != nil, d.Remote != nil,
		d.Execution != nil, d.Handles != nil, d.Router != nil, d.Passport != nil, d.Audit != nil} {
		if set {
			n |= 1 << i
		}
	}
	return n
}

// only returns a copy of d holding just the fields n names, so a handler
// that reads a service its definition does not declare fails in tests
// instead of working by accident.
func (d *Deps) only(n Needs) *Deps {
	out := &Deps{}
	if n&NeedSessions != 0 {
		out.Sessions = d.Sessions
	}
	if n&NeedVault != 0 {
		out.Vault = d.Vault
	}
	if n&NeedCatalog != 0 {
		out.Catalog = d.Catalog
	}
	if n&NeedRemote != 0 {
		out.Remote = d.Remote
	}
	if n&NeedExecution != 0 {
		out.Execution = d.Execution
	}
	if n&NeedHandles != 0 {
		out.Handles = d.Handles
	}
	if n&NeedRouter != 0 {
		out.Router = d.Router
	}
	if n&NeedPassport != 0 {
		out.Passport = d.Passport
	}
	if n&NeedAudit != 0 {
		out.Audit = d.Audit
	}
	return out
}

// missingError names every missing service and the tools that need it.
func missingError(missing map[Needs][]string) error {
	var parts []string
	for i := range needCount {
		if names, ok := missing[1<<i]; ok {
			parts = append(parts, fmt.Sprintf("Deps.%s is nil (needed by %s)", needNames[i], strings.Join(names, ", ")))
		}
	}
	return fmt.Errorf("tools: missing %d dependenc%s: %s", len(parts), plural(len(parts), "y", "ies"), strings.Join(parts, "; "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// each calls fn with every single need in n.
func (n Needs) each(fn func(Needs)) {
	for n != 0 {
		bit := Needs(1) << bits.TrailingZeros16(uint16(n))
		fn(bit)
		n &^= bit
	}
}

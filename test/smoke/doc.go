// Package smoke holds the live smoke suite (build tag "integration"):
//
//	go test -tags=integration ./... -run '^TestSmoke_'
//
// With VC_AGENT_TOKEN and VC_BASE_URL or VC_UNIX_SOCKET set it drives a
// running Vaultclaw through the MCP server; otherwise it runs against an
// in-process vaultsim with scripted approval decisions, so CI exercises it.
// See docs/approvals.md for the variables and the token scopes.
package smoke

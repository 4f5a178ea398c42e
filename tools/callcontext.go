package tools

import (
	"context"
	"encoding/json"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Capabilities of the tools that act through the gateway.
const (
	// CapIdentity is held by every caller: vaultclaw_whoami shows a caller
	// only what applies to itself, never a secret.
	CapIdentity = "identity"
	// CapReceiptsEmit lets a caller append receipts of its own events to
	// the audit log (vaultclaw_receipt_emit).
	CapReceiptsEmit = "receipts_emit"
)

// UngatedCapabilities are held by every caller the policy admits; a
// policy file may still name them.
var UngatedCapabilities = []string{CapToolDiscovery, CapIdentity}

// ElevatedCapabilities are granted by "*" (or an absent list) to the
// local stdio caller only: anonymous and authenticated HTTP callers hold
// one only when their policy entry names it. Emitting receipts puts
// caller-chosen text into the log every tenant's verification covers.
var ElevatedCapabilities = []string{CapReceiptsEmit}

// GatewayControl is what the gateway tells a tool about the call it runs
// (put in the call's context for tools with Tool.Gateway set).
type GatewayControl interface {
	// Whoami describes the caller as the gateway sees it.
	Whoami() Identity
	// EmitReceipt appends an external-event receipt for the caller and
	// waits for its commit.
	EmitReceipt(ev Event) (Emitted, error)
}

// Identity is the caller as the gateway sees it (vaultclaw_whoami).
type Identity struct {
	Caller        string       `json:"caller"`
	Authenticated bool         `json:"authenticated"`
	Tenant        string       `json:"tenant"`
	Transport     string       `json:"transport"`
	Session       string       `json:"session,omitempty"`
	Client        *ClientInfo  `json:"client,omitempty"`
	Capabilities  []string     `json:"capabilities"`
	ReadOnly      bool         `json:"read_only"`
	Toolsets      []string     `json:"toolsets"`
	RateLimits    RateLimits   `json:"rate_limits"`
	Audit         AuditOrigin  `json:"audit"`
	Vault         VaultSession `json:"vault_session"`
}

// ClientInfo is the client's name and version from initialize.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// RateLimits are the limits that apply to the caller: its default and
// each tool whose limit differs or whose bucket is live.
type RateLimits struct {
	Default LimitInfo            `json:"default"`
	Tools   map[string]LimitInfo `json:"tools,omitempty"`
}

// LimitInfo is one limit; TokensLeft is set where a live bucket knows it.
type LimitInfo struct {
	Unlimited      bool     `json:"unlimited,omitempty"`
	CallsPerMinute float64  `json:"calls_per_minute,omitempty"`
	Burst          int      `json:"burst,omitempty"`
	TokensLeft     *float64 `json:"tokens_left,omitempty"`
}

// AuditOrigin names the audit log receipts go to and what they log.
type AuditOrigin struct {
	Origin     string `json:"origin,omitempty"`
	KeyName    string `json:"key_name,omitempty"`
	LogParams  bool   `json:"log_params"`
	LogResults bool   `json:"log_results"`
}

// VaultSession says whether the scope has a Vaultclaw session; never the
// token.
type VaultSession struct {
	Configured bool   `json:"configured"`
	Source     string `json:"source,omitempty"`
}

// Event is an external event to receipt (vaultclaw_receipt_emit).
type Event struct {
	Type   string
	Scroll string
	Tags   []string
	Body   json.RawMessage
}

// Emitted names an event's receipt.
type Emitted struct {
	Seq      uint64 `json:"seq,omitempty"`
	CallID   string `json:"call_id"`
	LeafHash string `json:"leaf_hash,omitempty"`
	Log      string `json:"log,omitempty"`
}

type gatewayControlKey struct{}

// WithGatewayControl returns ctx carrying the gateway's control of a call.
func WithGatewayControl(ctx context.Context, c GatewayControl) context.Context {
	return context.WithValue(ctx, gatewayControlKey{}, c)
}

func gatewayControl(ctx context.Context) (GatewayControl, error) {
	c, ok := ctx.Value(gatewayControlKey{}).(GatewayControl)
	if !ok || c == nil {
		return nil, apperr.New(apperr.CodeInternal, "this tool runs only behind the gateway").With("reason", "no_gateway")
	}
	return c, nil
}

// effectNames name effects in receipt tags.
var effectNames = map[Effect]string{
	ReadsLocal: "reads_local", ReadsRemote: "reads_remote", ChangesView: "changes_view",
	ReplacesLocal: "replaces_local", DeletesLocal: "deletes_local", DeletesLatest: "deletes_latest",
	ReplacesRemote: "replaces_remote", InstallsRemote: "installs_remote", Executes: "executes",
}

// String names the effect ("reads_local", …).
func (e Effect) String() string { return effectNames[e] }

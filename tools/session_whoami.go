package tools

import (
	"context"
)

// WhoamiName names vaultclaw_whoami.
const WhoamiName = "vaultclaw_whoami"

var whoami = Define(Tool{
	Name:        WhoamiName,
	Description: "Show your caller id, tenant, capabilities, toolsets, rate limits and audit log.",
	Toolset:     ToolsetSession,
	Capability:  CapIdentity,
	Effect:      ReadsLocal,
	Needs:       NeedSessions,
	Gateway:     true,
	Output:      obj("caller", str(), "tenant", str(), "capabilities", strs(), "toolsets", strs()),
}, nil, whoamiOf)

// whoamiOf answers the gateway's view of the caller and whether the
// scope has a Vaultclaw session (its source, never its token).
func whoamiOf(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	g, err := gatewayControl(ctx)
	if err != nil {
		return Result{}, err
	}
	id := g.Whoami()
	st, err := d.Sessions.Status(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	id.Vault = VaultSession{Configured: st.Configured, Source: st.Source}
	return OK(id)
}

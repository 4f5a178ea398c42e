package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset session: the scope's Vaultclaw connection settings.

type sessionConfigureIn struct {
	BaseURL   string `json:"base_url,omitempty" jsonschema:"Vaultclaw base URL: http, https, unix:///path.sock or http+unix; default http://127.0.0.1:8080"`
	Token     string `json:"token" jsonschema:"Vaultclaw agent token; stored encrypted, never echoed"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"request timeout in milliseconds; default 20000"`
}

var sessionConfigure = Define(Tool{
	Name:        "vaultclaw_session_configure",
	Title:       "Configure Vaultclaw session",
	Description: "Store the Vaultclaw base URL, agent token and timeout for this scope. The token is encrypted at rest and only ever shown masked. Does not contact Vaultclaw.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Hints:       Hints{Idempotent: true},
	Needs:       NeedSessions,
}, func(s *jsonschema.Schema) {
	Range(s, "timeout_ms", 0, session.MaxTimeoutMS)
}, configureSession)

func configureSession(ctx context.Context, d *Deps, c *Call, in sessionConfigureIn) (Result, error) {
	st, err := d.Sessions.Configure(ctx, c.Scope(), in.BaseURL, in.Token, in.TimeoutMS)
	if err != nil {
		return Result{}, err
	}
	return OK(st)
}

var sessionStatus = Define(Tool{
	Name:        "vaultclaw_session_status",
	Title:       "Vaultclaw session status",
	Description: "Report whether this scope has a Vaultclaw session (configured or from VC_AGENT_TOKEN), with the token masked.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Hints:       ReadLocal,
	Needs:       NeedSessions,
}, nil, sessionStatusOf)

func sessionStatusOf(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	st, err := d.Sessions.Status(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	return OK(st)
}

var sessionClear = Define(Tool{
	Name:        "vaultclaw_session_clear",
	Title:       "Clear Vaultclaw session",
	Description: "Forget this scope's Vaultclaw session. It stays cleared (even when VC_AGENT_TOKEN is set) until the next configure.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Hints:       Hints{Destructive: true, Idempotent: true},
	Needs:       NeedSessions,
}, nil, clearSession)

func clearSession(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	if err := d.Sessions.Clear(ctx, c.Scope()); err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"cleared": true})
}

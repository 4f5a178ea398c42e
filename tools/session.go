package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset session: the scope's Vaultclaw connection settings.

type sessionConfigureIn struct {
	BaseURL   string `json:"base_url,omitempty" jsonschema:"default http://127.0.0.1:8080"`
	Token     string `json:"token"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

var sessionConfigure = Define(Tool{
	Name:        "vaultclaw_session_configure",
	Description: "Set this scope's Vaultclaw URL and token.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Effect:      ReplacesLocal,
	Needs:       NeedSessions,
	Output:      sessionData(),
	Sensitive:   []string{"token"},
}, func(s *jsonschema.Schema) {
	Range(s, "timeout_ms", 0, session.MaxTimeoutMS)
}, configureSession)

// sessionData is session.Status.
func sessionData() *jsonschema.Schema {
	return obj("configured", boolean(), "source", str())
}

func configureSession(ctx context.Context, d *Deps, c *Call, in sessionConfigureIn) (Result, error) {
	st, err := d.Sessions.Configure(ctx, c.Scope(), in.BaseURL, in.Token, in.TimeoutMS)
	if err != nil {
		return Result{}, err
	}
	return OK(st)
}

var sessionStatus = Define(Tool{
	Name:        "vaultclaw_session_status",
	Description: "Show this scope's Vaultclaw session; call it first.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Effect:      ReadsLocal,
	Needs:       NeedSessions,
	Output:      sessionData(),
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
	Description: "Forget this scope's Vaultclaw session.",
	Toolset:     ToolsetSession,
	Capability:  CapSessionAdmin,
	Effect:      DeletesLocal,
	Needs:       NeedSessions,
	Output:      obj("cleared", boolean()),
}, nil, clearSession)

func clearSession(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	if err := d.Sessions.Clear(ctx, c.Scope()); err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"cleared": true})
}

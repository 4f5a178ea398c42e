package doctor

import (
	"context"
	"errors"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/vault"
)

// VaultProbe sends GET /v0/connectors through the tools' Vault client and
// returns the HTTP status; a transport failure is an error.
func VaultProbe(c *vault.Client) func(ctx context.Context, s session.Session) (int, error) {
	return func(ctx context.Context, s session.Session) (int, error) {
		resp, err := c.ListConnectors(ctx, s.Endpoint())
		if err == nil {
			return resp.Status, nil
		}
		ae := apperr.As(err)
		if st, ok := ae.Details["vault_http_status"].(int); ok && st > 0 {
			return st, nil
		}
		return 0, errors.New(ae.Message)
	}
}

// HTTPProbe is VaultProbe with a client of its own (doctor without a
// daemon).
func HTTPProbe(ctx context.Context, s session.Session) (int, error) {
	c := vault.New(vault.Options{})
	defer c.Close()
	return VaultProbe(c)(ctx, s)
}

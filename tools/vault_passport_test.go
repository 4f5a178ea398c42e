package tools

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type staticSession struct{ s session.Session }

func (f staticSession) Resolve(context.Context, string) (session.Session, error) { return f.s, nil }

func TestPassportWorkflowTool(t *testing.T) {
	t.Parallel()
	srv, err := vaultsim.Start("", vaultsim.Options{})
	require.NoError(t, err)
	defer srv.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "p.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	client := vault.New(vault.Options{})
	defer client.Close()
	mh := vault.NewModuleHash(client, vault.NewPolicyHashCache(db, 0))
	svc := &passport.Service{Sessions: staticSession{session.Session{BaseURL: srv.BaseURL(), Token: srv.AgentToken(), TimeoutMS: 5000}}, Vault: client, ModuleHash: mh,
		Exec: &execution.Service{Vault: client, ModuleHash: mh, Handles: approval.NewStore(db, 0)}}
	reg, err := Select(Deps{Passport: svc}, Named(passport.ToolName))
	require.NoError(t, err)
	require.Len(t, reg.Tools(), 1)
	tool := reg.Tools()[0]
	assert.Equal(t, "vaultclaw_passport_email_workflow", tool.Name)
	assert.False(t, tool.Hints.ReadOnly)

	m := invokeJSON(t, tool, `{}`)
	assert.Equal(t, false, m["ok"])
	assert.Equal(t, apperr.CodeRecipientRequired, m["error"].(map[string]any)["code"])

	m = invokeJSON(t, tool, `{"text":"email a@b.co my passport details in the body","execute":false}`)
	require.Equal(t, true, m["ok"], m)
	assert.Equal(t, "READY_TO_SEND", m["data"].(map[string]any)["status"])

	m = invokeJSON(t, tool, `{"recipient_email":"a@b.co"}`)
	require.Equal(t, false, m["ok"])
	e := m["error"].(map[string]any)
	assert.Equal(t, apperr.CodeApprovalRequired, e["code"])
	assert.NotNil(t, e["details"].(map[string]any)["pre_send_summary"])

	m = invokeJSON(t, tool, `{"recipient_email":"a@b.co","manual_fields":"nope"}`)
	assert.Equal(t, apperr.CodeValidation, m["error"].(map[string]any)["code"])
}

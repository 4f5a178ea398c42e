package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyCheckOAuthSection(t *testing.T) {
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "a.db")}
	file := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(file, []byte(`
[oauth]
issuer = "https://idp.example.com"
audience = "https://mcp.example.com/v1/mcp"
tenant_claim = "tenant"
capabilities = ["session_admin"]
`), 0o600))
	code, out, errText := runAuditCmd(t, vars, "policy", "check", file)
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "oauth: issuer https://idp.example.com, audience https://mcp.example.com/v1/mcp, scopes accords:* ")

	require.NoError(t, os.WriteFile(file, []byte("[oauth]\nissuer = \"http://idp.example.com\"\naudience = \"https://mcp.example.com/v1/mcp\"\n"), 0o600))
	code, _, errText = runAuditCmd(t, vars, "policy", "check", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "oauth.issuer:", "the message names the key")
}

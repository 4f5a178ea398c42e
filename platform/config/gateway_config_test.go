package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGatewayVariables(t *testing.T) {
	env := map[string]string{
		"ACCORDS_MCP_DB":               "/tmp/x/accords.db",
		"ACCORDS_MCP_POLICY_FILE":      " /etc/accords/policy.toml ",
		"ACCORDS_MCP_READ_ONLY":        "true",
		"ACCORDS_MCP_TOOLSETS":         "vault, ,audit,",
		"ACCORDS_MCP_AUDIT_RETENTION":  "30d",
		"ACCORDS_MCP_AUDIT_ON_FAILURE": "refuse-all",
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, "/etc/accords/policy.toml", c.PolicyFile)
	assert.True(t, c.ReadOnly)
	assert.Equal(t, []string{"vault", "audit"}, c.Toolsets)
	assert.Equal(t, "30d", c.AuditRetention)
	assert.Equal(t, "refuse-all", c.AuditOnFailure)

	env["ACCORDS_MCP_READ_ONLY"] = "yes please"
	_, err = FromEnv(func(k string) string { return env[k] })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ACCORDS_MCP_READ_ONLY")

	delete(env, "ACCORDS_MCP_READ_ONLY")
	delete(env, "ACCORDS_MCP_TOOLSETS")
	c, err = FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.False(t, c.ReadOnly)
	assert.Nil(t, c.Toolsets)
}

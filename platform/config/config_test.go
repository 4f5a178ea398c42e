package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestPolicyHashTTLAndVaultCap(t *testing.T) {
	c, err := FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db"}))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, c.PolicyHashTTL)
	assert.EqualValues(t, 16<<20, c.VaultMaxResponseBytes)

	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "2m": 2 * time.Minute, "90": 90 * time.Second, "0": 0} {
		c, err := FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db", "ACCORDS_MCP_POLICY_HASH_TTL": in}))
		require.NoError(t, err, in)
		assert.Equal(t, want, c.PolicyHashTTL, in)
	}
	for _, bad := range []string{"soon", "-5m", "-1"} {
		_, err := FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db", "ACCORDS_MCP_POLICY_HASH_TTL": bad}))
		assert.Error(t, err, bad)
	}
	c, err = FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db", "ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES": "1024"}))
	require.NoError(t, err)
	assert.EqualValues(t, 1024, c.VaultMaxResponseBytes)
	_, err = FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db", "ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES": "0"}))
	assert.Error(t, err)
}

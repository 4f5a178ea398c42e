package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRemoteLimits(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string {
			if k == "ACCORDS_MCP_DB" {
				return "/tmp/x/a.db"
			}
			return m[k]
		}
	}
	c, err := FromEnv(env(nil))
	require.NoError(t, err)
	assert.EqualValues(t, 8<<20, c.RemoteMaxIndexBytes)
	assert.EqualValues(t, 4<<20, c.RemoteMaxBundleBytes)
	assert.Equal(t, 20000, c.RemoteTimeoutMS)
	assert.Empty(t, c.RemoteTokenEnvAllow)

	c, err = FromEnv(env(map[string]string{
		"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES":  "1000",
		"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES": " 500 ",
		"ACCORDS_MCP_REMOTE_TIMEOUT_MS":       "1500",
		"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW":  " A_TOKEN, ,B_TOKEN",
	}))
	require.NoError(t, err)
	assert.EqualValues(t, 1000, c.RemoteMaxIndexBytes)
	assert.EqualValues(t, 500, c.RemoteMaxBundleBytes)
	assert.Equal(t, 1500, c.RemoteTimeoutMS)
	assert.Equal(t, []string{"A_TOKEN", "B_TOKEN"}, c.RemoteTokenEnvAllow)

	for _, k := range []string{"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES", "ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES", "ACCORDS_MCP_REMOTE_TIMEOUT_MS"} {
		for _, bad := range []string{"0", "-1", "lots"} {
			_, err := FromEnv(env(map[string]string{k: bad}))
			require.Error(t, err, "%s=%s", k, bad)
			assert.Contains(t, err.Error(), k)
		}
	}
	// The allow-list is checked at start: names only, never the server's own.
	for _, bad := range []string{"VC_AGENT_TOKEN", "ACCORDS_MCP_SECRET_KEY", "vault_unix_socket", "A-B", "1TOKEN"} {
		_, err := FromEnv(env(map[string]string{"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW": "TEAM_TOKEN," + bad}))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW")
	}
	names := map[string]bool{}
	for _, v := range Vars {
		names[v.Name] = true
	}
	for _, k := range []string{"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES", "ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES", "ACCORDS_MCP_REMOTE_TIMEOUT_MS", "ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW"} {
		assert.True(t, names[k], "%s documented in Vars", k)
	}
}

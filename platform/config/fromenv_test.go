package config

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFromEnvEveryVariable pins how each variable is read when all are set.
func TestFromEnvEveryVariable(t *testing.T) {
	c, err := FromEnv(envOf(map[string]string{
		"ACCORDS_MCP_DB":                         " /data/a.db ",
		"ACCORDS_MCP_SECRET_KEY":                 "k",
		"ACCORDS_MCP_HTTP_ADDR":                  "127.0.0.1:1",
		"ACCORDS_MCP_HTTP_PATH":                  "rpc",
		"ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER": "1",
		"ACCORDS_MCP_HTTP_MAX_BODY_BYTES":        "2048",
		"ACCORDS_MCP_POLICY_FILE":                "/p.toml",
		"ACCORDS_MCP_READ_ONLY":                  "TRUE",
		"ACCORDS_MCP_TOOLSETS":                   "vault, ,catalog",
		"ACCORDS_MCP_AUDIT_RETENTION":            "7d",
		"ACCORDS_MCP_AUDIT_ON_FAILURE":           "continue",
		"ACCORDS_MCP_AUDIT_KEY":                  "ak",
		"ACCORDS_MCP_AUDIT_KEY_FILE":             "/keys/audit.key",
		"ACCORDS_MCP_AUDIT_CHECKPOINT":           "10,5s",
		"ACCORDS_MCP_AUDIT_ANCHOR":               "file:/anchors/a.log",
		"ACCORDS_MCP_AUDIT_TENANT_FLOOR":         "50",
		"ACCORDS_MCP_AUDIT_REFUSAL_WINDOW":       "2m",
		"ACCORDS_MCP_HTTP_MAX_BATCH":             "9",
		"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES":     "10",
		"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES":    "20",
		"ACCORDS_MCP_REMOTE_TIMEOUT_MS":          "30",
		"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW":     " A, ,B ",
		"ACCORDS_MCP_LOG_LEVEL":                  "debug",
		"ACCORDS_MCP_POLICY_HASH_TTL":            "45",
		"ACCORDS_MCP_HANDLE_RETENTION":           "72h",
		"ACCORDS_MCP_TASK_POLL_INTERVAL":         "750ms",
		"ACCORDS_MCP_TASK_MAX_WORKING":           "5",
		"ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES":   "4096",
		"ACCORDS_MCP_STANDALONE":                 "1",
		"ACCORDS_MCP_DAEMON_IDLE_TIMEOUT":        "90s",
		"ACCORDS_MCP_PPROF":                      "127.0.0.1:6060",
		"ACCORDS_MCP_HTTP_ALLOWED_ORIGINS":       "HTTP://LocalHost:6274/, https://inspector.example:443",
		"ACCORDS_MCP_HTTP_HEADER_TIMEOUT":        "2s",
		"ACCORDS_MCP_HTTP_BODY_TIMEOUT":          "3s",
		"ACCORDS_MCP_HTTP_IDLE_TIMEOUT":          "4s",
		"ACCORDS_MCP_HTTP_MAX_CONNS":             "5",
		"ACCORDS_MCP_HTTP_MAX_ANON_TENANTS":      "6",
		"ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES":    "7",
		"ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES":   "8",
		"VC_AGENT_TOKEN":                         "tok",
		"VC_TIMEOUT_MS":                          "1500",
		"VAULT_UNIX_SOCKET":                      "/run/vault.sock",
	}))
	require.NoError(t, err)
	assert.Equal(t, Config{
		DBPath: "/data/a.db", SecretKey: "k",
		HTTPAddr: "127.0.0.1:1", HTTPPath: "/rpc", RequireTenantHeader: true, MaxBodyBytes: 2048,
		LogLevel:   "debug",
		PolicyFile: "/p.toml", ReadOnly: true, Toolsets: []string{"vault", "catalog"}, AuditRetention: "7d", AuditOnFailure: "continue",
		AuditKey: "ak", AuditKeyFile: "/keys/audit.key", AuditCheckpoint: "10,5s", AuditAnchor: "file:/anchors/a.log",
		AuditTenantFloor: "50", AuditRefusalWindow: 2 * time.Minute, MaxBatch: 9,
		RemoteMaxIndexBytes: 10, RemoteMaxBundleBytes: 20, RemoteTimeoutMS: 30, RemoteTokenEnvAllow: []string{"A", "B"},
		VaultToken: "tok", VaultBaseURL: "http://localhost", VaultTimeoutMS: 1500, VaultUnixSocket: "/run/vault.sock",
		PolicyHashTTL: 45 * time.Second, VaultMaxResponseBytes: 4096, HandleRetention: 72 * time.Hour,
		Standalone: true, DaemonIdleTimeout: 90 * time.Second, PprofAddr: "127.0.0.1:6060",
		AllowedOrigins:    []string{"http://localhost:6274", "https://inspector.example"},
		HTTPHeaderTimeout: 2 * time.Second, HTTPBodyTimeout: 3 * time.Second, HTTPIdleTimeout: 4 * time.Second,
		HTTPMaxConns: 5, MaxAnonTenants: 6, StdioMaxMessageBytes: 7, MaxBundleBytes: 8,
		TaskPollInterval: 750 * time.Millisecond, TaskMaxWorking: 5,
	}, c)
}

// TestFromEnvDefaults pins the configuration of an empty environment.
func TestFromEnvDefaults(t *testing.T) {
	dir, err := os.UserConfigDir()
	require.NoError(t, err)
	c, err := FromEnv(envOf(map[string]string{"VC_UNIX_SOCKET": "/a.sock", "VAULT_UNIX_SOCKET": "/b.sock"}))
	require.NoError(t, err)
	assert.Equal(t, Config{
		DBPath: filepath.Join(dir, "accords-mcp", "accords.db"), HTTPPath: DefaultHTTPPath, MaxBodyBytes: DefaultMaxBodyBytes,
		AuditKeyFile:        filepath.Join(dir, "accords-mcp-audit", "audit.key"),
		RemoteMaxIndexBytes: DefaultRemoteMaxIndexBytes, RemoteMaxBundleBytes: DefaultRemoteMaxBundleBytes, RemoteTimeoutMS: DefaultRemoteTimeoutMS,
		VaultBaseURL: "http://localhost", VaultTimeoutMS: DefaultVaultTimeoutMS, VaultUnixSocket: "/a.sock",
		PolicyHashTTL: DefaultPolicyHashTTL, VaultMaxResponseBytes: DefaultVaultMaxBytes, HandleRetention: DefaultHandleRetention,
		DaemonIdleTimeout: DefaultDaemonIdle,
		HTTPHeaderTimeout: DefaultHTTPHeaderTimeout, HTTPBodyTimeout: DefaultHTTPBodyTimeout, HTTPIdleTimeout: DefaultHTTPIdleTimeout,
		HTTPMaxConns: DefaultHTTPMaxConns, MaxAnonTenants: DefaultMaxAnonTenants, StdioMaxMessageBytes: DefaultStdioMaxMessageBytes,
		MaxBundleBytes:   DefaultMaxBundleBytes,
		TaskPollInterval: DefaultTaskPoll, TaskMaxWorking: DefaultTaskMaxWorking,
		MaxBatch: DefaultMaxBatch, AuditRefusalWindow: DefaultAuditRefusalWindow,
	}, c)
	for _, off := range []string{"off", "OFF", "0"} {
		c, err = FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/x.db", "ACCORDS_MCP_AUDIT_REFUSAL_WINDOW": off}))
		require.NoError(t, err)
		assert.Negative(t, c.AuditRefusalWindow, "off gives every refusal its own receipt")
	}

	c, err = FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/x.db", "VC_BASE_URL": "http://vault:1", "VC_UNIX_SOCKET": "/a.sock"}))
	require.NoError(t, err)
	assert.Equal(t, "http://vault:1", c.VaultBaseURL, "an explicit base URL wins over the socket default")
	assert.Equal(t, DefaultVaultTimeoutMS, c.VaultTimeoutMS)
	c, err = FromEnv(envOf(map[string]string{"ACCORDS_MCP_DB": "/x.db"}))
	require.NoError(t, err)
	assert.Equal(t, DefaultBaseURL, c.VaultBaseURL)
}

// TestFromEnvErrors pins each refusal's message, which of several bad
// variables is reported, and that the fields read before it are kept.
func TestFromEnvErrors(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"ACCORDS_MCP_READ_ONLY": "sometimes", "ACCORDS_MCP_HTTP_MAX_BODY_BYTES": "0"}, `ACCORDS_MCP_READ_ONLY must be true or false, got "sometimes"`},
		{map[string]string{"ACCORDS_MCP_HTTP_MAX_BODY_BYTES": "0", "ACCORDS_MCP_POLICY_HASH_TTL": "soon"}, `ACCORDS_MCP_HTTP_MAX_BODY_BYTES must be a positive integer, got "0"`},
		{map[string]string{"ACCORDS_MCP_HTTP_MAX_BODY_BYTES": "1k"}, `ACCORDS_MCP_HTTP_MAX_BODY_BYTES must be a positive integer, got "1k"`},
		{map[string]string{"ACCORDS_MCP_POLICY_HASH_TTL": "soon", "ACCORDS_MCP_HANDLE_RETENTION": "0"}, `ACCORDS_MCP_POLICY_HASH_TTL must be a duration such as 10m or whole seconds, got "soon"`},
		{map[string]string{"ACCORDS_MCP_POLICY_HASH_TTL": "-1"}, `ACCORDS_MCP_POLICY_HASH_TTL must not be negative, got "-1"`},
		{map[string]string{"ACCORDS_MCP_HANDLE_RETENTION": "0", "ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES": "0"}, `ACCORDS_MCP_HANDLE_RETENTION must be a positive duration such as 72h, got "0"`},
		{map[string]string{"ACCORDS_MCP_HANDLE_RETENTION": "week"}, `ACCORDS_MCP_HANDLE_RETENTION must be a positive duration such as 72h, got "week"`},
		{map[string]string{"ACCORDS_MCP_TASK_POLL_INTERVAL": "100ms"}, `ACCORDS_MCP_TASK_POLL_INTERVAL must be a duration of at least 250ms such as 2s, got "100ms"`},
		{map[string]string{"ACCORDS_MCP_TASK_MAX_WORKING": "0"}, `ACCORDS_MCP_TASK_MAX_WORKING must be a whole number from 1 to 100000, got "0"`},
		{map[string]string{"ACCORDS_MCP_TASK_MAX_WORKING": "many"}, `ACCORDS_MCP_TASK_MAX_WORKING must be a whole number from 1 to 100000, got "many"`},
		{map[string]string{"ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES": "-3", "ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES": "0"}, `ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES must be a positive integer, got "-3"`},
		{map[string]string{"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES": "0", "ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES": "0"}, `ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES must be a positive integer, got "0"`},
		{map[string]string{"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES": "x", "ACCORDS_MCP_REMOTE_TIMEOUT_MS": "0"}, `ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES must be a positive integer, got "x"`},
		{map[string]string{"ACCORDS_MCP_REMOTE_TIMEOUT_MS": "0"}, `ACCORDS_MCP_REMOTE_TIMEOUT_MS must be a positive integer, got "0"`},
		{map[string]string{"ACCORDS_MCP_STANDALONE": "perhaps"}, `ACCORDS_MCP_STANDALONE must be true or false, got "perhaps"`},
		{map[string]string{"ACCORDS_MCP_DAEMON_IDLE_TIMEOUT": "5"}, `ACCORDS_MCP_DAEMON_IDLE_TIMEOUT must be a duration of at least 1s such as 90s or 10m, got "5"`},
		{map[string]string{"ACCORDS_MCP_DAEMON_IDLE_TIMEOUT": "10ms"}, `ACCORDS_MCP_DAEMON_IDLE_TIMEOUT must be a duration of at least 1s such as 90s or 10m, got "10ms"`},
		{map[string]string{"ACCORDS_MCP_DAEMON_IDLE_TIMEOUT": "-1m"}, `ACCORDS_MCP_DAEMON_IDLE_TIMEOUT must be a duration of at least 1s such as 90s or 10m, got "-1m"`},
		{map[string]string{"ACCORDS_MCP_HTTP_BODY_TIMEOUT": "0s", "ACCORDS_MCP_HTTP_MAX_CONNS": "0"}, `ACCORDS_MCP_HTTP_BODY_TIMEOUT must be a positive duration such as 30s, got "0s"`},
		{map[string]string{"ACCORDS_MCP_HTTP_IDLE_TIMEOUT": "long"}, `ACCORDS_MCP_HTTP_IDLE_TIMEOUT must be a positive duration such as 30s, got "long"`},
		{map[string]string{"ACCORDS_MCP_HTTP_MAX_CONNS": "0"}, `ACCORDS_MCP_HTTP_MAX_CONNS must be a positive integer, got "0"`},
		{map[string]string{"ACCORDS_MCP_HTTP_MAX_BATCH": "0"}, `ACCORDS_MCP_HTTP_MAX_BATCH must be a positive integer, got "0"`},
		{map[string]string{"ACCORDS_MCP_AUDIT_REFUSAL_WINDOW": "10ms"}, `ACCORDS_MCP_AUDIT_REFUSAL_WINDOW must be a duration of at least 1s such as 60s, or off, got "10ms"`},
		{map[string]string{"ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES": "8M"}, `ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES must be a positive integer, got "8M"`},
		{map[string]string{"ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES": "-1"}, `ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES must be a positive integer, got "-1"`},
		{map[string]string{"ACCORDS_MCP_HTTP_ALLOWED_ORIGINS": "http://localhost:6274, localhost:6274"}, `ACCORDS_MCP_HTTP_ALLOWED_ORIGINS: "localhost:6274" is not an origin: write scheme://host[:port], e.g. http://localhost:6274`},
		{map[string]string{"ACCORDS_MCP_HTTP_ALLOWED_ORIGINS": "http://localhost:6274/app"}, `ACCORDS_MCP_HTTP_ALLOWED_ORIGINS: "http://localhost:6274/app" is not an origin: write scheme://host[:port], e.g. http://localhost:6274`},
		{map[string]string{"ACCORDS_MCP_PPROF": "0.0.0.0:6060"}, `ACCORDS_MCP_PPROF: "0.0.0.0:6060": the profiling listener is loopback only (127.0.0.1, [::1] or localhost)`},
		{map[string]string{"ACCORDS_MCP_PPROF": "6060"}, `ACCORDS_MCP_PPROF: "6060" is not host:port: address 6060: missing port in address`},
		{map[string]string{"VC_TIMEOUT_MS": "-5"}, `VC_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, got "-5"`},
		{map[string]string{"VC_TIMEOUT_MS": "soon"}, `VC_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, got "soon"`},
		{map[string]string{"VC_BASE_URL": "notaurl"}, `VC_BASE_URL must be an http, https, unix or http+unix URL such as http://127.0.0.1:8080, got "notaurl"`},
		{map[string]string{"VC_BASE_URL": "ftp://vault"}, `VC_BASE_URL must be an http, https, unix or http+unix URL such as http://127.0.0.1:8080, got "ftp://vault"`},
		{map[string]string{"VC_BASE_URL": "unix://"}, `VC_BASE_URL must name the socket path, e.g. unix:///run/vaultclaw.sock, got "unix://"`},
		{map[string]string{"ACCORDS_MCP_LOG_LEVEL": "loud"}, `ACCORDS_MCP_LOG_LEVEL must be one of debug, info, warn, error, got "loud"`},
		{map[string]string{"ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER": "maybe"}, `ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER must be true or false, got "maybe"`},
		{map[string]string{"ACCORDS_MCP_HTTP_ADDR": "notanaddr"}, `ACCORDS_MCP_HTTP_ADDR: "notanaddr" is not a listen address: write host:port, e.g. 127.0.0.1:8790`},
		{map[string]string{"ACCORDS_MCP_HTTP_ADDR": "127.0.0.1:http"}, `ACCORDS_MCP_HTTP_ADDR: "127.0.0.1:http" is not a listen address: the port must be a number from 0 to 65535`},
		{map[string]string{"VC_BASE_URL": "http://agent:secret@vault:8080"}, `VC_BASE_URL must not contain credentials (user:password@); put the agent token in VC_AGENT_TOKEN`},
	} {
		env := map[string]string{"ACCORDS_MCP_DB": "/x.db", "ACCORDS_MCP_HTTP_PATH": "p", "ACCORDS_MCP_POLICY_FILE": "/p.toml"}
		maps.Copy(env, c.env)
		got, err := FromEnv(envOf(env))
		require.Error(t, err, c.env)
		assert.Equal(t, c.want, err.Error(), c.env)
		assert.Equal(t, "/x.db", got.DBPath, "fields read before the failure are kept")
		assert.Equal(t, "/p", got.HTTPPath)
		assert.Equal(t, "/p.toml", got.PolicyFile)
	}
}

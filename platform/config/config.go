// Package config reads the server's settings from the environment. Every
// variable is listed in Vars, the source of the table in
// docs/configuration.md, so the documentation and the code cannot drift.
package config

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/accordsai/accords-mcp/platform/profiling"
)

// Var documents one environment variable.
type Var struct {
	Name    string
	Default string
	Meaning string
}

// Vars lists every variable the server reads (the source of the table in
// docs/configuration.md; TestConfigurationTable regenerates it).
var Vars = []Var{
	{"ACCORDS_MCP_DB", "<user config dir>/accords-mcp/accords.db", "bbolt database file; the bleve index lives beside it in accords.db.index/"},
	{"ACCORDS_MCP_SECRET_KEY", "(key file accords.key beside the db, created 0600)", "32-byte key, hex or base64, sealing session tokens at rest (AES-256-GCM)"},
	{"ACCORDS_MCP_HTTP_ADDR", "(none: stdio)", "serve the HTTP bridge on this address (host:port, checked at start), e.g. 127.0.0.1:8765"},
	{"ACCORDS_MCP_HTTP_PATH", "/v1/mcp", "path of the MCP endpoint; /mcp is always an alias"},
	{"ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER", "false", "reject HTTP requests without a tenant header (400 MCP_TENANT_HEADER_REQUIRED)"},
	{"ACCORDS_MCP_HTTP_MAX_BODY_BYTES", "1048576", "largest accepted HTTP request body; larger bodies get 413"},
	{"ACCORDS_MCP_HTTP_MAX_BATCH", "32", "most messages in one JSON-RPC batch (protocol 2025-03-26 and older); a larger batch gets 400 with a JSON-RPC error and nothing in it runs; each call in a batch takes its own rate-limit token"},
	{"ACCORDS_MCP_HTTP_ALLOWED_ORIGINS", "(none: only the server's own origin)", "comma-separated browser origins (scheme://host[:port]) allowed to call the HTTP bridge, e.g. a local MCP Inspector; other web pages get 403 (docs/security.md)"},
	{"ACCORDS_MCP_HTTP_HEADER_TIMEOUT", "10s", "time a client has to send its request headers (a Go duration)"},
	{"ACCORDS_MCP_HTTP_BODY_TIMEOUT", "30s", "time a client has to send its request body once the headers are in; slower bodies get 408"},
	{"ACCORDS_MCP_HTTP_IDLE_TIMEOUT", "60s", "how long an idle keep-alive connection stays open"},
	{"ACCORDS_MCP_HTTP_MAX_CONNS", "256", "most HTTP connections open at once; further clients wait in the listen queue"},
	{"ACCORDS_MCP_HTTP_MAX_ANON_TENANTS", "64", "most tenants anonymous HTTP callers (no policy file) can use, counting those already holding data; a new one beyond it gets 403"},
	{"ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES", "8388608", "largest stdio message; a longer one gets a JSON-RPC error and the session goes on"},
	{"ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES", "4194304", "largest cookbook bundle stored by any path (tools, CLI import, remote install, legacy import), in canonical JSON bytes"},
	{"ACCORDS_MCP_POLICY_FILE", "(none: stdio and loopback HTTP hold every capability)", "gateway policy file (TOML, or JSON with a .json name): HTTP callers as token digests, tenants, capabilities, rate limits, pre-execution [[rules]] (CEL); SIGHUP reloads it (docs/gateway.md)"},
	{"ACCORDS_MCP_READ_ONLY", "false", "remove every tool that changes state (serve --read-only): for the one client when a stdio launch attaches to a daemon, for every client in the daemon's own environment"},
	{"ACCORDS_MCP_TOOLSETS", "(the agent's 21 tools listed, all callable)", "comma-separated toolsets to expose, or `all`: session, vault, approvals, catalog, remote, routing, audit (serve --toolsets); per client like ACCORDS_MCP_READ_ONLY"},
	{"ACCORDS_MCP_DYNAMIC_TOOLSETS", "false", "a stdio session starts with a few core tools and adds toolsets on demand (vaultclaw_toolsets_list, vaultclaw_toolset_enable; serve --dynamic-toolsets); per client like ACCORDS_MCP_READ_ONLY"},
	{"ACCORDS_MCP_AUDIT_RETENTION", "90d,100000", "audit receipts kept: an age (90d, 720h), a count (100000), both comma-separated, or off"},
	{"ACCORDS_MCP_AUDIT_TENANT_FLOOR", "1000", "each tenant's newest N audit receipts are never removed by the count bound of ACCORDS_MCP_AUDIT_RETENTION, whatever other tenants write (only by its age); 0 turns the floor off (docs/gateway.md#retention)"},
	{"ACCORDS_MCP_AUDIT_REFUSAL_WINDOW", "60s", "per caller, tenant, tool and refusal code, the first 10 refusals (capability, rate limit) of each window get their own audit receipts and the rest one summary receipt with a count; off gives every refusal its own"},
	{"ACCORDS_MCP_AUDIT_KEY", "(key file, see ACCORDS_MCP_AUDIT_KEY_FILE)", "32-byte audit key, hex or base64: signs audit checkpoints (Ed25519) and keys the receipts' params/result digests; keep it outside the database folder"},
	{"ACCORDS_MCP_AUDIT_KEY_FILE", "<user config dir>/accords-mcp-audit/audit.key (created 0600)", "audit key file; refused inside the database folder; `accords-mcp audit key` prints its public key"},
	{"ACCORDS_MCP_AUDIT_CHECKPOINT", "1000,30s", "sign an audit checkpoint every N receipts and/or, when receipts were added, every interval (also at the first receipt and at shutdown)"},
	{"ACCORDS_MCP_AUDIT_ANCHOR", "(none)", "hand each signed checkpoint elsewhere: file:/path (appended, synced) or exec:command (checkpoint on stdin); failures are logged and counted, never block calls (docs/gateway.md#anchoring)"},
	{"ACCORDS_MCP_AUDIT_WITNESS", "(none)", "C2SP tlog-witness witnesses that cosign each signed checkpoint: entries \"VKEY URL\" (the witness's verifier key and its submission prefix) separated by commas; submitted in the background, cosignatures kept with the checkpoint, failures logged and shown by doctor (docs/gateway.md#witnesses)"},
	{"ACCORDS_MCP_AUDIT_ON_FAILURE", "refuse-writes", "when receipts cannot be written: refuse-writes (read tools go on), refuse-all, or continue"},
	{"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES", "8388608", "largest remote catalog index accepted (bytes); larger downloads are refused"},
	{"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES", "4194304", "largest remote cookbook bundle accepted (bytes); larger downloads are refused"},
	{"ACCORDS_MCP_REMOTE_TIMEOUT_MS", "20000", "time limit of one remote catalog request, body included"},
	{"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW", "(none: BEARER_ENV sources are refused)", "comma-separated environment variables a BEARER_ENV catalog source may name as its token; only these reach a daemon a stdio launch starts (ACCORDS_MCP_*, VC_* and VAULT_UNIX_SOCKET cannot be listed)"},
	{"ACCORDS_MCP_LOG_LEVEL", "info", "debug, info, warn or error (JSON logs on stderr; debug also shows the go-sdk's per-request logs)"},
	{"ACCORDS_MCP_CATALOG_DIR", "<user config dir>/accords-mcp/catalog", "the previous accords-mcp's catalog folder: read by import-legacy (docs/operations.md#importing-the-previous-accords-mcps-catalog), and a first start with a new database logs how to import it"},
	{"VC_AGENT_TOKEN", "(none)", "Vaultclaw agent token used when a scope has no configured session"},
	{"VC_BASE_URL", "http://127.0.0.1:8080 (http://localhost with a socket)", "Vaultclaw base URL for the environment session: http, https, unix:///path.sock or http+unix"},
	{"VC_TIMEOUT_MS", "20000", "Vaultclaw request timeout for the environment session, in milliseconds (100 to 600000)"},
	{"VC_UNIX_SOCKET", "(none)", "Unix socket for all Vaultclaw traffic unless the base URL is unix:// or http+unix://"},
	{"VAULT_UNIX_SOCKET", "(none)", "fallback for VC_UNIX_SOCKET"},
	{"GOMEMLIMIT", "96MiB", "Go runtime soft memory limit; the command sets 96 MiB when it is unset"},
	{"ACCORDS_MCP_POLICY_HASH_TTL", "10m", "how long a connector policy_hash (the module hash) is cached in bbolt: a Go duration such as 30s or 10m, or whole seconds; 0 disables the cache"},
	{"ACCORDS_MCP_HANDLE_RETENTION", "168h", "how long finished approval handles (and pending ones past their Vault expiry) stay listed by vaultclaw_approval_handles_list: a Go duration such as 72h"},
	{"ACCORDS_MCP_TASK_POLL_INTERVAL", "2s", "how often a task (MCP Tasks extension) polls Vault for the approval it follows while it is young (then a twentieth of its age, at most 30s), and the pollIntervalMs clients are told: a Go duration, at least 250ms (docs/approvals.md#tasks)"},
	{"ACCORDS_MCP_TASK_MAX_WORKING", "32", "most tasks (MCP Tasks extension) one caller may have waiting for approval at once in this process; a call that could start one more is refused with the retryable MCP_RATE_LIMITED (1 to 100000; docs/approvals.md#tasks)"},
	{"ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES", "16777216", "largest Vaultclaw response body accepted; larger responses fail with MCP_INTERNAL (vault_code RESPONSE_TOO_LARGE)"},
	{"ACCORDS_MCP_STANDALONE", "false", "serve stdio in this process instead of attaching to the daemon that owns the database (serve --standalone): sandboxes and tests"},
	{"ACCORDS_MCP_PPROF", "(off)", "serve Go pprof profiles on this loopback address, e.g. 127.0.0.1:6060 (/debug/pprof/); any other host is refused. For profiling only: profiles show memory contents"},
	{"ACCORDS_MCP_STORE", "(none: the bbolt file ACCORDS_MCP_DB)", "etcd://host:2379[,host2:2379…] keeps all state in etcd so several HTTP replicas share it (etcds:// for TLS); each replica's index and socket stay beside its own ACCORDS_MCP_DB (docs/scale-out.md)"},
	{"ACCORDS_MCP_ETCD_PREFIX", "/accords-mcp/", "key prefix of this deployment in etcd, so several deployments can share one cluster"},
	{"ACCORDS_MCP_ETCD_CERT", "(none)", "TLS client certificate (PEM) presented to etcd; with ACCORDS_MCP_ETCD_KEY"},
	{"ACCORDS_MCP_ETCD_KEY", "(none)", "private key (PEM) of ACCORDS_MCP_ETCD_CERT"},
	{"ACCORDS_MCP_ETCD_CA", "(system roots)", "CA certificate (PEM) that signed the etcd servers' certificates"},
	{"ACCORDS_MCP_ETCD_TIMEOUT", "5s", "time limit of one etcd request; an unreachable etcd fails writes with the retryable MCP_STORE_UNAVAILABLE after it"},
	{"ACCORDS_MCP_DAEMON_IDLE_TIMEOUT", "5m", "how long a daemon started by a stdio launch keeps running with no client attached: a Go duration such as 90s or 10m (daemons started explicitly never idle out)"},
	{"ACCORDS_MCP_SPAWNED_DAEMON", "(unset)", "not a setting: a stdio launch sets it to 1 in the environment of the daemon it starts, so that process never starts another daemon"},
}

// Config is the resolved configuration.
type Config struct {
	DBPath    string
	SecretKey string

	HTTPAddr            string
	HTTPPath            string
	RequireTenantHeader bool
	MaxBodyBytes        int64
	// AllowedOrigins are browser origins, normalized to scheme://host[:port].
	AllowedOrigins    []string
	HTTPHeaderTimeout time.Duration
	HTTPBodyTimeout   time.Duration
	HTTPIdleTimeout   time.Duration
	HTTPMaxConns      int
	// MaxAnonTenants bounds the tenants anonymous HTTP callers can use.
	MaxAnonTenants int
	// StdioMaxMessageBytes caps one stdio message.
	StdioMaxMessageBytes int
	// MaxBundleBytes caps a stored bundle (canonical JSON).
	MaxBundleBytes int64

	LogLevel string

	PolicyFile string
	ReadOnly   bool
	// DynamicToolsets starts stdio sessions with the core tools only.
	DynamicToolsets bool
	Toolsets        []string
	AuditRetention  string
	AuditOnFailure  string
	// AuditKey (the variable) wins over AuditKeyFile.
	AuditKey        string
	AuditKeyFile    string
	AuditCheckpoint string
	AuditAnchor     string
	// AuditWitness is ACCORDS_MCP_AUDIT_WITNESS (parsed by the witness
	// package).
	AuditWitness string
	// AuditTenantFloor is ACCORDS_MCP_AUDIT_TENANT_FLOOR (parsed by the
	// audit package, like the retention).
	AuditTenantFloor string
	// AuditRefusalWindow is the refusal summaries' window; negative when
	// off (every refusal its own receipt).
	AuditRefusalWindow time.Duration
	// MaxBatch caps the messages of one JSON-RPC batch over HTTP.
	MaxBatch int

	RemoteMaxIndexBytes  int64
	RemoteMaxBundleBytes int64
	RemoteTimeoutMS      int
	RemoteTokenEnvAllow  []string

	VaultToken      string
	VaultBaseURL    string
	VaultTimeoutMS  int
	VaultUnixSocket string

	// PolicyHashTTL is the policy-hash cache lifetime; 0 disables caching.
	PolicyHashTTL         time.Duration
	VaultMaxResponseBytes int64
	// HandleRetention is how long terminal approval handles are kept (and
	// finished tasks).
	HandleRetention time.Duration

	// Standalone serves stdio in-process instead of attaching to a daemon.
	Standalone bool
	// DaemonIdleTimeout is how long an auto-started daemon waits without
	// clients before it exits.
	DaemonIdleTimeout time.Duration
	// PprofAddr is the loopback address of the opt-in profiling listener
	// ("" when off).
	PprofAddr string
	// Store is the etcd store (nil: the bbolt file at DBPath).
	Store *EtcdStore
	// Tracing is the OpenTelemetry export (off unless an OTLP endpoint
	// is set).
	Tracing Tracing
	// DBLockTimeout bounds the wait for the database lock (not from the
	// environment: a daemon taking over waits longer than a command).
	DBLockTimeout time.Duration
	// TaskPollInterval is how often a task polls Vault.
	TaskPollInterval time.Duration
	// TaskMaxWorking bounds the working tasks of one caller.
	TaskMaxWorking int
}

// Default timeouts and limits.
const (
	DefaultVaultTimeoutMS  = 20000
	MinVaultTimeoutMS      = 100
	MaxVaultTimeoutMS      = 600000
	DefaultBaseURL         = "http://127.0.0.1:8080"
	DefaultHTTPPath        = "/v1/mcp"
	DefaultMaxBodyBytes    = 1 << 20
	DefaultPolicyHashTTL   = 10 * time.Minute
	DefaultVaultMaxBytes   = 16 << 20
	DefaultHandleRetention = 7 * 24 * time.Hour
	DefaultTaskPoll        = 2 * time.Second
	MinTaskPoll            = 250 * time.Millisecond
	DefaultTaskMaxWorking  = 32
	MaxTaskMaxWorking      = 100000
	ShutdownGrace          = 10 * time.Second
	DefaultDaemonIdle      = 5 * time.Minute
)

// HTTP and stdio limits (docs/security.md).
const (
	DefaultHTTPHeaderTimeout    = 10 * time.Second
	DefaultHTTPBodyTimeout      = 30 * time.Second
	DefaultHTTPIdleTimeout      = 60 * time.Second
	DefaultHTTPMaxConns         = 256
	DefaultMaxAnonTenants       = 64
	DefaultMaxBatch             = 32
	DefaultAuditRefusalWindow   = time.Minute
	DefaultStdioMaxMessageBytes = 8 << 20
	DefaultMaxBundleBytes       = 4 << 20
)

// Remote catalog limits (decision D9).
const (
	DefaultRemoteMaxIndexBytes  = 8 << 20
	DefaultRemoteMaxBundleBytes = 4 << 20
	DefaultRemoteTimeoutMS      = 20000
)

// FromEnv reads the configuration through getenv (os.Getenv in production).
// On a refusal the returned Config holds what was read before it.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		AuditKeyFile:    get("ACCORDS_MCP_AUDIT_KEY_FILE"),
		DBPath:          get("ACCORDS_MCP_DB"),
		SecretKey:       get("ACCORDS_MCP_SECRET_KEY"),
		HTTPAddr:        get("ACCORDS_MCP_HTTP_ADDR"),
		HTTPPath:        get("ACCORDS_MCP_HTTP_PATH"),
		LogLevel:        get("ACCORDS_MCP_LOG_LEVEL"),
		VaultToken:      get("VC_AGENT_TOKEN"),
		VaultBaseURL:    get("VC_BASE_URL"),
		VaultUnixSocket: get("VC_UNIX_SOCKET"),
		MaxBodyBytes:    DefaultMaxBodyBytes,
		VaultTimeoutMS:  DefaultVaultTimeoutMS,
		PolicyHashTTL:   DefaultPolicyHashTTL,

		VaultMaxResponseBytes: DefaultVaultMaxBytes,

		RemoteMaxIndexBytes:  DefaultRemoteMaxIndexBytes,
		RemoteMaxBundleBytes: DefaultRemoteMaxBundleBytes,
		RemoteTimeoutMS:      DefaultRemoteTimeoutMS,
		HandleRetention:      DefaultHandleRetention,
		DaemonIdleTimeout:    DefaultDaemonIdle,

		HTTPHeaderTimeout:    DefaultHTTPHeaderTimeout,
		HTTPBodyTimeout:      DefaultHTTPBodyTimeout,
		HTTPIdleTimeout:      DefaultHTTPIdleTimeout,
		HTTPMaxConns:         DefaultHTTPMaxConns,
		MaxAnonTenants:       DefaultMaxAnonTenants,
		MaxBatch:             DefaultMaxBatch,
		AuditRefusalWindow:   DefaultAuditRefusalWindow,
		StdioMaxMessageBytes: DefaultStdioMaxMessageBytes,
		MaxBundleBytes:       DefaultMaxBundleBytes,
		TaskPollInterval:     DefaultTaskPoll,
		TaskMaxWorking:       DefaultTaskMaxWorking,
	}
	if err := c.resolvePaths(); err != nil {
		return c, err
	}
	c.PolicyFile = get("ACCORDS_MCP_POLICY_FILE")
	if err := setVar(get, "ACCORDS_MCP_HTTP_REQUIRE_TENANT_HEADER", &c.RequireTenantHeader, isBool, "true or false"); err != nil {
		return c, err
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		return c, err
	}
	if c.HTTPAddr != "" {
		if err := CheckListenAddr(c.HTTPAddr); err != nil {
			return c, fmt.Errorf("ACCORDS_MCP_HTTP_ADDR: %w", err)
		}
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"ACCORDS_MCP_READ_ONLY", &c.ReadOnly}, {"ACCORDS_MCP_DYNAMIC_TOOLSETS", &c.DynamicToolsets}, {"ACCORDS_MCP_STANDALONE", &c.Standalone}} {
		if err := setVar(get, b.name, b.dst, isBool, "true or false"); err != nil {
			return c, err
		}
	}
	c.Toolsets = SplitList(get("ACCORDS_MCP_TOOLSETS"))
	c.AuditRetention = get("ACCORDS_MCP_AUDIT_RETENTION")
	c.AuditOnFailure = get("ACCORDS_MCP_AUDIT_ON_FAILURE")
	c.AuditKey = get("ACCORDS_MCP_AUDIT_KEY")
	c.AuditCheckpoint = get("ACCORDS_MCP_AUDIT_CHECKPOINT")
	c.AuditAnchor = get("ACCORDS_MCP_AUDIT_ANCHOR")
	c.AuditWitness = get("ACCORDS_MCP_AUDIT_WITNESS")
	c.AuditTenantFloor = get("ACCORDS_MCP_AUDIT_TENANT_FLOOR")
	if v := get("ACCORDS_MCP_AUDIT_REFUSAL_WINDOW"); v != "" {
		switch d, err := time.ParseDuration(v); {
		case strings.EqualFold(v, "off") || v == "0":
			c.AuditRefusalWindow = -1
		case err != nil || d < time.Second:
			return c, fmt.Errorf("ACCORDS_MCP_AUDIT_REFUSAL_WINDOW must be a duration of at least 1s such as 60s, or off, got %q", v)
		default:
			c.AuditRefusalWindow = d
		}
	}
	if c.PprofAddr = get("ACCORDS_MCP_PPROF"); c.PprofAddr != "" {
		if err := profiling.CheckAddr(c.PprofAddr); err != nil {
			return c, fmt.Errorf("ACCORDS_MCP_PPROF: %w", err)
		}
	}
	if err := c.readLimits(get); err != nil {
		return c, err
	}
	if err := c.readStore(get); err != nil {
		return c, err
	}
	for _, name := range SplitList(get("ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW")) {
		if err := checkTokenVarName(name); err != nil {
			return c, fmt.Errorf("ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW: %w", err)
		}
		c.RemoteTokenEnvAllow = append(c.RemoteTokenEnvAllow, name)
	}
	if err := c.readTransportLimits(get); err != nil {
		return c, err
	}
	if err := c.resolveVault(get); err != nil {
		return c, err
	}
	if err := checkBaseURL(c.VaultBaseURL); err != nil {
		return c, err
	}
	tr, err := readTracing(get)
	if err != nil {
		return c, err
	}
	c.Tracing = tr
	return c, nil
}

// EnvVarName is the shape of an environment variable's name.
var EnvVarName = ident.New("A-Za-z_", "A-Za-z0-9_", 128)

// ServerOwnedVar reports whether name is one of the server's own variables
// (its configuration and its secrets: ACCORDS_MCP_*, VC_*,
// VAULT_UNIX_SOCKET), which a catalog source may never send anywhere.
func ServerOwnedVar(name string) bool {
	up := strings.ToUpper(name)
	return strings.HasPrefix(up, "ACCORDS_MCP_") || strings.HasPrefix(up, "VC_") || up == "VAULT_UNIX_SOCKET"
}

// checkTokenVarName checks one entry of ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW:
// an environment variable's name, not one of the server's own.
func checkTokenVarName(name string) error {
	if !EnvVarName.Valid(name) {
		return fmt.Errorf("%q is not an environment variable name (%s)", name, EnvVarName)
	}
	if ServerOwnedVar(name) {
		return fmt.Errorf("%s is one of the server's own variables and can never be sent to a catalog source", name)
	}
	return nil
}

// resolvePaths defaults the database path and roots the HTTP path.
func (c *Config) resolvePaths() error {
	if c.DBPath == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("no ACCORDS_MCP_DB and no user config dir: %w", err)
		}
		c.DBPath = filepath.Join(dir, "accords-mcp", "accords.db")
	}
	if c.HTTPPath == "" {
		c.HTTPPath = DefaultHTTPPath
	}
	if c.AuditKeyFile == "" {
		// Outside the database folder by default: its holder must not be
		// able to re-sign the log.
		if dir, err := os.UserConfigDir(); err == nil {
			c.AuditKeyFile = filepath.Join(dir, "accords-mcp-audit", "audit.key")
		}
	}
	if !strings.HasPrefix(c.HTTPPath, "/") {
		c.HTTPPath = "/" + c.HTTPPath
	}
	return nil
}

// readLimits reads the size, time and retention limits; the first bad
// one, in this order, is the error.
func (c *Config) readLimits(get func(string) string) error {
	if err := positiveInt64(get, "ACCORDS_MCP_HTTP_MAX_BODY_BYTES", &c.MaxBodyBytes); err != nil {
		return err
	}
	if v := get("ACCORDS_MCP_POLICY_HASH_TTL"); v != "" {
		d, err := parseTTL(v)
		if err != nil {
			return err
		}
		c.PolicyHashTTL = d
	}
	if err := setVar(get, "ACCORDS_MCP_DAEMON_IDLE_TIMEOUT", &c.DaemonIdleTimeout, durationFrom(time.Second), "a duration of at least 1s such as 90s or 10m"); err != nil {
		return err
	}
	if err := setVar(get, "ACCORDS_MCP_HANDLE_RETENTION", &c.HandleRetention, durationFrom(1), "a positive duration such as 72h"); err != nil {
		return err
	}
	if err := setVar(get, "ACCORDS_MCP_TASK_POLL_INTERVAL", &c.TaskPollInterval, durationFrom(MinTaskPoll), fmt.Sprintf("a duration of at least %s such as 2s", MinTaskPoll)); err != nil {
		return err
	}
	if err := setVar(get, "ACCORDS_MCP_TASK_MAX_WORKING", &c.TaskMaxWorking, intIn(1, MaxTaskMaxWorking), fmt.Sprintf("a whole number from 1 to %d", MaxTaskMaxWorking)); err != nil {
		return err
	}
	for _, lim := range []struct {
		name string
		dst  *int64
	}{
		{"ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES", &c.VaultMaxResponseBytes},
		{"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES", &c.RemoteMaxIndexBytes},
		{"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES", &c.RemoteMaxBundleBytes},
	} {
		if err := positiveInt64(get, lim.name, lim.dst); err != nil {
			return err
		}
	}
	return setVar(get, "ACCORDS_MCP_REMOTE_TIMEOUT_MS", &c.RemoteTimeoutMS, intIn(1, math.MaxInt), "a positive integer")
}

// readTransportLimits reads the HTTP and stdio limits and the allowed
// browser origins.
func (c *Config) readTransportLimits(get func(string) string) error {
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{"ACCORDS_MCP_HTTP_HEADER_TIMEOUT", &c.HTTPHeaderTimeout},
		{"ACCORDS_MCP_HTTP_BODY_TIMEOUT", &c.HTTPBodyTimeout},
		{"ACCORDS_MCP_HTTP_IDLE_TIMEOUT", &c.HTTPIdleTimeout},
	} {
		if err := setVar(get, d.name, d.dst, durationFrom(1), "a positive duration such as 30s"); err != nil {
			return err
		}
	}
	for _, n := range []struct {
		name string
		dst  *int
	}{
		{"ACCORDS_MCP_HTTP_MAX_CONNS", &c.HTTPMaxConns},
		{"ACCORDS_MCP_HTTP_MAX_ANON_TENANTS", &c.MaxAnonTenants},
		{"ACCORDS_MCP_HTTP_MAX_BATCH", &c.MaxBatch},
		{"ACCORDS_MCP_STDIO_MAX_MESSAGE_BYTES", &c.StdioMaxMessageBytes},
	} {
		if err := setVar(get, n.name, n.dst, intIn(1, math.MaxInt), "a positive integer"); err != nil {
			return err
		}
	}
	if err := positiveInt64(get, "ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES", &c.MaxBundleBytes); err != nil {
		return err
	}
	for _, raw := range SplitList(get("ACCORDS_MCP_HTTP_ALLOWED_ORIGINS")) {
		o, err := NormalizeOrigin(raw)
		if err != nil {
			return fmt.Errorf("ACCORDS_MCP_HTTP_ALLOWED_ORIGINS: %w", err)
		}
		c.AllowedOrigins = append(c.AllowedOrigins, o)
	}
	return nil
}

// NormalizeOrigin checks a browser origin and writes it as browsers send
// it: lower-case scheme://host, the port only when not the default.
func NormalizeOrigin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(raw), "/"))
	if err != nil {
		return "", fmt.Errorf("%q is not an origin: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin: write scheme://host[:port], e.g. http://localhost:6274", raw)
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// checkBaseURL refuses a VC_BASE_URL that no request could use (the
// session service takes the same schemes) and one carrying credentials:
// they would be sent to Vault and shown in session_status (the token
// belongs in VC_AGENT_TOKEN).
func checkBaseURL(raw string) error {
	lower := strings.ToLower(raw)
	for _, prefix := range []string{"unix://", "http+unix://"} {
		if strings.HasPrefix(lower, prefix) {
			if strings.Trim(raw[len(prefix):], "/") == "" {
				return fmt.Errorf("VC_BASE_URL must name the socket path, e.g. unix:///run/vaultclaw.sock, got %q", raw)
			}
			return nil
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("VC_BASE_URL must be an http, https, unix or http+unix URL such as http://127.0.0.1:8080, got %q", raw)
	}
	if u.User != nil {
		return fmt.Errorf("VC_BASE_URL must not contain credentials (user:password@); put the agent token in VC_AGENT_TOKEN")
	}
	return nil
}

// LogLevels are the values ACCORDS_MCP_LOG_LEVEL takes.
var LogLevels = []string{"debug", "info", "warn", "error"}

// ParseLogLevel reads ACCORDS_MCP_LOG_LEVEL ("" is info).
func ParseLogLevel(v string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("ACCORDS_MCP_LOG_LEVEL must be one of %s, got %q", strings.Join(LogLevels, ", "), v)
}

// CheckListenAddr checks an HTTP listen address: host:port with a numeric
// port (the host may be empty for every interface), so that a typo is
// reported as such and not as a question of authentication.
func CheckListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not a listen address: write host:port, e.g. 127.0.0.1:8790", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q is not a listen address: the port must be a number from 0 to 65535", addr)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q is not a listen address: write host:port, e.g. 127.0.0.1:8790", addr)
	}
	return nil
}

// setVar sets *dst from the variable name when it is set; a value parse
// refuses is an error saying the variable must be want.
func setVar[T any](get func(string) string, name string, dst *T, parse func(string) (T, bool), want string) error {
	v := get(name)
	if v == "" {
		return nil
	}
	x, ok := parse(v)
	if !ok {
		return fmt.Errorf("%s must be %s, got %q", name, want, v)
	}
	*dst = x
	return nil
}

func isBool(v string) (bool, bool) {
	b, err := strconv.ParseBool(v)
	return b, err == nil
}

// durationFrom parses a Go duration of at least least.
func durationFrom(least time.Duration) func(string) (time.Duration, bool) {
	return func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= least
	}
}

// intIn parses a whole number from lo to hi.
func intIn(lo, hi int) func(string) (int, bool) {
	return func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= lo && n <= hi
	}
}

// positiveInt64 sets *dst from the variable name when it is set; a value
// that is not a positive integer is an error.
func positiveInt64(get func(string) string, name string, dst *int64) error {
	return setVar(get, name, dst, func(v string) (int64, bool) {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil && n > 0
	}, "a positive integer")
}

// parseTTL reads the policy-hash TTL: a Go duration or whole seconds, not
// negative.
func parseTTL(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("ACCORDS_MCP_POLICY_HASH_TTL must be a duration such as 10m or whole seconds, got %q", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, fmt.Errorf("ACCORDS_MCP_POLICY_HASH_TTL must not be negative, got %q", v)
	}
	return d, nil
}

// resolveVault applies the socket fallback, the timeout and the default
// base URL of the environment's Vault session.
func (c *Config) resolveVault(get func(string) string) error {
	if c.VaultUnixSocket == "" {
		c.VaultUnixSocket = get("VAULT_UNIX_SOCKET")
	}
	if err := setVar(get, "VC_TIMEOUT_MS", &c.VaultTimeoutMS, intIn(MinVaultTimeoutMS, MaxVaultTimeoutMS),
		fmt.Sprintf("a whole number of milliseconds from %d to %d", MinVaultTimeoutMS, MaxVaultTimeoutMS)); err != nil {
		return err
	}
	if c.VaultBaseURL == "" {
		if c.VaultUnixSocket != "" {
			c.VaultBaseURL = "http://localhost"
		} else {
			c.VaultBaseURL = DefaultBaseURL
		}
	}
	return nil
}

// KeyFile is the path of the session key file beside the database.
func (c Config) KeyFile() string {
	return filepath.Join(filepath.Dir(c.DBPath), "accords.key")
}

// DataDir is the database folder.
func (c Config) DataDir() string { return filepath.Dir(c.DBPath) }

// IndexDir is the bleve index folder beside the database.
func (c Config) IndexDir() string { return c.DBPath + ".index" }

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// DaemonWide are the settings one daemon applies to every client it
// serves, by variable name: a launch that attaches to a running daemon
// with other values gets them ignored (and is told which). The per-client
// settings (read-only, toolsets, the VC_* session) are not among them.
func (c Config) DaemonWide() map[string]string {
	return map[string]string{
		"ACCORDS_MCP_SECRET_KEY":               c.SecretKey,
		"ACCORDS_MCP_POLICY_FILE":              c.PolicyFile,
		"ACCORDS_MCP_AUDIT_RETENTION":          c.AuditRetention,
		"ACCORDS_MCP_AUDIT_TENANT_FLOOR":       c.AuditTenantFloor,
		"ACCORDS_MCP_AUDIT_REFUSAL_WINDOW":     c.AuditRefusalWindow.String(),
		"ACCORDS_MCP_AUDIT_ON_FAILURE":         c.AuditOnFailure,
		"ACCORDS_MCP_REMOTE_MAX_INDEX_BYTES":   strconv.FormatInt(c.RemoteMaxIndexBytes, 10),
		"ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES":  strconv.FormatInt(c.RemoteMaxBundleBytes, 10),
		"ACCORDS_MCP_REMOTE_TIMEOUT_MS":        strconv.Itoa(c.RemoteTimeoutMS),
		"ACCORDS_MCP_REMOTE_TOKEN_ENV_ALLOW":   strings.Join(c.RemoteTokenEnvAllow, ","),
		"ACCORDS_MCP_POLICY_HASH_TTL":          c.PolicyHashTTL.String(),
		"ACCORDS_MCP_HANDLE_RETENTION":         c.HandleRetention.String(),
		"ACCORDS_MCP_TASK_POLL_INTERVAL":       c.TaskPollInterval.String(),
		"ACCORDS_MCP_VAULT_MAX_RESPONSE_BYTES": strconv.FormatInt(c.VaultMaxResponseBytes, 10),
		"OTEL_EXPORTER_OTLP_ENDPOINT":          c.Tracing.TracesURL,
		"OTEL_SERVICE_NAME":                    c.Tracing.ServiceName,
	}
}

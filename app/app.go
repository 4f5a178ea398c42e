// Package app wires configuration, storage and domain services into the
// servers the command runs. It is the composition root: nothing else
// constructs services.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/builtin"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/platform/reqlog"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// App holds the open database and every service built on it.
type App struct {
	Config   config.Config
	Logger   *slog.Logger
	DB       *store.DB
	Keys     *keyring.Keyring
	Sessions *session.Service
	// Vault is the shared Vaultclaw client (pooled connections).
	Vault *vault.Client
	// ModuleHash is the module-hash preflight with its bbolt policy-hash cache.
	ModuleHash *vault.ModuleHash
	Catalog    *catalog.Service
	Remote     *remote.Service
	// Handles are the durable approval handles; Execution runs execute-job,
	// plans and approval waits.
	Handles   *approval.Store
	Execution *execution.Service
	Router    *routing.Resolver
	Passport  *passport.Service
	Registry  *tools.Registry
	Builder   *transport.Builder
	// Audit is the receipt log; Gateway applies policy, rate limits and
	// audit to every server the app builds.
	Audit   *audit.Log
	Gateway *gateway.Gateway
	// Metrics are the process's Prometheus series (GET /metrics).
	Metrics *metrics.Server
}

// Open opens (creating and migrating) the database and builds the services.
func Open(cfg config.Config, logger *slog.Logger) (*App, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db, err := store.Open(cfg.DBPath, store.Options{})
	if err != nil {
		return nil, err
	}
	if db.BackupPath != "" {
		logger.Info("database migrated; previous file copied aside", "backup", db.BackupPath)
	}
	a := &App{Config: cfg, Logger: logger, DB: db}
	if err := a.init(); err != nil {
		if a.Catalog != nil {
			a.Catalog.Close()
		}
		db.Close()
		return nil, err
	}
	return a, nil
}

// openCatalog opens the cookbook catalog and its index (checked against the
// catalog revision, rebuilt or caught up when needed) and seeds the
// built-in cookbooks.
func (a *App) openCatalog() error {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, a.DB, a.Config.IndexDir(), catalog.Options{Logger: a.Logger})
	if err != nil {
		return fmt.Errorf("open cookbook catalog: %w", err)
	}
	a.Catalog = cat
	if rep := cat.Report(); rep.Rebuilt || rep.CaughtUp > 0 {
		a.Logger.Info("catalog index repaired", "rebuilt", rep.Rebuilt, "reason", rep.Reason, "caught_up_revisions", rep.CaughtUp, "rev", rep.Rev)
	}
	bundles, err := builtin.Bundles()
	if err != nil {
		return fmt.Errorf("load built-in cookbooks: %w", err)
	}
	seed, err := cat.SeedBuiltins(ctx, bundles)
	if err != nil {
		return err
	}
	if !seed.Unchanged {
		a.Logger.Info("built-in cookbooks seeded", "seeded", seed.Seeded, "updated", seed.Updated, "kept_user_versions", seed.Kept)
	}
	return nil
}

func (a *App) init() error {
	keys, err := keyring.Load(a.Config.SecretKey, a.Config.KeyFile())
	if err != nil {
		return fmt.Errorf("load secret key: %w", err)
	}
	a.Keys = keys
	if err := a.openCatalog(); err != nil {
		return err
	}
	a.Sessions = session.New(a.DB, keys, session.Defaults{
		Token:      a.Config.VaultToken,
		BaseURL:    a.Config.VaultBaseURL,
		TimeoutMS:  a.Config.VaultTimeoutMS,
		UnixSocket: a.Config.VaultUnixSocket,
	})
	a.Metrics = metrics.New()
	a.Vault = vault.New(vault.Options{MaxResponseBytes: a.Config.VaultMaxResponseBytes, Logger: a.Logger, Observe: a.Metrics.ObserveVaultRequest})
	cacheDB := a.DB
	if a.Config.PolicyHashTTL == 0 {
		cacheDB = nil // ACCORDS_MCP_POLICY_HASH_TTL=0: no caching
	}
	a.ModuleHash = vault.NewModuleHash(a.Vault, vault.NewPolicyHashCache(cacheDB, a.Config.PolicyHashTTL))
	a.Remote = remote.New(a.DB, remote.FromCatalog(a.Catalog), remote.Options{
		MaxIndexBytes:  a.Config.RemoteMaxIndexBytes,
		MaxBundleBytes: a.Config.RemoteMaxBundleBytes,
		Timeout:        time.Duration(a.Config.RemoteTimeoutMS) * time.Millisecond,
		TokenEnvAllow:  a.Config.RemoteTokenEnvAllow,
	})
	a.Handles = approval.NewStore(a.DB, a.Config.HandleRetention)
	if _, err := a.Handles.Prune(); err != nil {
		a.Logger.Warn("pruning approval handles failed", "error", err)
	}
	a.Execution = &execution.Service{Vault: a.Vault, ModuleHash: a.ModuleHash, Handles: a.Handles}
	routes, err := routing.Default()
	if err != nil {
		return fmt.Errorf("load route registry: %w", err)
	}
	// The search fallback reads the catalog's bleve index (latest versions).
	a.Router = routing.New(routes, routing.CatalogSearcher(a.Catalog))
	a.Passport = &passport.Service{Sessions: a.Sessions, Vault: a.Vault, ModuleHash: a.ModuleHash, Exec: a.Execution}
	retention, err := audit.ParseRetention(a.Config.AuditRetention)
	if err != nil {
		return fmt.Errorf("ACCORDS_MCP_AUDIT_RETENTION: %w", err)
	}
	hasher, err := audit.NewHasher(keys.Derive("audit-hmac"))
	if err != nil {
		return err
	}
	if a.Audit, err = audit.Open(a.DB, audit.Options{Retention: retention}); err != nil {
		return err
	}
	reg, err := tools.All(tools.Deps{
		Sessions:  a.Sessions,
		Vault:     a.Vault,
		Catalog:   a.Catalog,
		Remote:    a.Remote,
		Execution: a.Execution,
		Handles:   a.Handles,
		Router:    a.Router,
		Passport:  a.Passport,
		Audit:     a.Audit,
	})
	if err != nil {
		a.Audit.Close()
		return err
	}
	a.Registry = reg
	a.Metrics.Gauge(metrics.NameDBSize, "Size of the bbolt database file in bytes.", metrics.FileSizeGauge(a.Config.DBPath))
	a.Metrics.Gauge(metrics.NameIndexDocs, "Documents (cookbook entries) in the search index.", func() (float64, bool) {
		docs, _, _, err := a.Catalog.IndexStats()
		return float64(docs), err == nil
	})
	a.Metrics.Gauge(metrics.NamePendingHandle, "Approval handles not yet decided (all scopes).", func() (float64, bool) {
		n, err := a.Handles.CountPending()
		return float64(n), err == nil
	})
	known := func(name string) bool { _, ok := reg.Lookup(name); return ok }
	a.Builder = &transport.Builder{
		Logger:       a.Logger,
		SDKLogger:    a.sdkLogger(),
		Instructions: routes.Instructions(a.Config.DynamicToolsets),
		// Outside the gateway, so calls it refuses are counted too.
		Outer: []mcp.Middleware{transport.Observe(a.Metrics, transport.ObserveOptions{Known: known, Logger: a.Logger})},
	}
	a.Gateway, err = gateway.New(gateway.Options{
		Registry:        reg,
		Builder:         a.Builder,
		PolicyFile:      a.Config.PolicyFile,
		ReadOnly:        a.Config.ReadOnly,
		Toolsets:        a.Config.Toolsets,
		DynamicToolsets: a.Config.DynamicToolsets,
		Audit:           a.Audit,
		Hasher:          hasher,
		OnAuditFailure:  a.Config.AuditOnFailure,
		Logger:          a.Logger,
	})
	if err != nil {
		a.Audit.Close()
		return err
	}
	return nil
}

// sdkLogger is the logger handed to the go-sdk: it logs every Streamable
// HTTP request at INFO, so it is held at WARN unless the level is debug.
func (a *App) sdkLogger() *slog.Logger {
	if a.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return a.Logger
	}
	return slog.New(reqlog.MinLevel(a.Logger.Handler(), slog.LevelWarn))
}

// Close flushes the audit log, closes the Vault and remote clients and the
// catalog index, then the database.
func (a *App) Close() error {
	var err error
	if a.Audit != nil {
		a.Audit.Close()
	}
	if a.Vault != nil {
		a.Vault.Close()
	}
	if a.Remote != nil {
		a.Remote.Close()
	}
	if a.Catalog != nil {
		err = a.Catalog.Close()
	}
	if derr := a.DB.Close(); err == nil {
		err = derr
	}
	return err
}

// MCPServer builds the stdio server: every tool the read-only and toolsets
// settings leave, behind the gateway (capabilities, rate limits, receipts).
func (a *App) MCPServer() *mcp.Server { return a.Gateway.StdioServer() }

// Reload re-reads the policy file (the serve command calls it on SIGHUP).
func (a *App) Reload() error { return a.Gateway.Reload() }

// ServeStdio serves MCP on in/out until in ends or ctx is cancelled.
func (a *App) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := a.MCPServer().Run(ctx, &transport.StdioTransport{In: in, Out: out})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// HTTPHandler is the bridge handler.
func (a *App) HTTPHandler() http.Handler {
	h := transport.NewHTTPHandler(transport.HTTPOptions{
		Path:                a.Config.HTTPPath,
		MaxBodyBytes:        a.Config.MaxBodyBytes,
		RequireTenantHeader: a.Config.RequireTenantHeader,
		GetServer:           a.Gateway.GetServer,
		Wrap:                a.Gateway.Wrap,
		Health:              a.DB.Ping,
		Logger:              a.sdkLogger(),
		// /metrics is guarded like the MCP endpoint: open while the policy
		// has no callers (loopback only), a caller's bearer token otherwise.
		Extra: map[string]http.Handler{"/metrics": a.Gateway.Wrap(a.Metrics.Registry.Handler())},
	})
	return reqlog.HTTP(h, a.Logger)
}

// ServeHTTP listens on addr until ctx is cancelled, then stops accepting and
// lets in-flight requests finish within config.ShutdownGrace.
func (a *App) ServeHTTP(ctx context.Context, addr string, ready func(net.Addr)) error {
	if err := a.Gateway.CheckListen(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{
		Handler:           a.HTTPHandler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	if ready != nil {
		ready(ln.Addr())
	}
	a.Logger.Info("HTTP bridge listening", "addr", ln.Addr().String(), "path", a.Config.HTTPPath)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Logger.Info("shutting down: no new requests; in-flight calls get a grace period", "grace", config.ShutdownGrace.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), config.ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		a.Logger.Warn("HTTP shutdown did not finish in time", "error", err)
	}
	return nil
}

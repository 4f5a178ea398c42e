// Package app wires configuration, storage and domain services into the
// servers the command runs. It is the composition root: nothing else
// constructs services.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/builtin"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/domain/routing/passport"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/audit/witness"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/gate"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/platform/lifecycle"
	"github.com/accordsai/accords-mcp/platform/metrics"
	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/accordsai/accords-mcp/platform/reqlog"
	"github.com/accordsai/accords-mcp/platform/tracing"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/accordsai/accords-mcp/transport/tasks"
	"github.com/accordsai/accords-mcp/transport/urlelicit"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/netutil"
)

// App holds the open database and every service built on it.
type App struct {
	Config config.Config
	Logger *slog.Logger
	DB     *store.DB
	// Fleet is this replica's membership among those sharing an etcd
	// store (nil on bbolt: one process).
	Fleet    *store.Fleet
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
	// Audit is the receipt log (signed with AuditKey); Gateway applies
	// policy, rate limits, rules and audit to every server the app builds.
	Audit    *audit.Log
	AuditKey *audit.Key
	Gateway  *gateway.Gateway
	// Metrics are the process's Prometheus series (GET /metrics).
	Metrics *metrics.Server
	// Tracing exports spans of tool calls and Vault requests over OTLP
	// when OTEL_EXPORTER_OTLP_ENDPOINT is set; nil is tracing off.
	Tracing *tracing.Provider
	// TaskStore holds the tasks of the MCP Tasks extension; Tasks is the
	// extension, which follows them until Vault decides.
	TaskStore *task.Store
	Tasks     *tasks.Extension
	// elicit sends the person to Vault's approval page (URL elicitation).
	elicit *urlelicit.Elicitor

	// Gate counts tool calls and operator requests in flight; a restore
	// through the daemon holds new ones while it swaps the file, and
	// shutdown drains it.
	Gate *gate.Gate

	// audit is what the gateway and the tools write to and read from: it
	// follows the log across a restore (Audit is replaced then).
	audit     auditRef
	auditOpts audit.Options
	// listenAddr is the HTTP bridge's bound address, once it listens.
	listenAddr atomic.Value
	// restoreMu lets one restore run at a time.
	restoreMu sync.Mutex
	// clients are the attached stdio clients, by session id.
	clients clientRegistry
	// Drain is the shutdown signal: long waits answer at once when it
	// begins (ServeHTTP and ServeStdio begin it when their context ends).
	Drain *lifecycle.Drain
}

// Option adjusts how Open builds the app.
type Option func(*openOptions)

type openOptions struct {
	tracer trace.TracerProvider
}

// WithTracerProvider makes the app trace through tp (tests pass one with an
// in-memory span recorder) instead of the OTLP exporter the configuration
// may name.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *openOptions) { o.tracer = tp }
}

// Open opens (creating and migrating) the database and builds the services.
func Open(cfg config.Config, logger *slog.Logger, options ...Option) (*App, error) {
	var oo openOptions
	for _, o := range options {
		o(&oo)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The server writes its state, key, index and socket in the database
	// folder: one that other users may write to is refused before
	// anything in it is touched (the store creates a missing one 0700).
	if err := privdir.Check(filepath.Dir(cfg.DBPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// A backup or restore killed midway leaves a temporary copy of the
	// database (tens of megabytes) beside it.
	removed, err := backup.CleanStale(filepath.Dir(cfg.DBPath))
	for _, l := range removed {
		logger.Info("removed a temporary file left by a killed backup or restore", "path", l.Path, "bytes", l.Size)
	}
	if err != nil {
		logger.Warn("could not remove every leftover temporary file", "error", err.Error())
	}
	db, err := OpenStore(cfg, store.Options{LockTimeout: cfg.DBLockTimeout})
	if err != nil {
		return nil, err
	}
	if db.BackupPath != "" {
		logger.Info("database migrated; previous file copied aside", "backup", db.BackupPath)
	}
	a := &App{Config: cfg, Logger: logger, DB: db, Gate: &gate.Gate{}}
	if oo.tracer != nil {
		a.Tracing = tracing.FromTracerProvider(oo.tracer)
	} else if a.Tracing, err = tracing.Start(cfg.Tracing, logger); err != nil {
		db.Close()
		return nil, fmt.Errorf("start tracing: %w", err)
	}
	if err := a.init(); err != nil {
		if a.Catalog != nil {
			a.Catalog.Close()
		}
		_ = a.Tracing.Shutdown()
		db.Close()
		return nil, err
	}
	if cfg.Tracing.Enabled() && oo.tracer == nil {
		logger.Info("tracing on: spans are exported over OTLP", "endpoint", cfg.Tracing.TracesURL)
	}
	return a, nil
}

// openCatalog opens the cookbook catalog and its index (checked against the
// catalog revision, rebuilt or caught up when needed) and seeds the
// built-in cookbooks.
func (a *App) openCatalog() error {
	ctx := context.Background()
	maxBundle := a.Config.MaxBundleBytes
	if a.DB.Kind() == store.KindEtcd && maxBundle > store.EtcdMaxBundleBytes {
		// A bundle and its list row go in one etcd request (1.5 MiB).
		a.Logger.Info("cookbook bundles are capped at the etcd store's limit", "max_bundle_bytes", store.EtcdMaxBundleBytes)
		maxBundle = store.EtcdMaxBundleBytes
	}
	// A rebuild runs in the background: the server answers at once (a
	// large catalog takes longer to index than many clients wait for
	// initialize); searches wait for the index.
	cat, err := catalog.Open(ctx, a.DB, a.Config.IndexDir(), catalog.Options{Logger: a.Logger, MaxBundleBytes: maxBundle, BackgroundRebuild: true})
	if err != nil {
		return fmt.Errorf("open cookbook catalog: %w", err)
	}
	a.Catalog = cat
	// Other replicas' cookbook writes reach this index through a watch.
	cat.Follow(ctx)
	if rep := cat.Report(); (rep.Rebuilt && !rep.Background) || rep.CaughtUp > 0 {
		a.Logger.Info("catalog index repaired", "rebuilt", rep.Rebuilt, "reason", rep.Reason, "caught_up_revisions", rep.CaughtUp, "rev", rep.Rev)
	}
	return a.seedBuiltins(ctx)
}

// seedBuiltins stores the built-in cookbooks the catalog lacks or holds
// in an older version (at start, and after a restore).
func (a *App) seedBuiltins(ctx context.Context) error {
	source, err := builtinSource()
	if err != nil {
		return fmt.Errorf("read built-in cookbooks: %w", err)
	}
	seed, err := a.Catalog.SeedBuiltinsFrom(ctx, source, func() ([]*catalog.Bundle, error) {
		bundles, err := builtin.Bundles()
		if err != nil {
			return nil, fmt.Errorf("load built-in cookbooks: %w", err)
		}
		return bundles, nil
	})
	if err != nil {
		return err
	}
	if !seed.Unchanged {
		a.Logger.Info("built-in cookbooks seeded", "seeded", seed.Seeded, "updated", seed.Updated, "kept_user_versions", seed.Kept)
	}
	return nil
}

// builtinSource names the built-in set this binary seeds: its embedded
// files, and the binary itself, whose code decides how they are prepared
// (a new build loads the set once, then starts skip it).
func builtinSource() (string, error) {
	files, err := builtin.Fingerprint()
	if err != nil {
		return "", err
	}
	b := version.Build()
	return fmt.Sprintf("%s %s %s %t", files, b.Version, b.Commit, b.Modified), nil
}

func (a *App) init() error {
	if err := a.checkKeyFile(); err != nil {
		return err
	}
	keys, err := keyring.Load(a.Config.SecretKey, a.Config.KeyFile())
	if err != nil {
		return fmt.Errorf("load secret key: %w", err)
	}
	a.Keys = keys
	if err := a.openCatalog(); err != nil {
		return err
	}
	if a.DB.Kind() == store.KindEtcd {
		// Rate limits are shared out among the live replicas.
		host, _ := os.Hostname()
		fleet, err := a.DB.JoinFleet(fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(randomID())), store.FleetOptions{Logger: a.Logger})
		if err != nil {
			return err
		}
		a.Fleet = fleet
	}
	a.Sessions = session.New(a.DB, keys, session.Defaults{
		Token:      a.Config.VaultToken,
		BaseURL:    a.Config.VaultBaseURL,
		TimeoutMS:  a.Config.VaultTimeoutMS,
		UnixSocket: a.Config.VaultUnixSocket,
	})
	a.Metrics = metrics.New()
	a.Vault = vault.New(vault.Options{MaxResponseBytes: a.Config.VaultMaxResponseBytes, Logger: a.Logger, Observe: a.Metrics.ObserveVaultRequest, Tracer: a.Tracing.Tracer()})
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
	a.Execution = &execution.Service{Vault: a.Vault, ModuleHash: a.ModuleHash, Handles: a.Handles, Polls: approval.NewPolls()}
	routes, err := routing.Default()
	if err != nil {
		return fmt.Errorf("load route registry: %w", err)
	}
	// The search fallback reads the catalog's bleve index (latest versions).
	a.Router = routing.New(routes, routing.CatalogSearcher(a.Catalog))
	a.Passport = &passport.Service{Sessions: a.Sessions, Vault: a.Vault, ModuleHash: a.ModuleHash, Exec: a.Execution}
	if err := a.openAudit(); err != nil {
		return err
	}
	hasher := a.AuditKey.Hasher()
	a.audit.set(a.Audit)
	reg, err := tools.All(tools.Deps{
		Sessions:  a.Sessions,
		Vault:     a.Vault,
		Catalog:   a.Catalog,
		Remote:    a.Remote,
		Execution: a.Execution,
		Handles:   a.Handles,
		Router:    a.Router,
		Passport:  a.Passport,
		Audit:     &a.audit,
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
	if a.Fleet != nil {
		a.Metrics.Gauge(metrics.NameFleetRegistered, "1 while this replica's etcd membership lease is alive, 0 while it registers again after the lease lapsed.", func() (float64, bool) {
			return b2f(a.Fleet.State().Registered), true
		})
		a.Metrics.Gauge(metrics.NameFleetReplicas, "Live replicas this one counts (each enforces its share of every rate limit).", func() (float64, bool) {
			return float64(a.Fleet.Live()), true
		})
		a.Metrics.Gauge(metrics.NameStoreReachable, "1 while etcd has answered this replica within the last "+store.FleetStale.String()+".", func() (float64, bool) {
			return b2f(a.Fleet.State().Reachable), true
		})
	}
	if err := a.openTasks(); err != nil {
		a.Audit.Close()
		return err
	}
	a.Drain = lifecycle.NewDrain()
	a.Builder = &transport.Builder{
		Logger:              a.Logger,
		SDKLogger:           a.sdkLogger(),
		Instructions:        routes.Instructions(false),
		DynamicInstructions: routes.Instructions(true),
		Extensions:          []transport.Extension{a.Tasks},
		WrapTool:            a.elicit.Wrap,
	}
	a.Gateway, err = gateway.New(gateway.Options{
		Registry:        reg,
		Servers:         a.Builder,
		PolicyFile:      a.Config.PolicyFile,
		ReadOnly:        a.Config.ReadOnly,
		Toolsets:        a.Config.Toolsets,
		Listed:          tools.Agent,
		DynamicToolsets: a.Config.DynamicToolsets,
		Audit:           &a.audit,
		Hasher:          hasher,
		OnAuditFailure:  a.Config.AuditOnFailure,
		Logger:          a.Logger,
		Tracer:          a.Tracing.Tracer(),

		MaxAnonymousTenants: a.Config.MaxAnonTenants,
		StoredTenants:       a.storedTenants,
		Replicas:            a.Fleet.Live,
		RefusalWindow:       a.Config.AuditRefusalWindow,
	})
	if err != nil {
		a.Audit.Close()
		return err
	}
	// Servers are built on demand, once the list is complete.
	a.Builder.Middleware = a.middleware()
	a.Tasks.SetGate(a.Gateway)
	if err := a.Tasks.Start(); err != nil {
		a.Logger.Warn("resuming tasks failed", "error", err)
	}
	return nil
}

// openTasks opens the task store (pruned like the handles) and the Tasks
// extension; its pollers start once the gateway exists.
func (a *App) openTasks() error {
	a.TaskStore = task.NewStore(a.DB, a.Config.HandleRetention)
	if _, err := a.TaskStore.Prune(); err != nil {
		a.Logger.Warn("pruning tasks failed", "error", err)
	}
	var err error
	topts := tasks.Options{
		Store: a.TaskStore, Keys: a.Keys, Handles: a.Handles, Sessions: a.Sessions, Checker: a.Execution,
		Finish: a.finishApproval, PollInterval: a.Config.TaskPollInterval, MaxWorking: a.Config.TaskMaxWorking, Logger: a.Logger,
	}
	if a.Fleet != nil {
		// One replica follows each task; another takes over when it dies;
		// listeners on every replica hear of its changes.
		topts.Claim, topts.Release = a.Fleet.Claim, a.Fleet.Release
		topts.Follow = func(ctx context.Context, changed func()) {
			from, err := a.DB.Revision(ctx)
			if err != nil {
				a.Logger.Warn("task changes of other replicas are not followed", "error", err.Error())
				return
			}
			a.DB.Follow(ctx, store.BucketTasks, from, func(int64) { changed() }, func(int64) { changed() })
		}
	}
	a.Tasks, err = tasks.New(topts)
	if err != nil {
		return err
	}
	// Claims go with a lapsed membership lease: once the replica has
	// registered again, it claims its tasks again.
	a.Fleet.OnRejoin(a.Tasks.Reclaim)
	a.elicit, err = urlelicit.New(urlelicit.Options{Keys: a.Keys, Sessions: a.Sessions, Awaiter: a.Execution,
		Finish: a.finishApproval, Logger: a.Logger})
	return err
}

// finishApproval is the answer of a handed-off call once Vault has decided:
// the passport workflow resumes its run, the Vault tools build theirs from
// the decided job or run.
func (a *App) finishApproval(ctx context.Context, scope string, c approval.Continuation, res approval.WaitResult) envelope.Envelope {
	if c.Tool == passport.ToolName {
		r, err := a.Passport.Finish(ctx, scope, c, res)
		return tools.Finished(r.Data, r.RequestID, r.HTTPStatus, err)
	}
	out, err := a.Execution.Finish(c, res)
	return tools.Finished(out.Data, out.RequestID, out.HTTPStatus, err)
}

// auditVerifyDelay holds the start-up verification of the newest receipts
// back until a client that launched the server has initialized and listed
// the tools, so its hashing does not compete with that handshake.
const auditVerifyDelay = 250 * time.Millisecond

// openAudit loads the audit key (outside the database folder), opens the
// signed log and reports a log that fails its start-up verification.
func (a *App) openAudit() error {
	retention, err := audit.ParseRetention(a.Config.AuditRetention)
	if err != nil {
		return fmt.Errorf("ACCORDS_MCP_AUDIT_RETENTION: %w", err)
	}
	if retention.Floor, err = audit.ParseFloor(a.Config.AuditTenantFloor); err != nil {
		return fmt.Errorf("ACCORDS_MCP_AUDIT_TENANT_FLOOR: %w", err)
	}
	cadence, err := audit.ParseCadence(a.Config.AuditCheckpoint)
	if err != nil {
		return fmt.Errorf("ACCORDS_MCP_AUDIT_CHECKPOINT: %w", err)
	}
	anchor, err := audit.ParseAnchor(a.Config.AuditAnchor)
	if err != nil {
		return err
	}
	witnesses, err := witness.Parse(a.Config.AuditWitness)
	if err != nil {
		return err
	}
	if a.AuditKey, err = audit.LoadKey(AuditKeySpec(a.Config), true); err != nil {
		return fmt.Errorf("load audit key: %w", err)
	}
	// Replicas on one etcd store append to one chain. The newest receipts
	// are verified beside start-up; on bbolt once a launching client's
	// handshake has had the machine (sooner when a write tool, a health
	// check or Close needs the verdict). On etcd at once, while the store
	// is known to answer: a read that fails counts as a damaged log, and
	// an outage during the delay would have been taken for one. A failure
	// is logged as soon as it is found (before Integrity reports it).
	shared := a.DB.Kind() == store.KindEtcd
	opts := audit.Options{Key: a.AuditKey, Retention: retention, Cadence: cadence, Shared: shared,
		OnStartProblem: func(p *audit.Problem) {
			a.Logger.Error("audit log failed verification: write tools are refused and nothing is signed until an operator acknowledges it",
				"kind", p.Kind, "seq", p.Seq, "problem", p.Message, "hint", "accords-mcp audit verify; then accords-mcp audit acknowledge --note TEXT")
		},
		OnPrune:     a.auditPruned,
		CheckAnchor: true,
	}
	if !shared {
		opts.VerifyDelay = auditVerifyDelay
	}
	defer func() { a.auditOpts = opts }()
	for _, w := range witnesses {
		opts.Witnesses = append(opts.Witnesses, witness.NewSubmitter(a.DB, w, nil))
	}
	if anchor != nil || len(witnesses) > 0 {
		opts.Anchor = anchor
		opts.OnAnchor = func(target string, err error) {
			if err != nil {
				a.Metrics.AuditAnchors.Inc("failed")
				a.Logger.Error("audit checkpoint not anchored", "anchor", target, "error", err.Error())
				return
			}
			a.Metrics.AuditAnchors.Inc("ok")
		}
	}
	if a.Audit, err = audit.Open(a.DB, opts); err != nil {
		return err
	}
	a.Metrics.Gauge(metrics.NameAuditBroken, "1 while the audit log has an unacknowledged verification failure.", func() (float64, bool) {
		if a.audit.current() == nil {
			return 0, true
		}
		if p, _ := a.audit.Integrity(); p != nil {
			return 1, true
		}
		return 0, true
	})
	return nil
}

// auditPruned reports a retention pass: a pass the count bound drove
// (a burst of receipts filled it) at WARN with what it removed and kept,
// one the age bound drove at INFO; both in accords_mcp_audit_pruned_receipts_total.
func (a *App) auditPruned(e audit.PruneEvent) {
	a.Metrics.AuditPruned.Add(float64(e.ByCount), "count")
	a.Metrics.AuditPruned.Add(float64(e.ByAge), "age")
	a.Metrics.AuditPruned.Add(float64(e.Dropped), "floor")
	args := []any{"from", e.From, "to", e.To, "by_count", e.ByCount, "by_age", e.ByAge, "floor_dropped", e.Dropped,
		"kept_under_floor", e.Kept, "count_bound", e.MaxCount, "tenant_floor", e.Floor}
	if e.ByCount > 0 {
		a.Logger.Warn("audit retention removed receipts by count: more receipts arrived than ACCORDS_MCP_AUDIT_RETENTION keeps; each tenant's newest receipts under ACCORDS_MCP_AUDIT_TENANT_FLOOR stay",
			append(args, "hint", "accords-mcp audit tail shows who wrote them; raise the count in ACCORDS_MCP_AUDIT_RETENTION to keep more")...)
		return
	}
	a.Logger.Info("audit retention removed receipts", args...)
}

// AuditKeySpec is where the configuration puts the audit key.
func AuditKeySpec(cfg config.Config) audit.KeySpec {
	return audit.KeySpec{Env: cfg.AuditKey, File: cfg.AuditKeyFile, DataDir: cfg.DataDir()}
}

// Degraded lists what is wrong while the server still serves (for
// /healthz).
func (a *App) Degraded() []string {
	var out []string
	switch p, err := a.audit.Integrity(); {
	case err != nil:
		out = append(out, "audit start-up verification is waiting for the store: write tools are refused (retryable MCP_STORE_UNAVAILABLE)")
	case p != nil:
		out = append(out, fmt.Sprintf("audit log failed verification (%s at receipt %d): write tools refused until acknowledged", p.Kind, p.Seq))
	}
	if ok, why := a.audit.Healthy(); !ok {
		out = append(out, "audit receipts cannot be written: "+why)
	}
	if a.Catalog != nil && a.Catalog.Rebuilding() {
		out = append(out, "search index is being rebuilt: searches wait until it is done")
	}
	if a.DB.Kind() == store.KindEtcd {
		// From the fleet's last contact with etcd, not a request: a
		// health check answers at once while etcd hangs.
		st := a.Fleet.State()
		if !st.Reachable {
			out = append(out, fmt.Sprintf("store unavailable (etcd has not answered for %s): write tools are refused (retryable MCP_STORE_UNAVAILABLE); searches answer from this replica's index",
				time.Since(st.LastContact).Round(time.Second)))
		}
		if !st.Registered {
			out = append(out, "fleet membership lapsed (its etcd lease expired): registering again once etcd answers; meanwhile this replica takes on no task and keeps its last count of replicas for rate limits")
		}
	}
	return out
}

// StoreHealth is the "store" object of /healthz: on etcd, the fleet's
// last knowledge (no request to etcd).
func (a *App) StoreHealth() any {
	h := map[string]any{"backend": a.DB.Kind()}
	if a.DB.Kind() != store.KindEtcd {
		return h
	}
	h["endpoints"] = a.Config.Store.Endpoints
	h["prefix"] = a.Config.Store.Prefix
	st := a.Fleet.State()
	h["reachable"] = st.Reachable
	h["registered"] = st.Registered
	if st.Revision > 0 {
		h["revision"] = st.Revision
	}
	h["last_contact"] = st.LastContact.UTC().Format(time.RFC3339Nano)
	h["replicas"] = st.Live
	if a.Catalog != nil {
		h["catalog_rev"], h["index_rev"] = a.Catalog.Rev(), a.Catalog.IndexRev()
	}
	return h
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// maxHeaderBytes bounds request headers (Go's default is 1 MiB); tenant
// headers and tokens are short.
const maxHeaderBytes = 64 << 10

// checkKeyFile refuses to start when the key file is gone but sessions
// sealed with it remain: keyring.Load would create a new key, and every
// session would then fail to open, one by one, later.
func (a *App) checkKeyFile() error {
	if strings.TrimSpace(a.Config.SecretKey) != "" {
		return nil
	}
	kf := a.Config.KeyFile()
	if _, err := os.Stat(kf); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	n, err := session.SealedCount(a.DB)
	if err != nil || n == 0 {
		return err
	}
	return fmt.Errorf("the key file %s is missing, but %d stored session(s) are sealed with it: put the key file back "+
		"(backups do not contain it) or set ACCORDS_MCP_SECRET_KEY to the same key; if the key is lost, "+
		"`accords-mcp doctor --forget-sealed-sessions` drops those sessions so they can be configured again", kf, n)
}

// storedTenants lists the scopes holding sessions or approval handles.
func (a *App) storedTenants() ([]string, error) {
	sessions, err := a.Sessions.Scopes()
	if err != nil {
		return nil, err
	}
	handles, err := a.Handles.Scopes()
	return append(sessions, handles...), err
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
	if a.Tasks != nil {
		a.Tasks.Close()
	}
	a.Fleet.Leave()
	if a.Gateway != nil {
		a.Gateway.Close() // its pending refusal summaries, before the log closes
	}
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
	if terr := a.Tracing.Shutdown(); terr != nil {
		// Spans are best effort: a collector that is gone must not turn a
		// clean stop into a failure.
		a.Logger.Warn("tracing: spans not flushed at shutdown", "error", terr.Error())
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

// ServeStdio serves MCP on in/out until in ends or ctx is cancelled. On
// cancellation it begins the drain (waits answer at once), lets in-flight
// calls answer within config.ShutdownGrace, then closes the session.
func (a *App) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	// Elicitations in flight end when the server stops or the client's
	// input ends: nobody is left to answer them.
	defer context.AfterFunc(ctx, a.elicit.Stop)()
	in = onEOF{Reader: in, fn: a.elicit.Stop}
	t := &transport.StdioTransport{In: in, Out: out, MaxMessageBytes: a.Config.StdioMaxMessageBytes}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	// Connect and Wait rather than the SDK's Server.Run: Run logs a stop
	// asked for by a signal (Ctrl-C, SIGTERM) as an error.
	ss, err := a.MCPServer().Connect(runCtx, a.StreamTransport(t), nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		a.Drain.Begin()
		graceCtx, cancel := context.WithTimeout(context.Background(), config.ShutdownGrace)
		if werr := t.WaitIdle(graceCtx); werr != nil {
			a.Logger.Warn("stdio shutdown: calls still running after the grace period are abandoned", "grace", config.ShutdownGrace.String())
		}
		cancel()
		stop()
		_ = ss.Close()
		if werr := <-done; werr != nil {
			// Closed on purpose: what the session says about it is detail.
			a.Logger.Debug("stdio session closed", "error", werr.Error())
		}
		a.Logger.Info("stopping", "reason", "signal")
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// onEOF calls fn when the reader ends.
type onEOF struct {
	io.Reader
	fn func()
}

func (r onEOF) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if err != nil {
		r.fn()
	}
	return n, err
}

// StreamTransport is t as a stream transport (stdio, a socket, in
// memory) is served: task listens (notifications/tasks) are answered on
// it, for the local caller.
func (a *App) StreamTransport(t mcp.Transport) mcp.Transport {
	return a.Tasks.Transport(t, a.localCaller)
}

// localCaller is the context of the local (stdio) caller.
func (a *App) localCaller() context.Context {
	return caller.With(context.Background(), a.Gateway.Principal(context.Background(), nil))
}

// HTTPHandler is the bridge handler.
func (a *App) HTTPHandler() http.Handler {
	h := transport.NewHTTPHandler(transport.HTTPOptions{
		Path:                a.Config.HTTPPath,
		MaxBodyBytes:        a.Config.MaxBodyBytes,
		MaxBatch:            a.Config.MaxBatch,
		BodyTimeout:         a.Config.HTTPBodyTimeout,
		AllowedOrigins:      a.Config.AllowedOrigins,
		RequireTenantHeader: a.Config.RequireTenantHeader,
		GetServer:           a.Gateway.GetServer,
		Wrap:                a.Gateway.Wrap,
		Inner: func(next http.Handler) http.Handler {
			return a.Tasks.HTTP(a.Gateway.ScopeChallenge(next), a.Gateway.RequestPrincipal, int(a.Config.MaxBodyBytes))
		},
		Health: func() error {
			if a.DB.Kind() == store.KindEtcd {
				// etcd out of reach degrades a replica (searches go on
				// from its index) but leaves it in the load balancer.
				return nil
			}
			leave, err := a.Gate.Enter(context.Background())
			if err != nil {
				return err
			}
			defer leave()
			return a.DB.Ping()
		},
		Degraded: a.Degraded,
		Store:    a.StoreHealth,
		Logger:   a.sdkLogger(),
		// /metrics is guarded like the MCP endpoint: open while the policy
		// has no callers (loopback only), a caller's bearer token otherwise.
		// The audit public key is public.
		Extra: map[string]http.Handler{
			"/metrics":                       a.Gateway.Wrap(a.Metrics.Registry.Handler()),
			"/.well-known/accords-audit-key": publicKeyHandler(a.AuditKey.VerifierKey),
			// OAuth protected resource metadata (RFC 9728), with [oauth].
			"/.well-known/oauth-protected-resource":  a.Gateway.ResourceMetadata(),
			"/.well-known/oauth-protected-resource/": a.Gateway.ResourceMetadata(),
		},
	})
	return reqlog.HTTP(h, a.Logger)
}

func publicKeyHandler(vkey string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = io.WriteString(w, vkey+"\n")
	})
}

// ServeHTTP listens on addr until ctx is cancelled, then stops accepting,
// begins the drain (waits answer at once) and lets in-flight requests
// finish within config.ShutdownGrace.
//
// The server has header and idle timeouts and a connection cap; the body
// deadline is set per request by the handler, because http.Server's
// ReadTimeout would also cut the connection of a long call after its body
// was read. There is no write timeout: an approval wait may last an hour.
func (a *App) ServeHTTP(ctx context.Context, addr string, ready func(net.Addr)) error {
	if err := a.Gateway.CheckListen(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	ln = netutil.LimitListener(ln, a.Config.HTTPMaxConns)
	hs := &http.Server{
		Handler:           a.HTTPHandler(),
		ReadHeaderTimeout: a.Config.HTTPHeaderTimeout,
		IdleTimeout:       a.Config.HTTPIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	a.listenAddr.Store(ln.Addr().String())
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
	a.Drain.Begin()
	a.elicit.Stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), config.ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		a.Logger.Warn("HTTP shutdown did not finish in time", "error", err)
	}
	return nil
}

func pid() int { return os.Getpid() }

func randomID() []byte {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return b
}

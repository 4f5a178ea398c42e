package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
)

// The operator commands run against admin.Backend: the running daemon's, or
// this process opening the database itself when none runs.

// where says how a command reached the database.
type where struct {
	remote bool
	daemon control.Status
	socket string
}

// withBackend runs fn against the daemon that owns the database, or
// against the database itself when no daemon runs.
func withBackend(ctx context.Context, env *environment, fn func(b admin.Backend, w where) int) int {
	return backendFor(ctx, env, false, fn)
}

// onAppBackend is the RunE of a command that opens the database as the
// server does (an unopenable database is reported before fn runs): fn
// against the daemon or the database, with the command's context.
func onAppBackend(cmd *cobra.Command, env *environment, fn func(ctx context.Context, b admin.Backend) int) error {
	ctx := cmd.Context()
	return exit(backendFor(ctx, env, true, func(b admin.Backend, _ where) int { return fn(ctx, b) }))
}

func backendFor(ctx context.Context, env *environment, openApp bool, fn func(b admin.Backend, w where) int) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	b, w, closeFn, err := openBackend(ctx, env, cfg)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	defer closeFn()
	if l, ok := b.(*localBackend); ok && openApp {
		if _, err := l.services(); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp:", err)
			return 1
		}
	}
	return fn(b, w)
}

func openBackend(ctx context.Context, env *environment, cfg config.Config) (admin.Backend, where, func(), error) {
	sock := control.SocketPath(cfg.DBPath)
	c := control.NewClient(sock)
	st, err := statusWithin(ctx, c, 3*time.Second)
	switch {
	case err == nil:
		return c.Ops(), where{remote: true, daemon: st, socket: sock}, c.Close, nil
	case errors.Is(err, control.ErrRefused), errors.Is(err, control.ErrUntrusted):
		// Another user's daemon, or a socket that may be another user's:
		// the command neither uses it nor opens the database behind it.
		c.Close()
		return nil, where{}, nil, err
	}
	// No daemon (or a socket nobody answers on: the database lock tells).
	c.Close()
	l := &localBackend{env: env, cfg: cfg}
	return l, where{socket: sock}, l.close, nil
}

// commandEnv is the command's own environment session, sent with session and
// doctor requests so a daemon answers as the command would offline.
func commandEnv(cfg config.Config) session.Defaults {
	return session.Defaults{Token: cfg.VaultToken, BaseURL: cfg.VaultBaseURL, TimeoutMS: cfg.VaultTimeoutMS, UnixSocket: cfg.VaultUnixSocket}
}

// localBackend opens what each operation needs when no daemon runs: catalog
// and session commands as the server does, audit, doctor and backup
// read-only, restore under the file lock.
type localBackend struct {
	env  *environment
	cfg  config.Config
	a    *app.App
	done func()
}

var _ admin.Backend = (*localBackend)(nil)

func (l *localBackend) close() {
	if l.done != nil {
		l.done()
	}
}

// services opens the app once for the command's catalog and session
// operations.
func (l *localBackend) services() (*admin.Services, error) {
	if l.a == nil {
		a, done, err := openCatalogApp(l.env)
		if err != nil {
			return nil, err
		}
		l.a, l.done = a, done
	}
	return &admin.Services{DB: l.a.DB, Catalog: l.a.Catalog, Sessions: l.a.Sessions}, nil
}

// onApp runs op on the app's services, opened on first use.
func onApp[T any](l *localBackend, op func(s *admin.Services) (T, error)) (T, error) {
	s, err := l.services()
	if err != nil {
		var zero T
		return zero, err
	}
	return op(s)
}

// onFile runs op on the database opened read-only for this one operation.
func onFile[T any](l *localBackend, op func(s *admin.Services) (T, error)) (T, error) {
	db, err := app.OpenStore(l.cfg, store.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		var zero T
		return zero, err
	}
	defer db.Close()
	return op(&admin.Services{DB: db})
}

func (l *localBackend) Search(ctx context.Context, q index.Query) (index.Result, error) {
	return onApp(l, func(s *admin.Services) (index.Result, error) { return s.Search(ctx, q) })
}

func (l *localBackend) ListCookbooks(ctx context.Context, f catalog.ListFilter) (admin.CookbookList, error) {
	return onApp(l, func(s *admin.Services) (admin.CookbookList, error) { return s.ListCookbooks(ctx, f) })
}

func (l *localBackend) ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error) {
	return onApp(l, func(s *admin.Services) (*catalog.UpsertResult, error) { return s.ImportBundle(ctx, raw, policy) })
}

func (l *localBackend) ExportBundle(ctx context.Context, id, version string) (admin.Export, error) {
	return onApp(l, func(s *admin.Services) (admin.Export, error) { return s.ExportBundle(ctx, id, version) })
}

func (l *localBackend) DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error) {
	return onApp(l, func(s *admin.Services) (*catalog.DeleteResult, error) { return s.DeleteCookbook(ctx, id, version) })
}

func (l *localBackend) Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error) {
	return onApp(l, func(s *admin.Services) (*catalog.RenderResult, error) { return s.Render(ctx, r) })
}

func (l *localBackend) Reindex(ctx context.Context, progress func(done, total int)) (admin.ReindexResult, error) {
	return onApp(l, func(s *admin.Services) (admin.ReindexResult, error) { return s.Reindex(ctx, progress) })
}

func (l *localBackend) AuditVerify(ctx context.Context, r admin.AuditVerifyRequest) (admin.AuditVerifyResult, error) {
	return onFile(l, func(s *admin.Services) (admin.AuditVerifyResult, error) { return s.AuditVerify(ctx, r) })
}

func (l *localBackend) AuditCheckpoint(ctx context.Context) ([]byte, error) {
	return onFile(l, func(s *admin.Services) ([]byte, error) { return s.AuditCheckpoint(ctx) })
}

func (l *localBackend) AuditFind(ctx context.Context, callID string) (audit.Receipt, error) {
	return onFile(l, func(s *admin.Services) (audit.Receipt, error) { return s.AuditFind(ctx, callID) })
}

func (l *localBackend) AuditProve(ctx context.Context, seq uint64) (audit.Proof, error) {
	return onFile(l, func(s *admin.Services) (audit.Proof, error) { return s.AuditProve(ctx, seq) })
}

func (l *localBackend) AuditExport(ctx context.Context, w io.Writer) (int, error) {
	return onFile(l, func(s *admin.Services) (int, error) { return s.AuditExport(ctx, w) })
}

// AuditAcknowledge opens the log for writing with the audit key, which
// signs the acknowledgement.
func (l *localBackend) AuditAcknowledge(_ context.Context, operator, note string) (string, error) {
	db, err := app.OpenStore(l.cfg, store.Options{LockTimeout: 300 * time.Millisecond})
	if err != nil {
		return "", err
	}
	defer db.Close()
	key, err := audit.LoadKey(app.AuditKeySpec(l.cfg), false)
	if err != nil {
		return "", fmt.Errorf("the audit key is needed to sign the acknowledgement: %w", err)
	}
	// The checkpoint goes to the anchor too, so the start-up check finds the
	// log extends the anchor's newest checkpoint.
	anchor, err := audit.ParseAnchor(l.cfg.AuditAnchor)
	if err != nil {
		return "", err
	}
	lg, err := audit.Open(db, audit.Options{Key: key, Anchor: anchor, Shared: db.Kind() == store.KindEtcd})
	if err != nil {
		return "", err
	}
	defer lg.Close()
	return admin.Acknowledge(lg, operator, note)
}

func (l *localBackend) AuditTail(ctx context.Context, n int) ([]audit.Receipt, error) {
	return onFile(l, func(s *admin.Services) ([]audit.Receipt, error) { return s.AuditTail(ctx, n) })
}

func (l *localBackend) SessionStatus(ctx context.Context, r admin.SessionRequest) (session.Status, error) {
	return onApp(l, func(s *admin.Services) (session.Status, error) { return s.SessionStatus(ctx, r) })
}

func (l *localBackend) SessionConfigure(ctx context.Context, r admin.SessionRequest) (session.Status, error) {
	return onApp(l, func(s *admin.Services) (session.Status, error) { return s.SessionConfigure(ctx, r) })
}

func (l *localBackend) SessionClear(ctx context.Context, r admin.SessionRequest) error {
	_, err := onApp(l, func(s *admin.Services) (struct{}, error) { return struct{}{}, s.SessionClear(ctx, r) })
	return err
}

// Doctor runs the database checks on the file opened read-only; the
// daemon line is the command's (localDoctor).
func (l *localBackend) Doctor(ctx context.Context, scope string, _ session.Defaults) ([]doctor.Result, error) {
	return onFile(l, func(s *admin.Services) ([]doctor.Result, error) {
		in := doctor.Inputs{DB: s.DB, Sessions: localSessions(l.cfg, s.DB), Scope: scope, Index: standaloneIndex(l.cfg, s.DB)}
		if k, err := audit.LoadKey(app.AuditKeySpec(l.cfg), false); err != nil {
			in.AuditKeyProblem = err.Error()
		} else {
			in.AuditKey = k
		}
		if in.Sessions == nil {
			in.SessionsUnavailable = "the secret key cannot be loaded (see the key check above)"
		}
		return doctor.Database(ctx, in), nil
	})
}

func (l *localBackend) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return onFile(l, func(s *admin.Services) (int64, error) { return s.Backup(ctx, w) })
}

// restoreRecorder records a restore in the restored audit log with the
// configured key and anchor; without a key it says why there is no record.
func restoreRecorder(cfg config.Config) func(*store.DB, audit.RestoreDiff) (audit.Ref, error) {
	return func(db *store.DB, d audit.RestoreDiff) (audit.Ref, error) {
		key, err := audit.LoadKey(app.AuditKeySpec(cfg), false)
		if err != nil {
			return audit.Ref{}, fmt.Errorf("the audit key is needed to sign the restore record: %w", err)
		}
		anchor, err := audit.ParseAnchor(cfg.AuditAnchor)
		if err != nil {
			return audit.Ref{}, err
		}
		return audit.RecordRestoreIn(db, audit.Options{Key: key, Anchor: anchor, Shared: db.Kind() == store.KindEtcd}, d, operatorName(""))
	}
}

func (l *localBackend) Restore(ctx context.Context, src string, r io.Reader) (admin.RestoreResult, error) {
	res, err := backup.Restore(src, r, backup.RestoreOptions{DBPath: l.cfg.DBPath, IndexDir: l.cfg.IndexDir(), Reindex: rebuildIndex(ctx, l.cfg),
		Record: restoreRecorder(l.cfg)})
	out := admin.RestoreResult{Result: res, DBPath: l.cfg.DBPath}
	if err != nil {
		return out, err
	}
	db, err := app.OpenStore(l.cfg, store.Options{ReadOnly: true})
	if err != nil {
		out.Warnings = []string{"cannot reopen the restored database: " + err.Error()}
		return out, nil
	}
	defer db.Close()
	out.Warnings = admin.SessionWarnings(ctx, db, l.cfg.SecretKey, l.cfg.KeyFile())
	return out, nil
}

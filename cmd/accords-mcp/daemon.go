package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/legacy"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var o daemonOptions
		c := &cobra.Command{
			Use:   "daemon",
			Short: "own the database and serve attached stdio clients and operator commands over the socket beside it (systemd, launchd)",
			Long: `Own the database and serve, over the control socket beside it, the stdio launches that attach
and the operator commands (status, backup, doctor, ...). Runs until SIGTERM/SIGINT or
accords-mcp stop. For HTTP use serve --http ADDR.`,
			RunE: func(cmd *cobra.Command, _ []string) error { return exit(runDaemon(cmd.Context(), env, o)) },
		}
		f := c.Flags()
		f.BoolVar(&o.auto, "auto", false, "started by a stdio launch: exit after ACCORDS_MCP_DAEMON_IDLE_TIMEOUT with no client attached (internal)")
		f.IntVar(&o.readyFD, "ready-fd", 0, "file descriptor to report readiness on, one JSON line (internal)")
		f.StringVar(&o.logPath, "log", "", "the file this daemon's stderr goes to, shown by status (internal)")
		for _, n := range []string{"auto", "ready-fd", "log"} {
			_ = f.MarkHidden(n)
		}
		return c
	})
}

type daemonOptions struct {
	auto    bool
	readyFD int
	logPath string
}

// socketSupported is control.Supported; tests clear it to check how a
// platform without the control socket (Windows) serves.
var socketSupported = control.Supported

// ownerLockWait bounds the wait for the owner lock (another launch may be
// starting a daemon, which can rebuild a large index first).
const ownerLockWait = 2 * time.Minute

// ownerDBLock bounds an owner's wait for the database lock: a daemon being
// replaced, or an offline command, may still hold it for a moment (a
// variable: tests shorten it).
var ownerDBLock = 15 * time.Second

func runDaemon(ctx context.Context, env *environment, opts daemonOptions) int {
	report := func(error) {}
	if opts.readyFD > 0 {
		f := os.NewFile(uintptr(opts.readyFD), "ready")
		report = func(err error) {
			line := map[string]any{"ok": err == nil, "pid": os.Getpid()}
			if err != nil {
				line["error"] = err.Error()
			}
			_ = json.NewEncoder(f).Encode(line)
			f.Close()
		}
	}
	cfg, err := env.config()
	if err != nil {
		report(err)
		fmt.Fprintln(env.stderr, "accords-mcp daemon:", err)
		return 1
	}
	if !socketSupported {
		err := fmt.Errorf("the daemon serves attached launches over its control socket: %w; run `accords-mcp serve --http 127.0.0.1:8765` to share the database between clients", control.ErrUnsupported)
		report(err)
		fmt.Fprintln(env.stderr, "accords-mcp daemon:", err)
		return 1
	}
	o := ownerRun{mode: control.ModeExplicit, transport: "attach", log: opts.logPath, ready: report}
	if opts.auto {
		o.mode = control.ModeAuto
		o.idle = cfg.DaemonIdleTimeout
	}
	return runOwner(ctx, env, cfg, o, func(ctx context.Context, a *app.App) error {
		a.Logger.Info("ready", "transport", "attach", "mode", o.mode, "db", cfg.DBPath)
		<-ctx.Done()
		return nil
	})
}

// ownerRun says how runOwner serves.
type ownerRun struct {
	mode      string
	transport string
	idle      time.Duration
	log       string
	// ready is told once whether the daemon is serving (nil) or why not.
	ready func(error)
}

// runOwner owns the database: takes the owner role, opens it, listens on the
// control socket and runs serve until ctx ends, serve returns or a stop is
// asked; then it drains and closes.
func runOwner(ctx context.Context, env *environment, cfg config.Config, o ownerRun, serve func(context.Context, *app.App) error) int {
	if o.ready == nil {
		o.ready = func(error) {}
	}
	logger := env.logger(cfg)
	fail := func(err error) int {
		o.ready(err)
		logger.Error("cannot start", "error", err.Error())
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	release := func() {}
	if o.mode != control.ModeAuto {
		// An auto daemon's launcher holds the owner lock for it.
		var err error
		if release, err = takeOwnership(ctx, cfg, o.mode == control.ModeExplicit, logger); err != nil {
			return fail(err)
		}
	}
	defer func() { release() }()
	if cfg.PprofAddr != "" {
		// Profile the owner; a failed listener is a refusal, not a silent "on".
		prof, err := app.StartProfiling(cfg.PprofAddr, logger)
		if err != nil {
			return fail(fmt.Errorf("ACCORDS_MCP_PPROF: %w", err))
		}
		defer func() { _ = prof.Close() }()
	}
	cfg.DBLockTimeout = ownerDBLock
	fresh := storeIsNew(cfg)
	a, err := app.Open(cfg, logger)
	if err != nil {
		if errors.Is(err, store.ErrLocked) && !socketSupported {
			err = fmt.Errorf("%w; here every stdio launch serves its database itself (D33), so two clients cannot share one: give each its own ACCORDS_MCP_DB, or run `accords-mcp serve --http 127.0.0.1:8765` once and point the clients at it", err)
		}
		return fail(err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			logger.Error("closing database", "error", err.Error())
		}
	}()
	if fresh {
		hintLegacy(env, logger)
	}
	var own *app.Owner
	if socketSupported {
		own, err = a.Own(app.OwnerOptions{Mode: o.mode, IdleTimeout: o.idle, Transport: o.transport, Log: o.log})
		if err != nil {
			if o.mode != control.ModeStandalone {
				return fail(fmt.Errorf("the daemon needs its socket: %w", err))
			}
			// Serving its own stdin matters more than the socket.
			logger.Warn("control socket unavailable; other launches, backup and doctor cannot reach this process", "error", err.Error())
		}
	} else {
		// D33: stdio and HTTP serve without it; the database lock keeps
		// every other process out.
		logger.Info("no control socket on this platform: status, stop and online backup cannot reach this process")
	}
	release()
	release = func() {}
	o.ready(nil)
	stopHUP := onHangup(func() {
		if err := a.Reload(); err != nil {
			logger.Error("policy reload failed; previous policy stays in force", "error", err.Error())
		}
	})
	defer stopHUP()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if own != nil {
		go func() {
			select {
			case <-own.Stopping():
				logger.Info("stopping", "reason", own.Reason())
				cancel()
			case <-sctx.Done():
			}
		}()
	}
	err = serve(sctx, a)
	if own != nil {
		own.Close(config.ShutdownGrace)
		if err == nil {
			// Stopped because it could not go on (its socket): a failure,
			// so that a supervisor restarts it.
			err = own.Err()
		}
	}
	if err != nil {
		logger.Error("server stopped", "error", err.Error())
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	return 0
}

// takeOwnership takes the owner lock: an explicit daemon asks an
// auto-started one to hand over, any other owner is an error naming it.
// release frees the lock once this process listens.
func takeOwnership(ctx context.Context, cfg config.Config, explicit bool, logger *slog.Logger) (func(), error) {
	lctx, cancel := context.WithTimeout(ctx, ownerLockWait)
	defer cancel()
	unlock, err := control.LockOwner(lctx, cfg.DBPath)
	if err != nil {
		return nil, err
	}
	c := control.NewClient(control.SocketPath(cfg.DBPath))
	defer c.Close()
	st, err := statusWithin(ctx, c, 3*time.Second)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return unlock, nil
	case errors.Is(err, control.ErrRefused), errors.Is(err, control.ErrUntrusted):
		unlock()
		return nil, err
	case err != nil:
		// A socket that accepts but does not answer: the database lock
		// decides (app.Open reports who holds it).
		return unlock, nil
	}
	if !explicit || st.Mode != control.ModeAuto {
		unlock()
		return nil, fmt.Errorf("the database %s is served by a running accords-mcp (pid %d, %s, %s): stop it first with `accords-mcp stop`, or run this without --standalone to attach to it", cfg.DBPath, st.PID, st.Mode, describeTransports(st))
	}
	logger.Info("taking over from the daemon a stdio launch started; its clients reattach here", "pid", st.PID, "clients", len(st.Clients))
	if err := c.Stop(ctx, "takeover"); err != nil {
		unlock()
		return nil, fmt.Errorf("ask the running daemon (pid %d) to hand over: %w", st.PID, err)
	}
	if err := waitGone(ctx, c, 2*config.ShutdownGrace+5*time.Second); err != nil {
		unlock()
		return nil, fmt.Errorf("the running daemon (pid %d) did not stop: %w", st.PID, err)
	}
	return unlock, nil
}

// statusWithin asks the daemon on c who it is, waiting at most d.
func statusWithin(ctx context.Context, c *control.Client, d time.Duration) (control.Status, error) {
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.Status(sctx)
}

// waitGone polls until nothing answers on the socket.
func waitGone(ctx context.Context, c *control.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		_, err := statusWithin(ctx, c, time.Second)
		if errors.Is(err, control.ErrNotRunning) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still answering after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rebuildIndex is an offline restore's reindex step: opening the catalog
// on the restored database rebuilds the (removed) index from the store.
func rebuildIndex(ctx context.Context, cfg config.Config) func(db *store.DB) (int, error) {
	return func(db *store.DB) (int, error) {
		cat, err := catalog.Open(ctx, db, cfg.IndexDir(), catalog.Options{})
		if err != nil {
			return 0, err
		}
		docs, _, _, err := cat.IndexStats()
		if cerr := cat.Close(); err == nil {
			err = cerr
		}
		return int(docs), err
	}
}

// standaloneIndex reads the index state without a daemon.
func standaloneIndex(cfg config.Config, db *store.DB) func(context.Context) doctor.IndexState {
	return func(context.Context) doctor.IndexState {
		srev, err := catalog.StoreRev(db)
		if err != nil {
			return doctor.IndexState{Err: err}
		}
		ix, err := index.Open(cfg.IndexDir())
		if err != nil {
			if srev == 0 {
				return doctor.IndexState{StoreRev: 0, IndexRev: 0}
			}
			return doctor.IndexState{StoreRev: srev, Err: fmt.Errorf("%w (the daemon rebuilds it on start)", err)}
		}
		defer ix.Close()
		docs, err := ix.DocCount()
		if err != nil {
			return doctor.IndexState{StoreRev: srev, Err: err}
		}
		irev, err := ix.Rev()
		return doctor.IndexState{Documents: int(docs), StoreRev: srev, IndexRev: irev, Err: err}
	}
}

// dbIsNew reports whether the database file does not exist yet.
func dbIsNew(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// hintLegacy tells the user of a fresh database how to bring over the
// predecessor's catalog, when one is found.
func hintLegacy(env *environment, logger *slog.Logger) {
	dir, err := legacy.DefaultDir(env.getenv)
	if err != nil || !legacy.Looks(dir) {
		return
	}
	logger.Info("found a catalog folder from the previous accords-mcp; import its cookbooks and sources with: accords-mcp import-legacy "+dir,
		"legacy_dir", dir, "command", "accords-mcp import-legacy "+dir)
}

// storeIsNew reports whether no state exists yet: never for etcd, whose
// cluster may hold a deployment's state however new this replica is.
func storeIsNew(cfg config.Config) bool { return cfg.Store == nil && dbIsNew(cfg.DBPath) }

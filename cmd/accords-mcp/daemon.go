package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/legacy"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/version"
	"github.com/accordsai/accords-mcp/store"
)

// startDaemon starts what a serving process owns besides its transport: the
// control socket beside the database (hot backup, status, doctor, metrics).
// The returned stop waits for in-flight control requests (a backup being
// streamed) and removes the socket; call it before closing the database.
func startDaemon(ctx context.Context, a *app.App, transport string, logger *slog.Logger) (stop func()) {
	path := control.SocketPath(a.Config.DBPath)
	ln, err := control.Listen(path)
	if err != nil {
		// Serving MCP matters more than the socket: run without it and say
		// what stops working.
		logger.Warn("control socket unavailable; backup and doctor cannot reach this daemon", "socket", path, "error", err.Error())
		return func() {}
	}
	srv := &control.Server{
		DB: a.DB,
		Status: control.Status{
			PID: os.Getpid(), Version: version.Version, DB: a.Config.DBPath,
			Transport: transport, Addr: a.Config.HTTPAddr, StartedAt: time.Now().UTC(),
		},
		Metrics: a.Metrics.Registry.Handler(),
		Doctor: func(ctx context.Context, scope string) any {
			return doctor.Database(ctx, doctorInputs(a, scope))
		},
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(cctx, ln, config.ShutdownGrace); err != nil {
			logger.Warn("control socket stopped", "error", err.Error())
		}
	})
	logger.Info("control socket listening", "socket", path)
	return func() {
		cancel()
		wg.Wait()
		logger.Info("control socket closed", "socket", path)
	}
}

// doctorInputs are the in-process database checks of a.
func doctorInputs(a *app.App, scope string) doctor.Inputs {
	in := doctor.Inputs{DB: a.DB, Sessions: a.Sessions, Scope: scope, AuditKey: a.AuditKey}
	if a.Vault != nil {
		in.Probe = doctor.VaultProbe(a.Vault)
	}
	if a.Catalog != nil {
		in.Index = func(context.Context) doctor.IndexState {
			docs, irev, srev, err := a.Catalog.IndexStats()
			return doctor.IndexState{Documents: int(docs), IndexRev: irev, StoreRev: srev, Err: err}
		}
	}
	return in
}

// rebuildIndex is restore's reindex step: opening the catalog on the
// restored database rebuilds the (removed) index from the store.
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

// standaloneIndex reads the index state without a daemon: the store's
// catalog revision from the (read-only) database and the index's own
// revision and document count from its folder.
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

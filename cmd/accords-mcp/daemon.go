package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/config"
	"github.com/accordsai/accords-mcp/control"
	"github.com/accordsai/accords-mcp/doctor"
	"github.com/accordsai/accords-mcp/legacy"
	"github.com/accordsai/accords-mcp/version"
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
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(cctx, ln, config.ShutdownGrace); err != nil {
			logger.Warn("control socket stopped", "error", err.Error())
		}
	}()
	logger.Info("control socket listening", "socket", path)
	return func() {
		cancel()
		wg.Wait()
	}
}

// doctorInputs are the in-process database checks of a.
func doctorInputs(a *app.App, scope string) doctor.Inputs {
	return doctor.Inputs{DB: a.DB, Sessions: a.Sessions, Scope: scope}
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

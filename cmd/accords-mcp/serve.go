package main

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/accordsai/accords-mcp/app"
)

func init() {
	register("serve", "serve MCP over stdio, or over HTTP with --http ADDR", runServe)
}

func runServe(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	httpAddr := fs.String("http", "", "serve the HTTP bridge on ADDR instead of stdio (overrides ACCORDS_MCP_HTTP_ADDR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	if *httpAddr != "" {
		cfg.HTTPAddr = *httpAddr
	}
	logger := env.logger(cfg)
	fresh := dbIsNew(cfg.DBPath)
	a, err := app.Open(cfg, logger)
	if err != nil {
		logger.Error("cannot start", "error", err.Error())
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	defer func() {
		if err := a.Close(); err != nil {
			logger.Error("closing database", "error", err.Error())
		}
	}()
	if fresh {
		hintLegacy(env, logger)
	}
	transport := "stdio"
	if cfg.HTTPAddr != "" {
		transport = "http"
	}
	stopDaemon := startDaemon(ctx, a, transport, logger)
	defer stopDaemon()
	if cfg.HTTPAddr != "" {
		err = a.ServeHTTP(ctx, cfg.HTTPAddr, func(addr net.Addr) {
			logger.Info("ready", "transport", "http", "addr", addr.String())
		})
	} else {
		logger.Info("ready", "transport", "stdio", "db", cfg.DBPath)
		err = a.ServeStdio(ctx, env.stdin, env.stdout)
	}
	if err != nil {
		logger.Error("server stopped", "error", err.Error())
		return 1
	}
	return 0
}

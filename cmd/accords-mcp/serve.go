package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/config"
)

func init() {
	register("serve", "serve MCP over stdio, or over HTTP with --http ADDR", runServe)
}

func runServe(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	httpAddr := fs.String("http", "", "serve the HTTP bridge on ADDR instead of stdio (overrides ACCORDS_MCP_HTTP_ADDR)")
	readOnly := fs.Bool("read-only", false, "remove every tool that changes state, on every transport (or ACCORDS_MCP_READ_ONLY=true)")
	toolsets := fs.String("toolsets", "", "comma-separated toolsets to expose (overrides ACCORDS_MCP_TOOLSETS)")
	dynamic := fs.Bool("dynamic-toolsets", false, "start stdio sessions with a few core tools; toolsets are enabled on demand (or ACCORDS_MCP_DYNAMIC_TOOLSETS=true)")
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
	if *readOnly {
		// The flag can only tighten: it never re-enables writes the
		// environment disabled.
		cfg.ReadOnly = true
	}
	if *toolsets != "" {
		cfg.Toolsets = config.SplitList(*toolsets)
	}
	if *dynamic {
		cfg.DynamicToolsets = true
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
	stopHUP := onHangup(func() {
		if err := a.Reload(); err != nil {
			logger.Error("policy reload failed; previous policy stays in force", "error", err.Error())
		}
	})
	defer stopHUP()
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
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	return 0
}

// onHangup calls reload on every SIGHUP until the returned stop is called.
func onHangup(reload func()) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-ch:
				reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
	}
}

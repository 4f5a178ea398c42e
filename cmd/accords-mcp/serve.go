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
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/config"
)

func init() {
	register("serve", "serve MCP over stdio (attached to the daemon that owns the database, started if needed), or over HTTP with --http ADDR", runServe)
}

// runServe is the MCP entry point. Over HTTP it owns the database as an
// explicit daemon. Over stdio it is a front end attached to the daemon
// that owns the database (one is started when none runs), unless
// --standalone (or ACCORDS_MCP_STANDALONE) serves in this process.
func runServe(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	httpAddr := fs.String("http", "", "serve the HTTP bridge on ADDR instead of stdio (overrides ACCORDS_MCP_HTTP_ADDR); the process owns the database and never idles out")
	readOnly := fs.Bool("read-only", false, "remove every tool that changes state (or ACCORDS_MCP_READ_ONLY=true); attached to a daemon, for this client only")
	toolsets := fs.String("toolsets", "", "comma-separated toolsets to expose (overrides ACCORDS_MCP_TOOLSETS); attached to a daemon, for this client only")
	standalone := fs.Bool("standalone", false, "serve stdio in this process instead of attaching to a daemon (or ACCORDS_MCP_STANDALONE=true)")
	dynamic := fs.Bool("dynamic-toolsets", false, "start stdio sessions with a few core tools; toolsets are enabled on demand (or ACCORDS_MCP_DYNAMIC_TOOLSETS=true); attached to a daemon, for this client only")
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
	cfg.Standalone = cfg.Standalone || *standalone
	switch {
	case cfg.HTTPAddr != "":
		return runOwner(ctx, env, cfg, ownerRun{mode: control.ModeExplicit, transport: "http"}, func(ctx context.Context, a *app.App) error {
			return a.ServeHTTP(ctx, cfg.HTTPAddr, func(addr net.Addr) {
				a.Logger.Info("ready", "transport", "http", "addr", addr.String())
			})
		})
	case cfg.Standalone:
		return runOwner(ctx, env, cfg, ownerRun{mode: control.ModeStandalone, transport: "stdio"}, func(ctx context.Context, a *app.App) error {
			a.Logger.Info("ready", "transport", "stdio", "db", cfg.DBPath, "standalone", true)
			return a.ServeStdio(ctx, env.stdin, env.stdout)
		})
	}
	return runFrontend(ctx, env, cfg)
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

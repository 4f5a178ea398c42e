package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/config"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "serve",
			Short: "serve MCP over stdio (attached to the daemon that owns the database), or over HTTP with --http ADDR",
			Long: `Serve MCP. Over stdio (the default) this process is a front end attached to the daemon that owns
the database, started when none runs; MCP clients launch it and speak JSON-RPC on its stdin and
stdout. With --http ADDR it serves the HTTP bridge itself and owns the database. Running
accords-mcp with no command is the same as accords-mcp serve.`,
			Example: `  accords-mcp serve                           # stdio, as an MCP client launches it
  accords-mcp serve --read-only --toolsets catalog,routing
  accords-mcp serve --http 127.0.0.1:8790     # the HTTP bridge`,
		}
		serveFlags(c, env)
		return c
	})
}

// serveOptions are serve's flags (also the root command's: accords-mcp
// with no command serves).
type serveOptions struct {
	httpAddr   string
	readOnly   bool
	toolsets   string
	standalone bool
	dynamic    bool
}

func serveFlags(c *cobra.Command, env *environment) {
	var o serveOptions
	f := c.Flags()
	f.StringVar(&o.httpAddr, "http", "", "serve the HTTP bridge on `ADDR` (host:port) instead of stdio (overrides ACCORDS_MCP_HTTP_ADDR); the process owns the database and never idles out")
	f.BoolVar(&o.readOnly, "read-only", false, "remove every tool that changes state (or ACCORDS_MCP_READ_ONLY=true); attached to a daemon, for this client only")
	f.StringVar(&o.toolsets, "toolsets", "", "comma-separated `LIST` of toolsets to expose (overrides ACCORDS_MCP_TOOLSETS); attached to a daemon, for this client only")
	f.BoolVar(&o.standalone, "standalone", false, "serve stdio in this process instead of attaching to a daemon (or ACCORDS_MCP_STANDALONE=true)")
	f.BoolVar(&o.dynamic, "dynamic-toolsets", false, "start stdio sessions with a few core tools; toolsets are enabled on demand (or ACCORDS_MCP_DYNAMIC_TOOLSETS=true); attached to a daemon, for this client only")
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.httpAddr != "" {
			if err := config.CheckListenAddr(o.httpAddr); err != nil {
				return usageErrorf(cmd, "--http: %v", err)
			}
		}
		return exit(runServe(cmd.Context(), env, o))
	}
}

// runServe serves MCP: over HTTP as an explicit daemon; over stdio as a
// front end of the daemon (started when none runs) unless --standalone.
func runServe(ctx context.Context, env *environment, o serveOptions) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	if o.httpAddr != "" {
		cfg.HTTPAddr = o.httpAddr
	}
	if o.readOnly {
		// The flag can only tighten: it never re-enables writes the
		// environment disabled.
		cfg.ReadOnly = true
	}
	if o.toolsets != "" {
		cfg.Toolsets = config.SplitList(o.toolsets)
	}
	if o.dynamic {
		cfg.DynamicToolsets = true
	}
	// Without the control socket (Windows, D33) there is no daemon to
	// attach to: stdio serves the database itself.
	cfg.Standalone = cfg.Standalone || o.standalone || !socketSupported
	switch {
	case cfg.HTTPAddr != "":
		return runOwner(ctx, env, cfg, ownerRun{mode: control.ModeExplicit, transport: "http"}, func(ctx context.Context, a *app.App) error {
			return a.ServeHTTP(ctx, cfg.HTTPAddr, func(addr net.Addr) {
				a.Logger.Info("ready", "transport", "http", "addr", addr.String())
			})
		})
	case cfg.Standalone:
		hintTerminal(env)
		return runOwner(ctx, env, cfg, ownerRun{mode: control.ModeStandalone, transport: "stdio"}, func(ctx context.Context, a *app.App) error {
			a.Logger.Info("ready", "transport", "stdio", "db", cfg.DBPath, "standalone", true)
			return a.ServeStdio(ctx, env.stdin, env.stdout)
		})
	}
	hintTerminal(env)
	return runFrontend(ctx, env, cfg)
}

// hintTerminal tells a person who started the stdio server by hand what
// it is waiting for: otherwise they see a few log lines, then nothing.
func hintTerminal(env *environment) {
	f, ok := env.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		return
	}
	fmt.Fprintln(env.stderr, "accords-mcp: serving MCP on stdin/stdout; it waits for an MCP client's JSON-RPC messages.\n"+
		"  MCP clients (Claude Desktop, Cursor, VS Code, ...) start it themselves: see README.md for their settings.\n"+
		"  To try it by hand: accords-mcp dev-vault, accords-mcp search QUERY, accords-mcp --help. Ctrl-D or Ctrl-C ends it.")
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

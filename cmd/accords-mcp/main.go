// Command accords-mcp is the MCP server for Vaultclaw and its operator
// tools. With no arguments it serves MCP over stdio (or over HTTP when
// ACCORDS_MCP_HTTP_ADDR is set).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/accordsai/accords-mcp/platform/config"
)

// command is one subcommand. Each lives in its own file and registers itself
// in init, so adding one never touches this file.
type command struct {
	summary string
	run     func(ctx context.Context, env *environment, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, env *environment, args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

// environment is what a command may touch; tests substitute every part.
type environment struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

func (e *environment) config() (config.Config, error) { return config.FromEnv(e.getenv) }

func (e *environment) logger(cfg config.Config) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(cfg.LogLevel) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// defaultMemoryLimit is the soft heap limit when GOMEMLIMIT is unset: a
// daemon holding a large catalog would otherwise let its heap double between
// collections (the default GOGC) and sit well above its working set.
const defaultMemoryLimit = 96 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &environment{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(ctx, env, os.Args[1:]))
}

func run(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return commands["serve"].run(ctx, env, args)
	}
	if args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		usage(env.stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "accords-mcp: unknown command %q\n\n", args[0])
		usage(env.stderr)
		return 2
	}
	return cmd.run(ctx, env, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: accords-mcp [command] [flags]")
	fmt.Fprintln(w, "\nWith no command, serves MCP over stdio (or HTTP when ACCORDS_MCP_HTTP_ADDR is set).")
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
}

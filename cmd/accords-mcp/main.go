// Command accords-mcp is the MCP server for Vaultclaw and its operator
// tools. With no arguments it serves MCP over stdio (or over HTTP when
// ACCORDS_MCP_HTTP_ADDR is set).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/platform/config"
)

// builders make the top-level commands. Each command lives in its own file
// and registers its builder in init, so adding one never touches this file.
var builders []func(env *environment) *cobra.Command

func register(b func(env *environment) *cobra.Command) { builders = append(builders, b) }

// environment is what a command may touch; tests substitute every part.
type environment struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// config reads the settings from the environment; the checks are the same
// for every command, so a bad value is refused before anything runs.
func (e *environment) config() (config.Config, error) { return config.FromEnv(e.getenv) }

func (e *environment) logger(cfg config.Config) *slog.Logger {
	level, _ := config.ParseLogLevel(cfg.LogLevel)
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// defaultMemoryLimit is the soft heap limit when GOMEMLIMIT is unset, so a
// daemon's heap stays near its working set.
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

// exitUsage is the exit code of a command line that cannot be run: an
// unknown command or flag, a missing or extra argument, a bad flag value.
const exitUsage = 2

// exitStatus is the error a command returns to end with a code after it
// has said why itself.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exit turns a command's exit code into its RunE result.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitStatus(code)
}

// usageError is a command line that cannot be run; run prints it as one
// line naming the command and exits 2.
type usageError struct {
	cmd *cobra.Command
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usageErrorf(cmd *cobra.Command, format string, a ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, a...)}
}

func run(ctx context.Context, env *environment, args []string) int {
	root := newRoot(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var st exitStatus
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &ue):
		if ue.cmd != nil {
			cmd = ue.cmd
		}
		hint := fmt.Sprintf(" (see '%s --help')", cmd.CommandPath())
		if cmd.Name() == "help" {
			hint = ""
		}
		fmt.Fprintf(env.stderr, "%s: %s%s\n", cmd.CommandPath(), oneLine(ue.msg), hint)
		return exitUsage
	}
	// Cobra's own refusals (an unknown command or flag) are usage errors.
	fmt.Fprintf(env.stderr, "%s: %s (see '%s --help')\n", cmd.CommandPath(), oneLine(err.Error()), cmd.CommandPath())
	return exitUsage
}

// oneLine folds cobra's multi-line messages ("Did you mean this?") into
// one line.
func oneLine(s string) string {
	f := strings.Fields(s)
	out := strings.Join(f, " ")
	return strings.Replace(out, " Did you mean this? ", "; did you mean ", 1)
}

// newRoot builds the whole command tree for one run.
func newRoot(env *environment) *cobra.Command {
	root := &cobra.Command{
		Use:   "accords-mcp",
		Short: "MCP server for Vaultclaw: agents act through the vault without holding secrets",
		Long: `accords-mcp lets AI agents act through Vaultclaw, a local secrets vault, without holding a secret.

With no command it serves MCP over stdio, attached to the daemon that owns the database (started
when none runs), or over HTTP when --http or ACCORDS_MCP_HTTP_ADDR is set. MCP clients (Claude
Desktop, Cursor, VS Code, ...) start it themselves; see README.md for their settings.`,
		Example: `  accords-mcp dev-vault                      # a local Vaultclaw simulator to try it with
  accords-mcp search send email --json       # search the cookbook catalog
  accords-mcp status                         # the daemon serving the database, if any
  accords-mcp help search                    # the usage of one command`,
		Version:                    versionLine(),
		SilenceErrors:              true,
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		CompletionOptions:          cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SetIn(env.stdin)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().String("db", "", "database `FILE` (overrides ACCORDS_MCP_DB; default <user config dir>/accords-mcp/accords.db)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if f := cmd.Flag("db"); f != nil && f.Changed {
			if strings.TrimSpace(f.Value.String()) == "" {
				return usageErrorf(cmd, "--db needs a file path")
			}
			env.setDB(f.Value.String())
		}
		return nil
	}
	serveFlags(root, env)
	for _, b := range builders {
		root.AddCommand(b(env))
	}
	root.SetHelpCommand(helpCommand())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErrorf(c, "%s", err.Error()) })
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q", args[0])
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return usageErrorf(c, "%s", msg)
	}
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		strictArgs(c)
	}
	return root
}

// setDB makes --db win over ACCORDS_MCP_DB for everything that reads the
// environment, including a daemon this launch starts.
func (e *environment) setDB(path string) {
	get := e.getenv
	e.getenv = func(k string) string {
		if k == "ACCORDS_MCP_DB" {
			return path
		}
		return get(k)
	}
}

// strictArgs makes every command refuse arguments and unknown subcommands
// it does not take (cobra accepts them by default).
func strictArgs(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && c.Run == nil && c.RunE == nil:
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] != "help" {
				return usageErrorf(cmd, "unknown subcommand %q", args[0])
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return cmd.Help()
			}
			fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
			return usageErrorf(cmd, "a subcommand is needed")
		}
	case c.Args == nil:
		c.Args = noArgs
	}
	if orig := c.Args; orig != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				if _, ok := errors.AsType[*usageError](err); ok {
					return err
				}
				return usageErrorf(cmd, "%s", err.Error())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		strictArgs(sub)
	}
}

// noArgs is cobra.NoArgs with a message that says what was wrong.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "takes no arguments, got %q", strings.Join(args, " "))
	}
	return nil
}

// helpCommand is `help [COMMAND...]`: cobra's own prints the general help
// and exits 0 for a command that does not exist.
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "show the usage of a command",
		Long:  "Show the usage of a command (help catalog import), or the list of commands.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil || target == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usageErrorf(c, "no command %q; 'accords-mcp help' lists them", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/platform/version"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use:   "status",
			Short: "show the daemon that owns the database: pid, uptime, mode, transports, attached clients (exit 3 when none runs)",
			Long: `Show the daemon that owns the database: pid, version, uptime, mode, transports and the attached
clients. Exits 0 when one runs, 3 (LSB "program is not running") when none does, 1 on an error.`,
			RunE: func(cmd *cobra.Command, _ []string) error { return exit(runStatus(cmd.Context(), env, asJSON)) },
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
		return c
	})
	register(func(env *environment) *cobra.Command {
		var wait time.Duration
		c := &cobra.Command{
			Use:   "stop",
			Short: "stop the daemon that owns the database (it finishes calls in flight first)",
			RunE:  func(cmd *cobra.Command, _ []string) error { return exit(runStop(cmd.Context(), env, wait)) },
		}
		c.Flags().DurationVar(&wait, "timeout", 30*time.Second, "how long to wait for the daemon to exit")
		return c
	})
}

// exitNotRunning is status's exit code when no daemon runs (LSB's
// "program is not running").
const exitNotRunning = 3

func runStatus(ctx context.Context, env *environment, asJSON bool) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp status:", err)
		return 1
	}
	c := control.NewClient(control.SocketPath(cfg.DBPath))
	defer c.Close()
	st, err := statusWithin(ctx, c, 5*time.Second)
	if errors.Is(err, control.ErrNotRunning) {
		if asJSON {
			_ = json.NewEncoder(env.stdout).Encode(map[string]any{"running": false, "db": cfg.DBPath})
		} else {
			fmt.Fprintf(env.stdout, "no daemon running for %s\n", cfg.DBPath)
		}
		return exitNotRunning
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp status:", err)
		return 1
	}
	if asJSON {
		return printJSON(env, st)
	}
	writeStatus(env.stdout, st)
	return 0
}

func describeTransports(st control.Status) string {
	if len(st.Transports) == 0 {
		return st.Transport
	}
	return strings.Join(st.Transports, ", ")
}

func writeStatus(w io.Writer, st control.Status) {
	up := time.Duration(st.UptimeSeconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "daemon      pid %d, version %s, %s\n", st.PID, st.Version, st.Mode)
	if st.Build != "" {
		fmt.Fprintf(w, "build       %s\n", st.Build)
	}
	if mine := version.ID(); st.Build != mine {
		// Launches of this binary attach to it all the same, with a warning.
		fmt.Fprintf(w, "this binary %s: another build (accords-mcp stop, then start the clients again, to run this one)\n", mine)
	}
	fmt.Fprintf(w, "db          %s (schema version %d)\n", st.DB, st.SchemaVersion)
	fmt.Fprintf(w, "uptime      %s (since %s)\n", up, st.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "transports  %s\n", describeTransports(st))
	if st.IdleTimeout != "" {
		fmt.Fprintf(w, "idle exit   after %s with no client attached\n", st.IdleTimeout)
	}
	if st.Log != "" {
		fmt.Fprintf(w, "log         %s\n", st.Log)
	}
	fmt.Fprintf(w, "clients     %d attached\n", len(st.Clients))
	if len(st.Clients) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tPID\tCLIENT\tSINCE\tVIEW")
	for _, c := range st.Clients {
		name := c.Name
		if c.Version != "" {
			name += " " + c.Version
		}
		if name == "" {
			name = "-"
		}
		view := "all tools"
		var parts []string
		if c.View.ReadOnly {
			parts = append(parts, "read-only")
		}
		if len(c.View.Toolsets) > 0 {
			parts = append(parts, "toolsets "+strings.Join(c.View.Toolsets, ","))
		}
		if c.View.Dynamic {
			parts = append(parts, "dynamic toolsets")
		}
		if len(parts) > 0 {
			view = strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", c.Session, c.PID, name, c.Since.Format(time.RFC3339), view)
	}
	_ = tw.Flush()
}

func runStop(ctx context.Context, env *environment, timeout time.Duration) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp stop:", err)
		return 1
	}
	c := control.NewClient(control.SocketPath(cfg.DBPath))
	defer c.Close()
	st, err := statusWithin(ctx, c, 5*time.Second)
	if errors.Is(err, control.ErrNotRunning) {
		fmt.Fprintf(env.stdout, "no daemon running for %s\n", cfg.DBPath)
		return 0
	}
	if err == nil {
		err = c.Stop(ctx, "accords-mcp stop")
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp stop:", err)
		return 1
	}
	if err := waitGone(ctx, c, timeout); err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp stop: daemon pid %d: %v\n", st.PID, err)
		return 1
	}
	fmt.Fprintf(env.stdout, "stopped daemon pid %d (%s, %d client(s) were attached; they start a new one at their next request)\n", st.PID, st.Mode, len(st.Clients))
	return 0
}

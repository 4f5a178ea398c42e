package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
)

func init() {
	register("backup", "write a consistent snapshot of the database (--out FILE, or - for stdout), even while the daemon serves", runBackup)
}

func runBackup(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	out := fs.String("out", "-", "backup file to write (0600, via a temporary file and rename); - streams to stdout")
	verify := fs.Bool("verify", true, "check the written file (bbolt consistency, buckets, schema, audit chain)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: accords-mcp backup [--out FILE|-] [--verify=false]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp backup:", err)
		return 1
	}
	if storeIsNew(cfg) {
		fmt.Fprintf(env.stderr, "accords-mcp backup: no database at %s (set ACCORDS_MCP_DB?)\n", cfg.DBPath)
		return 1
	}
	toStdout := *out == "-" || *out == ""
	if toStdout {
		if f, ok := env.stdout.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				fmt.Fprintln(env.stderr, "accords-mcp backup: refusing to write a binary database to a terminal; use --out FILE or redirect stdout")
				return 2
			}
		}
	}
	return withBackend(ctx, env, func(b admin.Backend, w where) int {
		return writeBackup(ctx, env, b, w, *out, toStdout, *verify)
	})
}

// writeBackup takes a snapshot through m (the daemon's hot snapshot, or
// the file read-only) into out or stdout, and verifies the file.
func writeBackup(ctx context.Context, env *environment, m admin.Maintenance, w where, out string, toStdout, verify bool) int {
	via := "read from the database file; no daemon running"
	if w.remote {
		via = "hot snapshot from the running daemon via " + w.socket
	}
	if toStdout {
		n, err := m.Backup(ctx, env.stdout)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp backup:", err)
			return 1
		}
		fmt.Fprintf(env.stderr, "backup: %d bytes streamed to stdout (%s)\n", n, via)
		return 0
	}
	removed, cerr := backup.CleanStale(filepath.Dir(out))
	for _, l := range removed {
		fmt.Fprintf(env.stderr, "backup: removed %s (%d bytes), left by a backup or restore that was killed\n", l.Path, l.Size)
	}
	if cerr != nil {
		fmt.Fprintln(env.stderr, "accords-mcp backup: warning:", cerr)
	}
	var n int64
	err := backup.WriteFile(out, func(wr io.Writer) error {
		var err error
		n, err = m.Backup(ctx, wr)
		return err
	})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp backup:", err)
		return 1
	}
	if verify {
		info, err := backup.Check(out)
		if err != nil {
			fmt.Fprintf(env.stderr, "accords-mcp backup: the written file %s does not verify: %v\n", out, err)
			return 1
		}
		fmt.Fprintf(env.stdout, "backup: wrote %s (%d bytes, schema version %d, %d audit receipts, verified; %s)\n", out, n, info.SchemaVersion, info.Audit.Count, via)
		return 0
	}
	fmt.Fprintf(env.stdout, "backup: wrote %s (%d bytes, not verified; %s)\n", out, n, via)
	return 0
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var o backupOptions
		c := &cobra.Command{
			Use:   "backup",
			Short: "write a consistent snapshot of the database (--out FILE or DIR, or - for stdout), even while the daemon serves",
			Long: `Write a consistent snapshot of the database, even while the daemon serves (it takes a hot
snapshot). --out FILE writes a new 0600 file through a temporary file and a rename; --out DIR
writes DIR/accords-<UTC time>.db; - streams to stdout (a redirect target file is made 0600).`,
			Example: `  accords-mcp backup --out /var/backups/accords-mcp/
  accords-mcp backup --out accords.backup.db --json
  accords-mcp backup > accords.backup.db`,
			RunE: func(cmd *cobra.Command, _ []string) error { return exit(runBackup(cmd.Context(), env, o)) },
		}
		c.Flags().StringVar(&o.out, "out", "-", "backup FILE, or a folder to write accords-<UTC time>.db into; - streams to stdout")
		c.Flags().BoolVar(&o.verify, "verify", true, "check the written file (bbolt consistency, buckets, schema, audit chain)")
		c.Flags().BoolVar(&o.asJSON, "json", false, "print the result as JSON (path, bytes, schema version, receipts, verified)")
		return c
	})
}

type backupOptions struct {
	out    string
	verify bool
	asJSON bool
}

// backupResult is what backup --json prints.
type backupResult struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	Verified      bool   `json:"verified"`
	SchemaVersion int    `json:"schema_version,omitempty"`
	Receipts      int    `json:"audit_receipts,omitempty"`
	Source        string `json:"source"`
}

func runBackup(ctx context.Context, env *environment, o backupOptions) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp backup:", err)
		return 1
	}
	if storeIsNew(cfg) {
		fmt.Fprintf(env.stderr, "accords-mcp backup: no database at %s (set ACCORDS_MCP_DB or --db?)\n", cfg.DBPath)
		return 1
	}
	out := o.out
	toStdout := out == "-" || out == ""
	if toStdout && o.asJSON {
		fmt.Fprintln(env.stderr, "accords-mcp backup: --json needs --out FILE: stdout carries the backup itself")
		return 2
	}
	if toStdout {
		if f, ok := env.stdout.(*os.File); ok {
			if isTerminal(f) {
				fmt.Fprintln(env.stderr, "accords-mcp backup: refusing to write a binary database to a terminal; use --out FILE or redirect stdout")
				return 2
			}
			protectStdout(env, f)
		}
	} else if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		out = filepath.Join(out, "accords-"+time.Now().UTC().Format("20060102T150405Z")+".db")
	}
	return withBackend(ctx, env, func(b admin.Backend, w where) int {
		return writeBackup(ctx, env, b, w, out, toStdout, o.verify, o.asJSON)
	})
}

// protectStdout makes a regular file standing for stdout private (0600)
// like every copy of the database; a pipe is left alone. Windows has no
// mode bits to tighten: the file keeps its folder's access list.
func protectStdout(env *environment, f *os.File) {
	if runtime.GOOS == "windows" {
		return
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if err := f.Chmod(0o600); err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp backup: warning: stdout is a file readable by others (mode %04o) and cannot be made 0600: %v; the backup holds sealed session tokens and the audit log\n", fi.Mode().Perm(), err)
		return
	}
	fmt.Fprintf(env.stderr, "backup: stdout is a file; its mode was %04o and is now 0600 (the backup holds sealed session tokens and the audit log)\n", fi.Mode().Perm())
}

// writeBackup takes a snapshot through m (the daemon's hot snapshot, or
// the file read-only) into out or stdout, and verifies the file.
func writeBackup(ctx context.Context, env *environment, m admin.Maintenance, w where, out string, toStdout, verify, asJSON bool) int {
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
		if asJSON {
			return printJSON(env, backupResult{Path: out, Bytes: n, Verified: true, SchemaVersion: info.SchemaVersion, Receipts: info.Audit.Count, Source: via})
		}
		fmt.Fprintf(env.stdout, "backup: wrote %s (%d bytes, schema version %d, %d audit receipts, verified; %s)\n", out, n, info.SchemaVersion, info.Audit.Count, via)
		return 0
	}
	if asJSON {
		return printJSON(env, backupResult{Path: out, Bytes: n, Source: via})
	}
	fmt.Fprintf(env.stdout, "backup: wrote %s (%d bytes, not verified; %s)\n", out, n, via)
	return 0
}

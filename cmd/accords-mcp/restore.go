package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var checkOnly, asJSON bool
		c := &cobra.Command{
			Use:   "restore FILE|-",
			Short: "verify a backup and swap it in for the database (a running daemon does the swap itself, holding its clients for a moment)",
			Long: `Verify a backup (bbolt consistency, buckets, schema, audit chain) and swap it in for the
database; the previous database is kept beside it. A running daemon does the swap itself and holds
its clients for the moment of the swap. --check only verifies and changes nothing.`,
			Example: `  accords-mcp restore --check accords.backup.db --json
  accords-mcp restore accords.backup.db`,
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				src := args[0]
				if checkOnly && src == "-" {
					return usageErrorf(cmd, "--check needs a file, not stdin")
				}
				return exit(runRestore(cmd.Context(), env, src, checkOnly, asJSON))
			},
		}
		c.Flags().BoolVar(&checkOnly, "check", false, "only verify the backup; change nothing")
		c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
		return c
	})
}

func runRestore(ctx context.Context, env *environment, src string, checkOnly, asJSON bool) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp restore:", err)
		return 1
	}
	if src != "-" {
		// Said plainly: a path that does not exist is not a question of
		// what the file holds.
		if _, err := os.Stat(src); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(env.stderr, "accords-mcp restore: %s: no such file; nothing was changed\n", src)
			} else {
				fmt.Fprintf(env.stderr, "accords-mcp restore: %v; nothing was changed\n", err)
			}
			return 1
		}
	}
	if checkOnly {
		info, err := backup.Check(src)
		if asJSON {
			out := map[string]any{"path": src, "valid": err == nil, "info": info}
			if err != nil {
				out["error"] = err.Error()
			}
			if code := printJSON(env, out); code != 0 {
				return code
			}
			if err != nil {
				return 1
			}
			return 0
		}
		if err != nil {
			fmt.Fprintf(env.stderr, "accords-mcp restore: %s is not restorable: %v\n", src, err)
			return 1
		}
		fmt.Fprintf(env.stdout, "restore: %s is a valid backup (%d bytes, schema version %d, %d audit receipts verify)\n", src, info.Size, info.SchemaVersion, info.Audit.Count)
		return 0
	}
	if cfg.Store != nil {
		return restoreEtcd(env, cfg, src)
	}
	return withBackend(ctx, env, func(b admin.Backend, _ where) int { return restoreBackup(ctx, env, b, src, asJSON) })
}

// restoreEtcd loads a backup into the etcd store, with every replica
// stopped (it refuses otherwise).
func restoreEtcd(env *environment, cfg config.Config, src string) int {
	db, err := app.OpenStore(cfg, store.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp restore: nothing was changed:", err)
		return 1
	}
	defer db.Close()
	if err := os.MkdirAll(cfg.DataDir(), 0o700); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp restore: nothing was changed:", err)
		return 1
	}
	res, err := backup.RestoreEtcd(db, src, env.stdin, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir(), Record: restoreRecorder(cfg)})
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "restore: %s loaded into %s (schema version %d, %d audit receipts verify)\n", src, db.Path(), res.SchemaVersion, res.Audit.Count)
	printAuditRestore(env, res)
	fmt.Fprintln(env.stdout, "restore: every replica rebuilds its search index on its next start")
	return 0
}

// restoreBackup swaps the backup in: offline under the file lock, or by
// the running daemon (which holds its clients for the moment of the swap).
func restoreBackup(ctx context.Context, env *environment, m admin.Maintenance, src string, asJSON bool) int {
	res, err := m.Restore(ctx, src, env.stdin)
	if asJSON {
		out := map[string]any{"restored": err == nil, "source": src, "result": res}
		if err != nil {
			out["error"] = err.Error()
		}
		if code := printJSON(env, out); code != 0 || err != nil {
			return 1
		}
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp restore: nothing was changed: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "restore: %s restored into %s (schema version %d, %d audit receipts verify)\n", src, res.DBPath, res.SchemaVersion, res.Audit.Count)
	if res.MigratedFrom > 0 {
		fmt.Fprintf(env.stdout, "restore: migrated the backup from schema version %d\n", res.MigratedFrom)
	}
	printAuditRestore(env, res.Result)
	if res.Previous != "" {
		fmt.Fprintf(env.stdout, "restore: the previous database is kept as %s\n", res.Previous)
	}
	switch {
	case res.Reindexed:
		fmt.Fprintf(env.stdout, "restore: search index rebuilt (%d documents)\n", res.IndexDocs)
	case res.IndexError != "":
		fmt.Fprintf(env.stderr, "restore: warning: the index rebuild failed (%s); it is rebuilt on the next start\n", res.IndexError)
	default:
		fmt.Fprintln(env.stdout, "restore: search index cleared; it is rebuilt from the database on the next start")
	}
	if res.Daemon {
		fmt.Fprintln(env.stdout, "restore: done by the running daemon; its clients were held for the swap and carry on with the restored data")
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(env.stderr, "restore: warning:", w)
	}
	return 0
}

// printAuditRestore reports the discarded receipts and the restore's record
// in the restored log (or, as a warning, why there is none).
func printAuditRestore(env *environment, res backup.Result) {
	if d := res.AuditRestore; d != nil {
		fmt.Fprintf(env.stdout, "restore: audit log: %s\n", d.Summary())
	}
	if res.AuditCompareError != "" {
		fmt.Fprintf(env.stderr, "restore: warning: the replaced audit log could not be compared: %s\n", res.AuditCompareError)
	}
	switch {
	case res.AuditRecord != nil:
		fmt.Fprintf(env.stdout, "restore: recorded in the audit log as receipt %d with a signed restore record\n", res.AuditRecord.Seq)
	case res.AuditRecordError != "":
		fmt.Fprintf(env.stderr, "restore: warning: the restore is not recorded in the audit log (%s); a server with a file anchor will flag the log as rolled back until acknowledged\n", res.AuditRecordError)
	}
}

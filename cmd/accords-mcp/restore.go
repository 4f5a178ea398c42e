package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register("restore", "verify a backup and swap it in for the database (a running daemon does the swap itself, holding its clients for a moment)", runRestore)
}

func runRestore(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	checkOnly := fs.Bool("check", false, "only verify the backup; change nothing")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: accords-mcp restore [--check] FILE|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	src := fs.Arg(0)
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp restore:", err)
		return 1
	}
	if *checkOnly {
		if src == "-" {
			fmt.Fprintln(env.stderr, "accords-mcp restore: --check needs a file, not stdin")
			return 2
		}
		info, err := backup.Check(src)
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
	return withBackend(ctx, env, func(b admin.Backend, _ where) int { return restoreBackup(ctx, env, b, src) })
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
	res, err := backup.RestoreEtcd(db, src, env.stdin, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir()})
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "restore: %s loaded into %s (schema version %d, %d audit receipts verify)\n", src, db.Path(), res.SchemaVersion, res.Audit.Count)
	fmt.Fprintln(env.stdout, "restore: every replica rebuilds its search index on its next start")
	return 0
}

// restoreBackup swaps the backup in: offline under the file lock, or by
// the running daemon (which holds its clients for the moment of the swap).
func restoreBackup(ctx context.Context, env *environment, m admin.Maintenance, src string) int {
	res, err := m.Restore(ctx, src, env.stdin)
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp restore: nothing was changed: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "restore: %s restored into %s (schema version %d, %d audit receipts verify)\n", src, res.DBPath, res.SchemaVersion, res.Audit.Count)
	if res.MigratedFrom > 0 {
		fmt.Fprintf(env.stdout, "restore: migrated the backup from schema version %d\n", res.MigratedFrom)
	}
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

func init() {
	register("restore", "verify a backup and swap it in for the database (the daemon must be stopped)", runRestore)
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
	res, err := backup.Restore(src, env.stdin, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir(), Reindex: rebuildIndex(ctx, cfg)})
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp restore: nothing was changed: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "restore: %s restored into %s (schema version %d, %d audit receipts verify)\n", src, cfg.DBPath, res.SchemaVersion, res.Audit.Count)
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
	for _, w := range sessionWarnings(ctx, cfg) {
		fmt.Fprintln(env.stderr, "restore: warning:", w)
	}
	return 0
}

// sessionWarnings reports stored sessions the configured secret key cannot
// open: the key is deliberately not part of the backup, so a restore on
// another machine needs the original key file or ACCORDS_MCP_SECRET_KEY.
func sessionWarnings(ctx context.Context, cfg config.Config) []string {
	db, err := store.Open(cfg.DBPath, store.Options{ReadOnly: true})
	if err != nil {
		return []string{"cannot reopen the restored database: " + err.Error()}
	}
	defer db.Close()
	var scopes []string
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(store.BucketSessions); b != nil {
			return b.ForEach(func(k, _ []byte) error {
				scopes = append(scopes, string(k))
				return nil
			})
		}
		return nil
	})
	if len(scopes) == 0 {
		return nil
	}
	if strings.TrimSpace(cfg.SecretKey) == "" {
		if _, err := os.Stat(cfg.KeyFile()); errors.Is(err, fs.ErrNotExist) {
			return []string{fmt.Sprintf("%d stored session(s) are sealed with a secret key, but %s does not exist: copy the key file from the machine the backup came from, or set ACCORDS_MCP_SECRET_KEY, before starting", len(scopes), cfg.KeyFile())}
		}
	}
	keys, err := keyring.Load(cfg.SecretKey, cfg.KeyFile())
	if err != nil {
		return []string{"cannot load the secret key: " + err.Error()}
	}
	svc := session.New(db, keys, session.Defaults{})
	var bad []string
	for _, sc := range scopes {
		if _, err := svc.Resolve(ctx, sc); err != nil && apperr.As(err).Details["reason"] == "secret_key_mismatch" {
			bad = append(bad, sc)
		}
	}
	if len(bad) > 0 {
		return []string{fmt.Sprintf("the sessions of scope(s) %s were sealed with another secret key (%s): use the original key file or ACCORDS_MCP_SECRET_KEY, or configure those sessions again", strings.Join(bad, ", "), keys.Source)}
	}
	return nil
}

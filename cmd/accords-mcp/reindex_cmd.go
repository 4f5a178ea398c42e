package main

import (
	"context"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register("reindex", "rebuild the cookbook search index from the database (progress on stderr)", runReindex)
}

func runReindex(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "reindex", "reindex")
	quiet := fs.Bool("quiet", false, "no progress bar")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintln(env.stderr, "accords-mcp: reindex takes no arguments")
		return 2
	}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return reindex(withContext(ctx), env, b, *quiet) })
}

// reindex rebuilds the index with a progress bar on stderr.
func reindex(ctx context.Context, env *environment, cat admin.Catalog, quiet bool) int {
	bar := &progressBar{w: env.stderr, label: "reindexing", width: 30}
	start := time.Now()
	res, err := cat.Reindex(ctx, func(d, total int) {
		if !quiet {
			bar.update(d, total, "entries")
		}
	})
	bar.finish()
	if err != nil {
		printErr(env.stderr, err)
		return 1
	}
	fmt.Fprintf(env.stdout, "reindexed %d entries at catalog revision %d\n", res.Entries, res.Rev)
	fmt.Fprintf(env.stderr, "took %s\n", time.Since(start).Round(time.Millisecond))
	return 0
}

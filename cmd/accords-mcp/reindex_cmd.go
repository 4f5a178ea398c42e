package main

import (
	"context"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/app"
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
	return withCatalogApp(env, func(a *app.App) int {
		bar := &progressBar{w: env.stderr, label: "reindexing", width: 30}
		entries := 0
		start := time.Now()
		err = a.Catalog.Reindex(withContext(ctx), func(d, total int) {
			entries = d
			if !*quiet {
				bar.update(d, total, "entries")
			}
		})
		bar.finish()
		if err != nil {
			printErr(env.stderr, err)
			return 1
		}
		fmt.Fprintf(env.stdout, "reindexed %d entries at catalog revision %d\n", entries, a.Catalog.Rev())
		fmt.Fprintf(env.stderr, "took %s\n", time.Since(start).Round(time.Millisecond))
		return 0
	})
}

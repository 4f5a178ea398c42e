package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var quiet, asJSON bool
		c := &cobra.Command{
			Use:   "reindex",
			Short: "rebuild the cookbook search index from the database (progress on stderr)",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return reindex(ctx, env, b, quiet || asJSON, asJSON) })
			},
		}
		c.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
		c.Flags().BoolVar(&asJSON, "json", false, "print the result envelope ({entries, rev}) as JSON; no progress bar")
		return c
	})
}

// reindex rebuilds the index with a progress bar on stderr.
func reindex(ctx context.Context, env *environment, cat admin.Catalog, quiet, asJSON bool) int {
	bar := &progressBar{w: env.stderr, label: "reindexing", width: 30}
	start := time.Now()
	res, err := cat.Reindex(ctx, func(d, total int) {
		if !quiet {
			bar.update(d, total, "entries")
		}
	})
	bar.finish()
	if asJSON {
		return output(env, true, res, err, nil)
	}
	if err != nil {
		printErr(env.stderr, err)
		return 1
	}
	fmt.Fprintf(env.stdout, "reindexed %d entries at catalog revision %d\n", res.Entries, res.Rev)
	fmt.Fprintf(env.stderr, "took %s\n", time.Since(start).Round(time.Millisecond))
	return 0
}

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var q index.Query
		var tags []string
		var asJSON bool
		c := &cobra.Command{
			Use:   "search [QUERY...]",
			Short: "search cookbook recipes and templates by text and filters",
			Long: `Search the recipes and templates of the stored cookbooks: the words of QUERY ranked by relevance
(BM25 over titles, descriptions, tags, ids), narrowed by the filters. With filters and no QUERY
every matching entry is listed, unranked.`,
			Example: `  accords-mcp search send an email with a document
  accords-mcp search --connector generic.http --json
  accords-mcp search invoice --tag finance --type template.plan.v1`,
			Args: cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if q.EntryType != "" && !slices.Contains(catalog.EntryTypes, q.EntryType) {
					return usageErrorf(cmd, "--type must be one of %s", strings.Join(catalog.EntryTypes, ", "))
				}
				var tagList []string
				for _, t := range tags {
					tagList = append(tagList, strings.Split(t, ",")...)
				}
				q.Text = strings.Join(args, " ")
				q.Tags = catalog.CanonicalTags(tagList)
				return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return searchRecipes(ctx, env, b, q, asJSON) })
			},
		}
		f := c.Flags()
		f.StringVar(&q.ConnectorID, "connector", "", "only entries of this connector id")
		f.StringVar(&q.Verb, "verb", "", "only entries with this verb")
		f.StringArrayVar(&tags, "tag", nil, "only entries carrying this tag (repeatable, or comma-separated)")
		f.StringVar(&q.EntryType, "type", "", "only entries of this type ("+strings.Join(catalog.EntryTypes, ", ")+")")
		f.StringVar(&q.CookbookID, "cookbook", "", "only entries of this cookbook id")
		f.BoolVar(&q.AllVersions, "all-versions", false, "search every stored version, not only the latest of each cookbook")
		f.IntVar(&q.Limit, "limit", 20, "maximum number of hits (at most 1000)")
		f.BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
		_ = c.RegisterFlagCompletionFunc("type", cobra.FixedCompletions(catalog.EntryTypes, cobra.ShellCompDirectiveNoFileComp))
		return c
	})
}

// searchRecipes prints the ranked hits of q.
func searchRecipes(ctx context.Context, env *environment, cat admin.Catalog, q index.Query, asJSON bool) int {
	res, err := cat.Search(ctx, q)
	return output(env, asJSON, res, err, func(w io.Writer) {
		if len(res.Items) == 0 {
			fmt.Fprintln(w, "no matching recipes")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// With no words there is no relevance: every hit scores 0, and a
		// column of zeros reads as "nothing matched well".
		ranked := strings.TrimSpace(q.Text) != ""
		if ranked {
			fmt.Fprint(tw, "SCORE\t")
		}
		fmt.Fprintln(tw, "COOKBOOK\tVERSION\tENTRY\tTYPE\tTITLE")
		for _, h := range res.Items {
			if ranked {
				fmt.Fprintf(tw, "%.3f\t", h.Score)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.CookbookID, h.Version, h.EntryID, h.EntryType, h.Title)
		}
		tw.Flush()
		if uint64(len(res.Items)) < res.Total {
			fmt.Fprintf(w, "(%d of %d matches; use --limit for more)\n", len(res.Items), res.Total)
		}
	})
}

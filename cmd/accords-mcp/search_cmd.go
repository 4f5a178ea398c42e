package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register("search", "search cookbook recipes and templates: search QUERY [--connector --verb --tag --type --all-versions --json]", runSearch)
}

func runSearch(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "search", "search [QUERY...] [flags]")
	connector := fs.String("connector", "", "only entries of this connector id")
	verb := fs.String("verb", "", "only entries with this verb")
	var tags multiFlag
	fs.Var(&tags, "tag", "only entries carrying this tag (repeatable, or comma-separated)")
	entryType := fs.String("type", "", "only entries of this type (recipe.verb.v1, recipe.plan.v1, template.verb.v1, template.plan.v1)")
	cookbook := fs.String("cookbook", "", "only entries of this cookbook id")
	all := fs.Bool("all-versions", false, "search every stored version, not only the latest of each cookbook")
	limit := fs.Int("limit", 20, "maximum number of hits (at most 1000)")
	asJSON := fs.Bool("json", false, "print the result envelope as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if *entryType != "" && !slices.Contains(catalog.EntryTypes, *entryType) {
		fmt.Fprintf(env.stderr, "accords-mcp: --type must be one of %s\n", strings.Join(catalog.EntryTypes, ", "))
		return 2
	}
	var tagList []string
	for _, t := range tags {
		tagList = append(tagList, strings.Split(t, ",")...)
	}
	q := index.Query{Text: strings.Join(pos, " "), ConnectorID: *connector, Verb: *verb, Tags: catalog.CanonicalTags(tagList),
		EntryType: *entryType, CookbookID: *cookbook, AllVersions: *all, Limit: *limit}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return searchRecipes(withContext(ctx), env, b, q, *asJSON) })
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
		fmt.Fprintln(tw, "SCORE\tCOOKBOOK\tVERSION\tENTRY\tTYPE\tTITLE")
		for _, h := range res.Items {
			fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\t%s\t%s\n", h.Score, h.CookbookID, h.Version, h.EntryID, h.EntryType, h.Title)
		}
		tw.Flush()
		if uint64(len(res.Items)) < res.Total {
			fmt.Fprintf(w, "(%d of %d matches; use --limit for more)\n", len(res.Items), res.Total)
		}
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "catalog",
			Short: "manage cookbooks: list, get, import FILE..., export, delete",
			Long: `Manage the cookbooks in the database. Each command runs against the daemon when one owns the
database, else opens it as the server does. Tables are for people; --json prints the envelope the
MCP tools return (ok, data or error).`,
		}
		c.AddCommand(catalogListCmd(env), catalogGetCmd(env), catalogImportCmd(env), catalogExportCmd(env), catalogDeleteCmd(env))
		return c
	})
}

func catalogListCmd(env *environment) *cobra.Command {
	var f catalog.ListFilter
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "list stored cookbook versions",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return listCookbooks(ctx, env, b, f, asJSON) })
		},
	}
	c.Flags().BoolVar(&f.LatestOnly, "latest", false, "only the latest version of each cookbook")
	c.Flags().StringVar(&f.Query, "query", "", "case-insensitive substring of id, title, description or tags")
	c.Flags().StringVar(&f.Tag, "tag", "", "only cookbooks carrying this tag")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
	return c
}

func catalogGetCmd(env *environment) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "get ID[@VERSION]",
		Short: "show one cookbook version (the latest unless @VERSION) and its entries",
		Example: `  accords-mcp catalog get google.workspace
  accords-mcp catalog get google.workspace@1.4.0 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, version := splitRef(args[0])
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return getCookbook(ctx, env, b, id, version, asJSON) })
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result envelope ({bundle}) as JSON, as vaultclaw_cookbook_get returns it")
	return c
}

func catalogImportCmd(env *environment) *cobra.Command {
	var policyFlag string
	var asJSON bool
	c := &cobra.Command{
		Use:   "import FILE...",
		Short: "validate and store bundle files (- reads one bundle from stdin)",
		Example: `  accords-mcp catalog import weather.json other.json
  curl -fsS https://example.com/bundle.json | accords-mcp catalog import - --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			policy, err := catalog.NormalizePolicy(policyFlag)
			if err != nil {
				return usageErrorf(cmd, "--conflict-policy: %s", apperr.As(err).Message)
			}
			if slices.Contains(files, "-") && len(files) > 1 {
				n := 0
				for _, f := range files {
					if f == "-" {
						n++
					}
				}
				if n > 1 {
					return usageErrorf(cmd, "stdin (-) can be read only once")
				}
			}
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int {
				return importBundles(ctx, env, b, files, policy, asJSON)
			})
		},
	}
	c.Flags().StringVar(&policyFlag, "conflict-policy", "FAIL", "when a version exists with different content: FAIL, OVERWRITE or SKIP_IF_EXISTS")
	c.Flags().StringVar(&policyFlag, "policy", "FAIL", "the same as --conflict-policy")
	_ = c.Flags().MarkHidden("policy")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result envelope (items per file, conflict_policy) as JSON")
	return c
}

func catalogExportCmd(env *environment) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "export ID[@VERSION]",
		Short: "print a bundle exactly as stored (indented)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, version := splitRef(args[0])
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int { return exportBundle(ctx, env, b, id, version, out) })
		},
	}
	c.Flags().StringVar(&out, "out", "", "write to FILE instead of stdout")
	return c
}

func catalogDeleteCmd(env *environment) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "delete ID[@VERSION]",
		Short: "delete one version (the latest when @VERSION is omitted)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, version := splitRef(args[0])
			return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int {
				return deleteCookbook(ctx, env, b, id, version, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
	return c
}

// getCookbook prints one stored version: the tool's envelope with asJSON,
// else its header and a table of its entries.
func getCookbook(ctx context.Context, env *environment, cat admin.Catalog, id, version string, asJSON bool) int {
	st, err := cat.ExportBundle(ctx, id, version)
	if asJSON || err != nil {
		return output(env, asJSON, map[string]any{"bundle": st.Raw}, err, nil)
	}
	b, err := catalog.DecodeBundle(st.Raw)
	if err != nil {
		printErr(env.stderr, apperr.Internal("decode stored bundle", err))
		return 1
	}
	w := env.stdout
	fmt.Fprintf(w, "%s@%s  %s\n", b.CookbookID, b.Version, b.Title)
	if b.Description != "" {
		fmt.Fprintf(w, "%s\n", b.Description)
	}
	if len(b.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(b.Tags, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tTYPE\tCONNECTOR\tVERB\tTITLE")
	for _, e := range b.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.EntryID, e.EntryType, dash(e.ConnectorID), dash(e.Verb), e.Title)
	}
	_ = tw.Flush()
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listCookbooks prints the stored cookbook versions.
func listCookbooks(ctx context.Context, env *environment, cat admin.Catalog, f catalog.ListFilter, asJSON bool) int {
	res, err := cat.ListCookbooks(ctx, f)
	data := map[string]any{"items": res.Items, "root_dir": res.RootDir}
	return output(env, asJSON, data, err, func(w io.Writer) {
		if len(res.Items) == 0 {
			fmt.Fprintln(w, "no cookbooks")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COOKBOOK\tVERSION\tLATEST\tENTRIES\tTITLE")
		for _, it := range res.Items {
			mark := ""
			if it.Latest {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", it.CookbookID, it.Version, mark, it.EntryCount, it.Title)
		}
		tw.Flush()
	})
}

// importResult is one file's outcome.
type importResult struct {
	File   string                `json:"file"`
	Result *catalog.UpsertResult `json:"result,omitempty"`
	Error  *importError          `json:"error,omitempty"`
}

type importError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// importBundles validates and stores each file, reporting per file as the
// tool envelope (asJSON) or a table with each failure's reason.
func importBundles(ctx context.Context, env *environment, cat admin.Catalog, files []string, policy string, asJSON bool) int {
	bar := &progressBar{w: env.stderr, label: "importing", width: 30}
	var results []importResult
	var first *apperr.Error
	failed := 0
	for i, f := range files {
		r := importResult{File: f}
		res, err := importFile(ctx, env, cat, f, policy)
		if err != nil {
			ae := apperr.As(err)
			r.Error = &importError{Code: ae.Code, Message: ae.Message, Details: ae.Details}
			if first == nil {
				first = ae
			}
			failed++
		} else {
			r.Result = res
		}
		results = append(results, r)
		if len(files) > 1 {
			bar.update(i+1, len(files), "")
		}
	}
	bar.finish()
	if asJSON {
		data := map[string]any{"items": results, "conflict_policy": policy}
		var err error
		if first != nil {
			e := apperr.New(first.Code, "%d of %d files failed to import; the first (%s): %s", failed, len(files), firstFailed(results), first.Message)
			e.Category = first.Category
			e.Details["items"] = results
			e.Details["conflict_policy"] = policy
			e.Details["failed"] = failed
			err = e
		}
		return output(env, true, data, err, nil)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tCOOKBOOK\tVERSION\tOUTCOME")
	for _, r := range results {
		if r.Error != nil {
			fmt.Fprintf(tw, "%s\t-\t-\terror: %s: %s\n", r.File, r.Error.Code, r.Error.Message)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.File, r.Result.Cookbook.CookbookID, r.Result.Cookbook.Version, r.Result.Outcome)
	}
	tw.Flush()
	for _, r := range results {
		if r.Error != nil {
			printErr(env.stderr, (&apperr.Error{Code: r.Error.Code, Message: r.Error.Message, Details: r.Error.Details}).With("file", r.File))
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func firstFailed(rs []importResult) string {
	for _, r := range rs {
		if r.Error != nil {
			return r.File
		}
	}
	return ""
}

// importFile reads one bundle file here (the daemon may not see this
// directory), or stdin for "-".
func importFile(ctx context.Context, env *environment, cat admin.Catalog, path, policy string) (*catalog.UpsertResult, error) {
	var r io.Reader
	if path == "-" {
		r = env.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, apperr.Validation("file", "cannot read %s: %v", path, err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, admin.MaxImportBytes+1))
	if err != nil {
		return nil, apperr.Validation("file", "cannot read %s: %v", path, err)
	}
	if len(raw) > admin.MaxImportBytes {
		return nil, apperr.Validation("file", "%s is larger than %d bytes", path, admin.MaxImportBytes)
	}
	return cat.ImportBundle(ctx, raw, policy)
}

// exportBundle prints (or writes) a bundle exactly as stored, indented.
func exportBundle(ctx context.Context, env *environment, cat admin.Catalog, id, version, out string) int {
	st, err := cat.ExportBundle(ctx, id, version)
	if err != nil {
		printErr(env.stderr, err)
		return 1
	}
	var sb bytes.Buffer
	if err := json.Indent(&sb, st.Raw, "", "  "); err != nil {
		printErr(env.stderr, apperr.Internal("format bundle", err))
		return 1
	}
	sb.WriteString("\n")
	if out == "" {
		fmt.Fprint(env.stdout, sb.String())
		return 0
	}
	if err := os.WriteFile(out, sb.Bytes(), 0o644); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	fmt.Fprintf(env.stderr, "exported %s@%s to %s\n", st.CookbookID, st.Version, out)
	return 0
}

// deleteCookbook deletes one version (the latest when version is "").
func deleteCookbook(ctx context.Context, env *environment, cat admin.Catalog, id, version string, asJSON bool) int {
	res, err := cat.DeleteCookbook(ctx, id, version)
	return output(env, asJSON, res, err, func(w io.Writer) {
		fmt.Fprintf(w, "deleted %s@%s\n", res.CookbookID, res.Version)
	})
}

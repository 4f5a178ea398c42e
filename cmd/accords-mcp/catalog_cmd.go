package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

func init() {
	register("catalog", "manage cookbooks: catalog list | import FILE... | export ID[@VERSION] | delete ID[@VERSION]", runCatalog)
}

const catalogUsage = `usage: accords-mcp catalog <subcommand> [flags]

subcommands:
  list [--latest] [--query TEXT] [--tag TAG] [--json]   list stored cookbook versions
  import FILE... [--policy FAIL|OVERWRITE|SKIP_IF_EXISTS] [--json]
                                                         validate and store bundle files
  export ID[@VERSION] [--out FILE]                       print a bundle exactly as stored
  delete ID[@VERSION] [--json]                           delete one version (latest when omitted)
`

func runCatalog(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.stderr, catalogUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx = withContext(ctx)
	switch args[0] {
	case "list":
		return catalogList(ctx, env, args[1:])
	case "import":
		return catalogImport(ctx, env, args[1:])
	case "export":
		return catalogExport(ctx, env, args[1:])
	case "delete":
		return catalogDelete(ctx, env, args[1:])
	}
	fmt.Fprintf(env.stderr, "accords-mcp: unknown catalog subcommand %q\n\n%s", args[0], catalogUsage)
	return 2
}

func catalogList(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "catalog list", "catalog list [flags]")
	latest := fs.Bool("latest", false, "only the latest version of each cookbook")
	query := fs.String("query", "", "case-insensitive substring of id, title, description or tags")
	tag := fs.String("tag", "", "only cookbooks carrying this tag")
	asJSON := fs.Bool("json", false, "print the result envelope as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintln(env.stderr, "accords-mcp: catalog list takes no arguments")
		return 2
	}
	f := catalog.ListFilter{Query: *query, Tag: *tag, LatestOnly: *latest}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return listCookbooks(ctx, env, b, f, *asJSON) })
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

func catalogImport(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "catalog import", "catalog import FILE... [flags]")
	policyFlag := fs.String("policy", "FAIL", "conflict policy when a version exists with different content: FAIL, OVERWRITE or SKIP_IF_EXISTS")
	asJSON := fs.Bool("json", false, "print the per-file results as JSON")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(files) == 0 {
		fmt.Fprintln(env.stderr, "accords-mcp: catalog import needs at least one FILE")
		return 2
	}
	policy, err := catalog.NormalizePolicy(*policyFlag)
	if err != nil {
		printErr(env.stderr, err)
		return 2
	}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return importBundles(ctx, env, b, files, policy, *asJSON) })
}

// importBundles validates and stores each file, reporting per file.
func importBundles(ctx context.Context, env *environment, cat admin.Catalog, files []string, policy string, asJSON bool) int {
	bar := &progressBar{w: env.stderr, label: "importing", width: 30}
	var results []importResult
	failed := 0
	for i, f := range files {
		r := importResult{File: f}
		res, err := importFile(ctx, cat, f, policy)
		if err != nil {
			ae := apperr.As(err)
			r.Error = &importError{Code: ae.Code, Message: ae.Message, Details: ae.Details}
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
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"ok": failed == 0, "items": results, "conflict_policy": policy}); err != nil {
			fmt.Fprintf(env.stderr, "write JSON: %v\n", err)
			return 1
		}
	} else {
		tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tCOOKBOOK\tVERSION\tOUTCOME")
		for _, r := range results {
			if r.Error != nil {
				fmt.Fprintf(tw, "%s\t-\t-\terror\n", r.File)
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
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// importFile reads one bundle file here (the daemon may not see this
// command's working directory) and hands its bytes over.
func importFile(ctx context.Context, cat admin.Catalog, path, policy string) (*catalog.UpsertResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, apperr.Validation("file", "cannot read %s: %v", path, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, admin.MaxImportBytes+1))
	if err != nil {
		return nil, apperr.Validation("file", "cannot read %s: %v", path, err)
	}
	if len(raw) > admin.MaxImportBytes {
		return nil, apperr.Validation("file", "%s is larger than %d bytes", path, admin.MaxImportBytes)
	}
	return cat.ImportBundle(ctx, raw, policy)
}

func catalogExport(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "catalog export", "catalog export ID[@VERSION] [--out FILE]")
	out := fs.String("out", "", "write to FILE instead of stdout")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.stderr, "accords-mcp: catalog export needs exactly one ID[@VERSION]")
		return 2
	}
	id, version := splitRef(pos[0])
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return exportBundle(ctx, env, b, id, version, *out) })
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

func catalogDelete(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "catalog delete", "catalog delete ID[@VERSION] [--json]")
	asJSON := fs.Bool("json", false, "print the result envelope as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.stderr, "accords-mcp: catalog delete needs exactly one ID[@VERSION]")
		return 2
	}
	id, version := splitRef(pos[0])
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return deleteCookbook(ctx, env, b, id, version, *asJSON) })
}

// deleteCookbook deletes one version (the latest when version is "").
func deleteCookbook(ctx context.Context, env *environment, cat admin.Catalog, id, version string, asJSON bool) int {
	res, err := cat.DeleteCookbook(ctx, id, version)
	return output(env, asJSON, res, err, func(w io.Writer) {
		fmt.Fprintf(w, "deleted %s@%s\n", res.CookbookID, res.Version)
	})
}

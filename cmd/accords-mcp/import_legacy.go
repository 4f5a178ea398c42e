package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/catalog/legacy"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register("import-legacy", "import the previous accords-mcp's catalog folder (cookbooks and sources) into the database; the folder is only read", runImportLegacy)
}

// legacyImporter adapts the catalog and remote-source services of a.
func legacyImporter(a *app.App) legacy.Importer {
	if a.Catalog == nil {
		return nil
	}
	return legacy.Services{Catalog: a.Catalog, Remote: a.Remote}
}

func runImportLegacy(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("import-legacy", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	policy := fs.String("conflict-policy", legacy.PolicySkip, "what to do when a cookbook version or source already exists: SKIP_IF_EXISTS, OVERWRITE or FAIL")
	dryRun := fs.Bool("dry-run", false, "only read the folder and report what would be imported")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: accords-mcp import-legacy [--conflict-policy P] [--dry-run] [--json] [DIR]")
		fmt.Fprintln(env.stderr, "DIR defaults to ACCORDS_MCP_CATALOG_DIR, else <user config dir>/accords-mcp/catalog")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	if _, err := legacy.NormalizePolicy(*policy); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
		return 2
	}
	dir := fs.Arg(0)
	if dir == "" {
		d, err := legacy.DefaultDir(env.getenv)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
			return 1
		}
		dir = d
	}
	folder, err := legacy.Scan(dir)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
		return 1
	}
	var imp legacy.Importer
	if !*dryRun {
		cfg, err := env.config()
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
			return 1
		}
		a, err := app.Open(cfg, nil)
		if err != nil {
			if errors.Is(err, store.ErrLocked) {
				fmt.Fprintln(env.stderr, "accords-mcp import-legacy: the daemon holds the database; stop it, import, and start it again (nothing was imported)")
			} else {
				fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
			}
			return 1
		}
		defer a.Close()
		if imp = legacyImporter(a); imp == nil {
			fmt.Fprintln(env.stderr, "accords-mcp import-legacy: this build has no catalog store to import into; run with --dry-run to check the folder")
			return 1
		}
	}
	rep, err := legacy.Import(ctx, folder, imp, *policy)
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		writeLegacyReport(env.stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp import-legacy:", err)
		return 1
	}
	if rep.Refused > 0 {
		return 1
	}
	return 0
}

func writeLegacyReport(w io.Writer, rep legacy.Report) {
	mode := ""
	if rep.DryRun {
		mode = ", dry run: nothing written"
	}
	fmt.Fprintf(w, "import-legacy: %s (conflict policy %s%s)\n", rep.Dir, rep.Policy, mode)
	for _, it := range rep.Items {
		name := it.ID
		if it.Version != "" {
			name += "@" + it.Version
		}
		outcome := it.Outcome
		if rep.DryRun && outcome == legacy.Imported.String() {
			outcome = "would import"
		}
		line := fmt.Sprintf("  %-12s %-6s %s", outcome, it.Kind, name)
		if it.Reason != "" && (!rep.DryRun || it.Reason != "dry run") {
			line += ": " + it.Reason
		}
		fmt.Fprintln(w, line)
	}
	verb := "imported"
	if rep.DryRun {
		verb = "to import"
	}
	fmt.Fprintf(w, "import-legacy: %d %s, %d skipped, %d refused; the folder was not modified\n", rep.Imported, verb, rep.Skipped, rep.Refused)
}

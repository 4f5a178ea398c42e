package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/catalog/legacy"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var o legacyOptions
		c := &cobra.Command{
			Use:   "import-legacy [DIR]",
			Short: "import the previous accords-mcp's catalog folder (cookbooks and sources) into the database; the folder is only read",
			Long: `Import the previous accords-mcp's catalog folder (cookbooks and remote sources) into the
database; the folder is only read. DIR defaults to ACCORDS_MCP_CATALOG_DIR, else
<user config dir>/accords-mcp/catalog. Exits 1 when an item is refused.`,
			Args: cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if _, err := legacy.NormalizePolicy(o.policy); err != nil {
					return usageErrorf(cmd, "--conflict-policy: %v", err)
				}
				if len(args) == 1 {
					o.dir = args[0]
				}
				return exit(runImportLegacy(cmd.Context(), env, o))
			},
		}
		c.Flags().StringVar(&o.policy, "conflict-policy", legacy.PolicySkip, "when a cookbook version or source already exists: SKIP_IF_EXISTS, OVERWRITE or FAIL")
		c.Flags().BoolVar(&o.dryRun, "dry-run", false, "only read the folder and report what would be imported")
		c.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON")
		return c
	})
}

type legacyOptions struct {
	policy, dir    string
	dryRun, asJSON bool
}

// legacyImporter adapts the catalog and remote-source services of a.
func legacyImporter(a *app.App) legacy.Importer {
	if a.Catalog == nil {
		return nil
	}
	return legacy.Services{Catalog: a.Catalog, Remote: a.Remote}
}

func runImportLegacy(ctx context.Context, env *environment, o legacyOptions) int {
	dir := o.dir
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
	if !o.dryRun {
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
	rep, err := legacy.Import(ctx, folder, imp, o.policy)
	if o.asJSON {
		printJSON(env, rep)
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

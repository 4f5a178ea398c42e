package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var inputs []string
		var kind string
		var asJSON bool
		c := &cobra.Command{
			Use:   "render ID[@VERSION] TEMPLATE",
			Short: "render a template with --input key=value / key:=JSON into the request or plan it describes",
			Long: `Render a template of a stored cookbook into the Vault request (or plan) it describes. Nothing is
sent anywhere. Inputs are --input key=value (a string) or --input key:=JSON (array, object,
number, bool); a key the template does not take is refused.`,
			Example: `  accords-mcp render google.workspace gmail_tpl_plan_send_email_v1 \
    --input 'to:=["ana@example.com"]' --input subject=Hello --input text_plain='Hi Ana'`,
			Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				in, err := parseInputs(inputs)
				if err != nil {
					return usageErrorf(cmd, "%v", err)
				}
				id, version := splitRef(args[0])
				r := catalog.RenderRequest{CookbookID: id, Version: version, TemplateID: args[1], Inputs: in, OutputKind: kind}
				return onAppBackend(cmd, env, func(ctx context.Context, b admin.Backend) int {
					if code := checkInputKeys(ctx, env, b, r); code != 0 {
						return code
					}
					return renderTemplate(ctx, env, b, r, asJSON)
				})
			},
		}
		c.Flags().StringArrayVar(&inputs, "input", nil, "template input: key=value (string) or key:=JSON (array, object, number, bool); repeatable")
		c.Flags().StringVar(&kind, "output-kind", "AUTO", "AUTO, VERB_REQUEST or PLAN")
		c.Flags().BoolVar(&asJSON, "json", false, "print the whole result envelope (rendered, used_defaults, source_ref) as JSON")
		return c
	})
}

// checkInputKeys refuses --input keys the template neither binds nor
// declares, which would otherwise be dropped silently.
func checkInputKeys(ctx context.Context, env *environment, cat admin.Catalog, r catalog.RenderRequest) int {
	if len(r.Inputs) == 0 {
		return 0
	}
	st, err := cat.ExportBundle(ctx, r.CookbookID, r.Version)
	if err != nil {
		return 0
	}
	b, err := catalog.DecodeBundle(st.Raw)
	if err != nil {
		return 0
	}
	for _, e := range b.Entries {
		if e.EntryID != r.TemplateID {
			continue
		}
		known := map[string]bool{}
		for _, bd := range e.Bindings {
			known[bd.InputKey] = true
		}
		if props, ok := e.InputSchema["properties"].(map[string]any); ok {
			for k := range props {
				known[k] = true
			}
		}
		var unknown []string
		for k := range r.Inputs {
			if !known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) == 0 {
			return 0
		}
		slices.Sort(unknown)
		printErr(env.stderr, apperr.Validation("input_key", "%s@%s %s takes no input %s; it takes %s",
			b.CookbookID, b.Version, e.EntryID, strings.Join(unknown, ", "), strings.Join(slices.Sorted(maps.Keys(known)), ", ")).With("input_key", unknown[0]))
		return 2
	}
	return 0
}

// renderTemplate prints the rendered request (the whole result with
// asJSON), and what it used on stderr.
func renderTemplate(ctx context.Context, env *environment, cat admin.Catalog, r catalog.RenderRequest, asJSON bool) int {
	res, err := cat.Render(ctx, r)
	return output(env, asJSON, res, err, func(w io.Writer) {
		raw, _ := json.MarshalIndent(res.Rendered, "", "  ")
		fmt.Fprintln(w, string(raw))
		ref := res.SourceRef
		fmt.Fprintf(env.stderr, "rendered %s@%s %s as %s", ref.CookbookID, ref.Version, ref.TemplateID, ref.OutputKind)
		if len(res.UsedDefaults) > 0 {
			var keys []string
			for _, d := range res.UsedDefaults {
				keys = append(keys, d.InputKey)
			}
			fmt.Fprintf(env.stderr, "; defaults used for %s", strings.Join(keys, ", "))
		}
		fmt.Fprintln(env.stderr)
	})
}

// parseInputs reads key=value (string) and key:=JSON pairs.
func parseInputs(pairs []string) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range pairs {
		if k, v, ok := strings.Cut(p, ":="); ok && !strings.Contains(k, "=") {
			var val any
			if err := json.Unmarshal([]byte(v), &val); err != nil {
				return nil, fmt.Errorf("--input %s: value after := must be JSON: %w", k, err)
			}
			out[k] = val
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--input %q must be key=value or key:=JSON", p)
		}
		out[k] = v
	}
	return out, nil
}

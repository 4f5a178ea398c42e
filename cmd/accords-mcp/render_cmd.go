package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register("render", "render a template: render ID[@VERSION] TEMPLATE --input k=v --input k:=JSON ... [--output-kind --json]", runRender)
}

func runRender(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "render", "render ID[@VERSION] TEMPLATE [--input key=string | --input key:=JSON]... [flags]")
	var inputs multiFlag
	fs.Var(&inputs, "input", "template input: key=value (string) or key:=JSON (array, object, number, bool); repeatable")
	kind := fs.String("output-kind", "AUTO", "AUTO, VERB_REQUEST or PLAN")
	asJSON := fs.Bool("json", false, "print the whole result envelope (rendered, used_defaults, source_ref) as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		fmt.Fprintln(env.stderr, "accords-mcp: render needs ID[@VERSION] and TEMPLATE")
		return 2
	}
	in, err := parseInputs(inputs)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 2
	}
	id, version := splitRef(pos[0])
	r := catalog.RenderRequest{CookbookID: id, Version: version, TemplateID: pos[1], Inputs: in, OutputKind: *kind}
	return withAppBackend(ctx, env, func(b admin.Backend, _ where) int { return renderTemplate(withContext(ctx), env, b, r, *asJSON) })
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

package gateway

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accordsai/accords-mcp/tools"
)

// View is what one client asked to see on top of the server-wide settings:
// a stdio launch attached to a daemon keeps its own --read-only and
// --toolsets (and ACCORDS_MCP_READ_ONLY / ACCORDS_MCP_TOOLSETS). A view
// only narrows: it never shows a tool the server hides.
type View struct {
	ReadOnly bool     `json:"read_only,omitempty"`
	Toolsets []string `json:"toolsets,omitempty"`
	// Dynamic starts the client's session with the core tools
	// (--dynamic-toolsets); it applies when the client's server is built
	// (ClientServer), never per request.
	Dynamic bool `json:"dynamic,omitempty"`
}

// chosen reports whether the client chose anything: read-only or any
// toolset selection, "all" included (which hides nothing but lists every
// tool, D23).
func (v View) chosen() bool { return v.ReadOnly || selects(v.Toolsets) }

// toolsets is the set of toolsets kept; empty means all ("all" included).
func (v View) toolsets() map[string]bool {
	out := map[string]bool{}
	for _, ts := range v.Toolsets {
		if ts = strings.TrimSpace(ts); ts != "" {
			out[ts] = true
		}
	}
	if out["all"] {
		return nil
	}
	return out
}

type viewKey struct{}

// WithView returns ctx carrying the client's view; the gateway applies it
// to tools/list and tools/call.
func WithView(ctx context.Context, v View) context.Context {
	if !v.chosen() {
		return ctx
	}
	return context.WithValue(ctx, viewKey{}, v)
}

func viewFrom(ctx context.Context) (View, bool) {
	v, ok := ctx.Value(viewKey{}).(View)
	return v, ok
}

// CheckView refuses a view naming an unknown toolset, with the message a
// standalone server gives at start-up.
func (g *Gateway) CheckView(v View) error {
	_, known := knownNames(g.reg.Tools())
	return checkToolsets(v.toolsets(), known)
}

// checkToolsets refuses a selection naming a toolset outside known.
func checkToolsets(sets, known map[string]bool) error {
	for _, ts := range slices.Sorted(maps.Keys(sets)) {
		if !known[ts] {
			return fmt.Errorf("unknown toolset %q (known: %s, all)", ts, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	return nil
}

// viewRefusal explains why the client's view hides t, with the reasons a
// server configured that way gives.
func (g *Gateway) viewRefusal(ctx context.Context, t tools.Tool) (reason, format string) {
	v, ok := viewFrom(ctx)
	if !ok {
		return "", ""
	}
	if v.ReadOnly && t.Writes() {
		return "read_only", "tool %s changes state and the server runs in read-only mode"
	}
	// The discovery tools come with dynamic mode, not with a toolset.
	if sets := v.toolsets(); len(sets) > 0 && !sets[t.Toolset] && t.Toolset != tools.ToolsetDynamic {
		return "toolset_disabled", "tool %s belongs to toolset %s, which this server does not enable"
	}
	return "", ""
}

package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/test/workload"
)

// op is one measured operation: its tool ("" for tools/list) and the
// arguments of call k; both binaries get the same sequence.
type op struct {
	tool string
	args func(r *rand.Rand, k int) map[string]any
}

// opTable is every operation over n bundles of c; runID keeps this run's
// upserted versions apart from an earlier run's.
func opTable(c workload.Corpus, n int, runID int64) map[string]op {
	none := func(*rand.Rand, int) map[string]any { return map[string]any{} }
	return map[string]op{
		"tools-list": {"", none},
		"status":     {workload.ToolStatus, none},
		"search":     {workload.ToolSearch, func(r *rand.Rand, _ int) map[string]any { return c.SearchQuery(r, n) }},
		"search-filter": {workload.ToolSearch, func(r *rand.Rand, _ int) map[string]any {
			_, info := c.Bundle(r.IntN(n), "1.0.0")
			return map[string]any{"connector_id": info.Connector, "limit": 10}
		}},
		"render": {workload.ToolRender, func(r *rand.Rand, _ int) map[string]any {
			_, info := c.Bundle(r.IntN(n), "1.0.0")
			tc := info.Templates[r.IntN(len(info.Templates))]
			return map[string]any{"cookbook_id": info.CookbookID, "template_id": tc.TemplateID, "inputs": tc.Inputs}
		}},
		"route": {workload.ToolRoute, func(r *rand.Rand, _ int) map[string]any {
			return map[string]any{"request_text": workload.RouteTexts[r.IntN(len(workload.RouteTexts))],
				"options": map[string]any{"allow_search_fallback": false}}
		}},
		"route-search": {workload.ToolRoute, func(r *rand.Rand, _ int) map[string]any {
			return map[string]any{"request_text": c.SearchRouteText(r, n), "options": map[string]any{"allow_search_fallback": true}}
		}},
		"get": {workload.ToolGet, func(r *rand.Rand, _ int) map[string]any {
			return map[string]any{"cookbook_id": c.CookbookID(r.IntN(n))}
		}},
		"upsert": {workload.ToolUpsert, func(_ *rand.Rand, k int) map[string]any {
			b, _ := c.Bundle(k%n, fmt.Sprintf("2.%d.%d", runID, k))
			return map[string]any{"bundle": b}
		}},
	}
}

// readMix is the HTTP run's operations, in equal shares.
var readMix = []string{"search", "render", "get"}

// call makes one call and reports its time and its transport error or
// isError result.
func call(ctx context.Context, cs *mcp.ClientSession, o op, args map[string]any) (time.Duration, error) {
	t0 := time.Now()
	if o.tool == "" {
		_, err := cs.ListTools(ctx, nil)
		return time.Since(t0), err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: o.tool, Arguments: args})
	d := time.Since(t0)
	if err == nil && res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				text = t.Text
			}
		}
		err = fmt.Errorf("%s answered an error: %.300s", o.tool, text)
	}
	return d, err
}

// target is one binary under test; {dir} in args and env is its folder.
type target struct {
	rep       *targetReport
	args, env []string
	seed      bool
	dir       string
	srv       *mcpproc.Server
	tools     map[string]bool
}

func (t *target) options(dir string, transport string) mcpproc.Options {
	expand := func(xs []string) (out []string) {
		for _, x := range xs {
			out = append(out, strings.ReplaceAll(x, "{dir}", dir))
		}
		return out
	}
	return mcpproc.Options{Bin: t.rep.Bin, Args: expand(t.args), Env: expand(t.env), DBPath: filepath.Join(dir, "accords.db"), Transport: transport}
}

// measure times starts on empty databases, seeds, runs the operations
// alternating between the binaries, then HTTP.
func measure(ctx context.Context, o options) (*report, error) {
	rep := &report{Bundles: o.bundles, Calls: o.calls, Seed: o.seed, CPUs: runtime.NumCPU(), LoadAverage: loadAverage()}
	// Both list every tool (D23 lists the agent's 21 by default, and an
	// older build of ours may be the --compare), so tools-list measures the
	// full list and seeding finds the upsert tool; an --env or --compare-env
	// of the same name wins, and a server without toolsets ignores it.
	all := []string{"ACCORDS_MCP_TOOLSETS=all"}
	targets := []*target{{rep: &targetReport{Name: "ours", Bin: o.bin, Ops: map[string]stats{}}, env: append(all, o.env...), seed: true}}
	if o.compare != "" {
		targets = append(targets, &target{rep: &targetReport{Name: "compare", Bin: o.compare, Ops: map[string]stats{}},
			args: o.cmpArgs, env: append(all, o.cmpEnv...), seed: o.compareSeed})
	}
	root, err := os.MkdirTemp("", "accords-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	defer func() {
		for _, t := range targets {
			if t.srv != nil {
				_ = t.srv.Close()
			}
		}
	}()
	if err := startups(ctx, o, root, targets); err != nil {
		return nil, err
	}
	for _, t := range targets {
		rep.Targets = append(rep.Targets, t.rep)
		if err := open(ctx, o, root, t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.rep.Name, err)
		}
	}
	ops := opTable(workload.Corpus{Seed: o.seed}, o.bundles, time.Now().Unix())
	for _, name := range o.ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o.logf("measuring %s", name)
		alternate(ctx, o, targets, name, ops[name])
	}
	for _, t := range targets {
		if err := t.srv.Close(); err != nil {
			return nil, fmt.Errorf("%s: %w", t.rep.Name, err)
		}
		if ps := t.srv.Cmd.ProcessState; ps != nil {
			t.rep.PeakRSSMiB = peakRSSMiB(ps)
		}
		t.srv = nil
	}
	if o.http {
		h, err := measureHTTP(ctx, o, targets[0], ops)
		if err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		rep.HTTP = h
	}
	return rep, nil
}

// startups keeps each binary's median time to initialize on an empty
// database over --startup-runs alternating starts.
func startups(ctx context.Context, o options, root string, targets []*target) error {
	o.logf("timing %d starts on an empty database", o.startups)
	runs := make([][]time.Duration, len(targets))
	for range o.startups {
		for i, t := range targets {
			dir, err := os.MkdirTemp(root, "empty-")
			if err != nil {
				return err
			}
			srv, err := mcpproc.Start(ctx, t.options(dir, mcpproc.Stdio))
			if err != nil {
				return fmt.Errorf("%s: %w", t.rep.Name, err)
			}
			runs[i] = append(runs[i], srv.Initialize)
			if err := errors.Join(srv.Close(), os.RemoveAll(dir)); err != nil {
				return fmt.Errorf("%s: %w", t.rep.Name, err)
			}
		}
	}
	for i, t := range targets {
		t.rep.StartupMS = summarize(runs[i], 0).P50MS
	}
	return nil
}

// open starts t on a new database and, unless --compare-seed=false, seeds
// bundles 0..n-1 through its upsert tool, keeping the p50 of the first and
// the last 100; it stops at the first failure, which would void every
// later figure.
func open(ctx context.Context, o options, root string, t *target) error {
	t.dir = filepath.Join(root, t.rep.Name)
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	srv, err := mcpproc.Start(ctx, t.options(t.dir, mcpproc.Stdio))
	if err != nil {
		return err
	}
	t.srv, t.tools = srv, map[string]bool{}
	res, err := srv.Sessions[0].ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range res.Tools {
		t.tools[tool.Name] = true
	}
	if t.rep.Catalog = "its own"; !t.seed {
		return nil
	} else if !t.tools[workload.ToolUpsert] {
		return fmt.Errorf("no %s tool to seed with (--compare-seed=false measures it on its own catalog)", workload.ToolUpsert)
	}
	t.rep.Catalog = "seeded"
	o.logf("%s: seeding %d bundles through %s", t.rep.Name, o.bundles, workload.ToolUpsert)
	c := workload.Corpus{Seed: o.seed}
	lat := make([]time.Duration, 0, o.bundles)
	t0 := time.Now()
	for i := range o.bundles {
		b, _ := c.Bundle(i, "1.0.0")
		d, err := call(ctx, t.srv.Sessions[0], op{tool: workload.ToolUpsert}, map[string]any{"bundle": b})
		if err != nil {
			return fmt.Errorf("seeding bundle %d: %w\n%s", i, err, t.srv.Stderr())
		}
		lat = append(lat, d)
	}
	o.logf("%s: seeded in %.1f s", t.rep.Name, time.Since(t0).Seconds())
	if k := min(100, len(lat)); len(lat) >= 2*k {
		t.rep.SeedFirstP50MS = summarize(lat[:k], 0).P50MS
		t.rep.SeedLastP50MS = summarize(lat[len(lat)-k:], 0).P50MS
	}
	return nil
}

// alternate makes the same calls to every binary that has the tool, in
// turn with the first rotating; the first tenth (at most 20) warms up.
func alternate(ctx context.Context, o options, targets []*target, name string, p op) {
	var active []*target
	for _, t := range targets {
		if p.tool != "" && !t.tools[p.tool] {
			t.rep.Missing = append(t.rep.Missing, name)
			continue
		}
		active = append(active, t)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	rngs := make([]*rand.Rand, len(active))
	lat, errs := make([][]time.Duration, len(active)), make([]int, len(active))
	for i := range active {
		rngs[i] = rand.New(rand.NewPCG(o.seed, h.Sum64()))
	}
	warm := min(20, o.calls/10)
	for k := 0; k < warm+o.calls && ctx.Err() == nil; k++ {
		for j := range active {
			x := (k + j) % len(active)
			if d, err := call(ctx, active[x].srv.Sessions[0], p, p.args(rngs[x], k)); k >= warm {
				lat[x], errs[x] = append(lat[x], d), errs[x]+btoi(err != nil)
			}
		}
	}
	for i, t := range active {
		t.rep.Ops[name] = summarize(lat[i], errs[i])
	}
}

// httpPolicy lifts the anonymous caller's rate limit; the rest stays default.
const httpPolicy = "version = 1\n\n[anonymous]\ncalls_per_minute = 0\n"

// measureHTTP runs --clients Streamable HTTP sessions of the read mix on
// ours' seeded database for --duration.
func measureHTTP(ctx context.Context, o options, t *target, ops map[string]op) (*stats, error) {
	policy := filepath.Join(t.dir, "accords-load-policy.toml")
	if err := os.WriteFile(policy, []byte(httpPolicy), 0o600); err != nil {
		return nil, err
	}
	so := t.options(t.dir, mcpproc.HTTP)
	so.Clients, so.Env = o.clients, append(so.Env, "ACCORDS_MCP_POLICY_FILE="+policy)
	srv, err := mcpproc.Start(ctx, so)
	if err != nil {
		return nil, err
	}
	o.logf("measuring http reads: %d clients for %s", o.clients, o.duration)
	lat, errs := make([][]time.Duration, len(srv.Sessions)), make([]int, len(srv.Sessions))
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, cs := range srv.Sessions {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(o.seed, uint64(i)+1))
			for time.Since(t0) < o.duration && ctx.Err() == nil {
				p := ops[readMix[r.IntN(len(readMix))]]
				d, err := call(ctx, cs, p, p.args(r, 0))
				lat[i], errs[i] = append(lat[i], d), errs[i]+btoi(err != nil)
			}
		})
	}
	wg.Wait()
	s := summarize(slices.Concat(lat...), 0)
	for _, n := range errs {
		s.Errors += n
	}
	s.Clients, s.PerSec = len(srv.Sessions), float64(s.Calls)/time.Since(t0).Seconds()
	return &s, srv.Close()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loadAverage is the one-minute load average (Linux; "?" elsewhere).
func loadAverage() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(append(strings.Fields(string(raw)), "?")[:1], "")
}

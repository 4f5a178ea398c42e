package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OpToolsList is the tools/list operation: every client pays it at start,
// and every stateless HTTP session again.
const OpToolsList = "tools-list"

// Target is one server of a side-by-side run.
type Target struct {
	// Name labels it in the report: "ours", "compare", "floor".
	Name   string
	Binary string
	Server *Server
	// Ops are its operations by name (Workload.Ops, plus tools-list and,
	// for the floor, ping); Raw marks a server whose results are not
	// envelopes (its calls only count transport failures and isError).
	Ops    map[string]Op
	Raw    bool
	Seeded bool
	// Options are what Server was started with; with Options.Bin set, a
	// side-by-side run times every operation again through RawClient.
	Options ServerOptions
	// StartupMS is its median start-up to the first tools/list.
	StartupMS float64 `json:"startup_ms"`
}

// SideBySide is a run of the same calls against two or three servers in
// one process, call by call, alternating which goes first, so every server
// sees the machine in the same state; ratios are therefore meaningful on a
// noisy machine where absolute figures are not.
type SideBySide struct {
	Bundles int          `json:"bundles"`
	Targets []TargetInfo `json:"targets"`
	Ops     []SideOp     `json:"ops"`
	// RawError says why the RawClient pass did not complete.
	RawError string `json:"raw_error,omitempty"`
}

// TargetInfo describes a target in the report.
type TargetInfo struct {
	Name       string  `json:"name"`
	Binary     string  `json:"binary"`
	StartupMS  float64 `json:"startup_ms"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// RSSAnonMiB and RSSFileMiB are its resident set at the end of the
	// run (before the raw pass), anonymous and file-backed.
	RSSAnonMiB float64 `json:"rss_anon_mib,omitempty"`
	RSSFileMiB float64 `json:"rss_file_mib,omitempty"`
	// GCCPUPercent: see TransportReport.
	GCCPUPercent float64  `json:"gc_cpu_percent,omitempty"`
	Missing      []string `json:"missing_tools,omitempty"`
}

// SideOp is one operation's figures per target; RatioP50 is ours over
// compare, FloorRatioP50 ours over the floor's ping.
type SideOp struct {
	Op            string              `json:"op"`
	Results       map[string]OpResult `json:"results"`
	RatioP50      float64             `json:"ratio_p50,omitempty"`
	RatioP99      float64             `json:"ratio_p99,omitempty"`
	FloorRatioP50 float64             `json:"floor_ratio_p50,omitempty"`
	// RawRatioP50 and RawFloorRatioP50 are ours over compare and over the
	// floor's ping on RawClient's clock.
	RawRatioP50      float64 `json:"raw_ratio_p50,omitempty"`
	RawFloorRatioP50 float64 `json:"raw_floor_ratio_p50,omitempty"`
}

// ListToolsOp is the tools/list operation.
func ListToolsOp() Op { return Op{Name: OpToolsList} }

// FloorOps are the floor server's operations.
func FloorOps() map[string]Op {
	return map[string]Op{
		OpToolsList: ListToolsOp(),
		FloorTool:   {Name: FloorTool, Tool: FloorTool, Args: func(*rand.Rand) map[string]any { return map[string]any{} }},
	}
}

// do makes one call of op on t and returns its outcome code.
func (t *Target) do(ctx context.Context, cs *mcp.ClientSession, op Op, args map[string]any) string {
	if op.Name == OpToolsList {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return CodeTransport
		}
		return ""
	}
	if t.Raw {
		return CallRaw(ctx, cs, op.Tool, args)
	}
	_, code, _ := Call(ctx, cs, op.Tool, args)
	return code
}

// supports says why t cannot run op ("" when it can).
func (t *Target) supports(name string) string {
	op, ok := t.Ops[name]
	if !ok {
		return "no such operation"
	}
	if name == OpToolsList {
		return ""
	}
	return SkipReason(t.Server, op, t.Seeded)
}

// RunSideBySide runs each named operation on every target that supports
// it, one call on each in turn (the order alternating), with the same
// argument sequence on each (each target's generator has the same seed).
func RunSideBySide(ctx context.Context, targets []*Target, names []string, lim Limits, seed uint64, bundles int) SideBySide {
	out := SideBySide{Bundles: bundles}
	for _, t := range targets {
		info := TargetInfo{Name: t.Name, Binary: t.Binary, StartupMS: t.StartupMS}
		if !t.Raw {
			info.Missing = MissingTools(t.Server)
		}
		out.Targets = append(out.Targets, info)
	}
	for k, name := range names {
		if ctx.Err() != nil {
			break
		}
		so := SideOp{Op: name, Results: map[string]OpResult{}}
		var active []*Target
		var recs []*Recorder
		var rngs []*rand.Rand
		for _, t := range targets {
			if _, has := t.Ops[name]; !has {
				// An operation of another kind of server (the floor's ping).
				continue
			}
			if why := t.supports(name); why != "" {
				if t.Name != "floor" {
					so.Results[t.Name] = OpResult{Op: name, Transport: t.Server.Transport, Bundles: bundles, Skipped: why}
				}
				continue
			}
			active = append(active, t)
			recs = append(recs, NewRecorder())
			rngs = append(rngs, rand.New(rand.NewPCG(seed+uint64(k)*7919, 1)))
		}
		deadline := time.Now().Add(lim.Duration)
		for i := 0; i < lim.Calls && ctx.Err() == nil && time.Now().Before(deadline); i++ {
			for j := range active {
				// Rotate the starting target each call.
				x := (i + j) % len(active)
				t := active[x]
				op := t.Ops[name]
				var args map[string]any
				if op.Args != nil {
					args = op.Args(rngs[x])
				}
				t0 := time.Now()
				code := t.do(ctx, t.Server.Sessions[0], op, args)
				recs[x].Add(time.Since(t0), code)
				recs[x].AddWire(t.Server.Wire(t.Server.Sessions[0]))
			}
		}
		for j, t := range active {
			recs[j].Stop()
			so.Results[t.Name] = recs[j].Summary(name, t.Server.Transport, bundles, 1)
		}
		out.Ops = append(out.Ops, so)
	}
	for i, t := range targets {
		if rss, err := t.Server.PeakRSSBytes(); err == nil {
			out.Targets[i].PeakRSSMiB = float64(rss) / (1 << 20)
		}
		if anon, file, err := t.Server.RSSByKind(); err == nil {
			out.Targets[i].RSSAnonMiB, out.Targets[i].RSSFileMiB = float64(anon)/(1<<20), float64(file)/(1<<20)
		}
		if pct, ok := t.Server.GCPercent(); ok {
			out.Targets[i].GCCPUPercent = pct
		}
	}
	if lim.RawPass {
		if err := rawPass(ctx, targets, &out, lim, seed); err != nil {
			out.RawError = err.Error()
		}
	}
	out.ratios()
	return out
}

// rawPass stops every target's server and times each operation again with
// a RawClient on a fresh process of it (same database), alternating as the
// first pass did, with the same argument sequences.
func rawPass(ctx context.Context, targets []*Target, out *SideBySide, lim Limits, seed uint64) error {
	clients := make([]*RawClient, len(targets))
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i, t := range targets {
		if t.Options.Bin == "" {
			return fmt.Errorf("%s: no server options to start it again", t.Name)
		}
		if err := t.Server.Close(); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		c, err := StartRawClient(ctx, t.Options)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		clients[i] = c
	}
	for k := range out.Ops {
		so := &out.Ops[k]
		var active []int
		for i, t := range targets {
			if r, ok := so.Results[t.Name]; ok && r.Skipped == "" {
				active = append(active, i)
			}
		}
		recs := make([]*Recorder, len(active))
		rngs := make([]*rand.Rand, len(active))
		for j := range active {
			recs[j] = NewRecorder()
			rngs[j] = rand.New(rand.NewPCG(seed+uint64(k)*7919, 2))
		}
		deadline := time.Now().Add(lim.Duration)
		for i := 0; i < lim.Calls && ctx.Err() == nil && time.Now().Before(deadline); i++ {
			for j := range active {
				x := (i + j) % len(active)
				t := targets[active[x]]
				op := t.Ops[so.Op]
				var args map[string]any
				if op.Args != nil {
					args = op.Args(rngs[x])
				}
				d, code := clients[active[x]].Do(ctx, op, args, !t.Raw)
				recs[x].Add(d, code)
			}
		}
		for j, i := range active {
			recs[j].Stop()
			sum := recs[j].Summary(so.Op, Stdio, out.Bundles, 1)
			r := so.Results[targets[i].Name]
			r.RawP50MS, r.RawP99MS, r.RawCalls, r.RawErrors = sum.P50MS, sum.P99MS, sum.Calls, errTotal(sum.Errors)
			so.Results[targets[i].Name] = r
		}
	}
	return nil
}

// ratios fills ours/compare and ours/floor (the floor's ping p50).
func (s *SideBySide) ratios() {
	var floorP50, floorRawP50 float64
	for _, o := range s.Ops {
		if r, ok := o.Results["floor"]; ok && o.Op == FloorTool && r.Skipped == "" {
			floorP50, floorRawP50 = r.P50MS, r.RawP50MS
		}
	}
	for i := range s.Ops {
		o := &s.Ops[i]
		ours, ok := o.Results["ours"]
		if !ok || ours.Skipped != "" || ours.Calls == 0 {
			continue
		}
		if c, ok := o.Results["compare"]; ok && c.Skipped == "" && c.P50MS > 0 {
			o.RatioP50 = ours.P50MS / c.P50MS
			if c.P99MS > 0 {
				o.RatioP99 = ours.P99MS / c.P99MS
			}
			if c.RawP50MS > 0 && ours.RawP50MS > 0 {
				o.RawRatioP50 = ours.RawP50MS / c.RawP50MS
			}
		}
		if floorP50 > 0 {
			o.FloorRatioP50 = ours.P50MS / floorP50
		}
		if floorRawP50 > 0 && ours.RawP50MS > 0 {
			o.RawFloorRatioP50 = ours.RawP50MS / floorRawP50
		}
	}
}

// Write prints the side-by-side table.
func (s SideBySide) Write(w io.Writer) {
	fmt.Fprintf(w, "\n== side by side over stdio, %d bundles (same calls, alternating, one run)\n", s.Bundles)
	for _, t := range s.Targets {
		fmt.Fprintf(w, "%-8s %s: start-up to first tools/list median %.1f ms, peak RSS %.1f MiB", t.Name, t.Binary, t.StartupMS, t.PeakRSSMiB)
		if t.RSSAnonMiB > 0 {
			fmt.Fprintf(w, " (at the end: %.1f MiB anonymous, %.1f MiB file-backed)", t.RSSAnonMiB, t.RSSFileMiB)
		}
		if t.GCCPUPercent > 0 {
			fmt.Fprintf(w, ", GC %.0f %% of CPU", t.GCCPUPercent)
		}
		if len(t.Missing) > 0 {
			fmt.Fprintf(w, "; tools not registered: %s", strings.Join(t.Missing, ", "))
		}
		fmt.Fprintln(w)
	}
	names := s.targetNames()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head strings.Builder
	head.WriteString("op\t")
	for _, n := range names {
		fmt.Fprintf(&head, "%s calls\t%s p50\t%s p99\t%s wire p50\t%s raw p50\t%s raw p99\t", n, n, n, n, n, n)
	}
	head.WriteString("ours/compare p50\tours/compare p99\tours/compare raw p50\tours/floor p50\tours/floor raw p50\t")
	fmt.Fprintln(tw, head.String())
	for _, o := range s.Ops {
		var line strings.Builder
		line.WriteString(o.Op + "\t")
		for _, n := range names {
			r, ok := o.Results[n]
			switch {
			case !ok:
				line.WriteString("\t\t\t\t\t\t")
			case r.Skipped != "":
				line.WriteString("skipped\t-\t-\t-\t-\t-\t")
			default:
				calls := fmt.Sprint(r.Calls)
				if errs := errTotal(r.Errors) + r.RawErrors; errs > 0 {
					calls += fmt.Sprintf(" (%d err)", errs)
				}
				fmt.Fprintf(&line, "%s\t%.3f\t%.3f\t%.3f\t%s\t%s\t", calls, r.P50MS, r.P99MS, r.WireP50MS, msOrDash(r.RawP50MS), msOrDash(r.RawP99MS))
			}
		}
		line.WriteString(ratio(o.RatioP50) + "\t" + ratio(o.RatioP99) + "\t" + ratio(o.RawRatioP50) + "\t" + ratio(o.FloorRatioP50) + "\t" + ratio(o.RawFloorRatioP50) + "\t")
		fmt.Fprintln(tw, line.String())
	}
	tw.Flush()
	if s.RawError != "" {
		fmt.Fprintf(w, "  raw pass not completed: %s\n", s.RawError)
	}
	for _, o := range s.Ops {
		for _, n := range names {
			if r, ok := o.Results[n]; ok && r.Skipped != "" {
				fmt.Fprintf(w, "  %s %s skipped: %s\n", n, o.Op, r.Skipped)
			} else if ok && len(r.Errors) > 0 {
				fmt.Fprintf(w, "  %s %s errors: %s\n", n, o.Op, errSummary(r.Errors))
			}
		}
	}
}

func (s SideBySide) targetNames() []string {
	var out []string
	for _, t := range s.Targets {
		out = append(out, t.Name)
	}
	return out
}

func msOrDash(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

func ratio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

func errTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// WriteMarkdown prints the side-by-side table as Markdown.
func (s SideBySide) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n#### side by side over stdio, %d bundles\n\n", s.Bundles)
	for _, t := range s.Targets {
		fmt.Fprintf(w, "- %s (`%s`): start-up to the first tools/list, median %.1f ms; peak RSS %.1f MiB", t.Name, t.Binary, t.StartupMS, t.PeakRSSMiB)
		if t.RSSAnonMiB > 0 {
			fmt.Fprintf(w, " (at the end %.1f MiB anonymous, %.1f MiB file-backed)", t.RSSAnonMiB, t.RSSFileMiB)
		}
		fmt.Fprintln(w)
	}
	names := s.targetNames()
	fmt.Fprint(w, "\n| op |")
	for _, n := range names {
		fmt.Fprintf(w, " %s p50 ms | %s p99 ms | %s wire p50 ms | %s raw p50 ms |", n, n, n, n)
	}
	fmt.Fprintln(w, " ours/compare p50 | ours/compare raw p50 | ours/floor p50 | ours/floor raw p50 |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---:|---:|---:|---:|", len(names))+"---:|---:|---:|---:|")
	for _, o := range s.Ops {
		fmt.Fprintf(w, "| %s |", o.Op)
		for _, n := range names {
			r, ok := o.Results[n]
			switch {
			case !ok:
				fmt.Fprint(w, " | | | |")
			case r.Skipped != "":
				fmt.Fprint(w, " skipped | | | |")
			default:
				fmt.Fprintf(w, " %.3f | %.3f | %.3f | %s |", r.P50MS, r.P99MS, r.WireP50MS, msOrDash(r.RawP50MS))
			}
		}
		fmt.Fprintf(w, " %s | %s | %s | %s |\n", ratio(o.RatioP50), ratio(o.RawRatioP50), ratio(o.FloorRatioP50), ratio(o.RawFloorRatioP50))
	}
}

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// stats are one operation's figures: nearest-rank percentiles in ms.
type stats struct {
	Calls   int     `json:"calls"`
	Errors  int     `json:"errors"`
	P50MS   float64 `json:"p50_ms"`
	P95MS   float64 `json:"p95_ms"`
	P99MS   float64 `json:"p99_ms"`
	PerSec  float64 `json:"per_sec,omitempty"` // HTTP run only
	Clients int     `json:"clients,omitempty"`
}

func summarize(d []time.Duration, errs int) stats {
	s := stats{Calls: len(d), Errors: errs}
	if len(d) == 0 {
		return s
	}
	d = slices.Clone(d)
	slices.Sort(d)
	at := func(p int) float64 { return float64(d[max((len(d)*p+99)/100, 1)-1].Microseconds()) / 1000 }
	s.P50MS, s.P95MS, s.P99MS = at(50), at(95), at(99)
	return s
}

func (s stats) at(pct int) float64 {
	return map[int]float64{50: s.P50MS, 95: s.P95MS, 99: s.P99MS}[pct]
}

// targetReport is one binary's figures; Missing are the operations whose
// tool it does not register.
type targetReport struct {
	Name           string           `json:"name"`
	Bin            string           `json:"bin"`
	StartupMS      float64          `json:"startup_ms"`
	Catalog        string           `json:"catalog"` // "seeded" or "its own"
	SeedFirstP50MS float64          `json:"seed_first_p50_ms,omitempty"`
	SeedLastP50MS  float64          `json:"seed_last_p50_ms,omitempty"`
	PeakRSSMiB     float64          `json:"peak_rss_mib"`
	Ops            map[string]stats `json:"ops"`
	Missing        []string         `json:"missing,omitempty"`
}

type report struct {
	Bundles     int             `json:"bundles"`
	Calls       int             `json:"calls"`
	Seed        uint64          `json:"seed"`
	CPUs        int             `json:"cpus"`
	LoadAverage string          `json:"load_average"`
	Targets     []*targetReport `json:"targets"`
	HTTP        *stats          `json:"http,omitempty"`
	Failures    []string        `json:"failures"`
}

// row is a line of the table (a scalar figure sits in the p50 column);
// failed when ours misses its budget or a call failed.
type row struct {
	label, budget string
	ours, cmp     *stats
	failed        bool
}

// rows are the operations, then start-up, the seed, peak RSS and HTTP.
func rows(o options, rep *report) []row {
	var out []row
	ts := rep.Targets
	stat := func(i int, op string) *stats {
		if i < len(ts) {
			if s, ok := ts[i].Ops[op]; ok {
				return &s
			}
		}
		return nil
	}
	for _, op := range o.ops {
		r := row{label: op, ours: stat(0, op), cmp: stat(1, op)}
		r.failed = r.ours == nil || r.ours.Errors > 0
		for _, b := range callBudgets {
			if b.op == op {
				r.budget += fmt.Sprintf(" p%d<=%g", b.pct, b.maxMS)
				r.failed = r.failed || r.ours.at(b.pct) > b.maxMS
			}
		}
		if x, ok := o.ratios[op]; ok {
			r.budget += fmt.Sprintf(" ratio<=%g", x)
			r.failed = r.failed || ratio(r.ours, r.cmp) == 0 || ratio(r.ours, r.cmp) > x
		}
		out = append(out, r)
	}
	scalar := func(label, budget string, v func(t *targetReport) float64, failed func(x float64) bool) {
		r := row{label: label, budget: budget, ours: &stats{P50MS: v(ts[0])}}
		if len(ts) > 1 {
			r.cmp = &stats{P50MS: v(ts[1])}
		}
		r.failed = failed(r.ours.P50MS)
		out = append(out, r)
	}
	first := ts[0].SeedFirstP50MS
	scalar("start to initialize, empty db", fmt.Sprintf("<=%d", maxStartupMS), func(t *targetReport) float64 { return t.StartupMS },
		func(x float64) bool { return x > maxStartupMS })
	scalar("seed upsert, first 100 bundles", "", func(t *targetReport) float64 { return t.SeedFirstP50MS }, func(float64) bool { return false })
	scalar(fmt.Sprintf("seed upsert, last 100 of %d", rep.Bundles), fmt.Sprintf("<=%gx first", maxSeedGrowth),
		func(t *targetReport) float64 { return t.SeedLastP50MS }, func(x float64) bool { return first > 0 && x > maxSeedGrowth*first })
	scalar("peak RSS, MiB", fmt.Sprintf("<=%d", maxRSSMiB), func(t *targetReport) float64 { return t.PeakRSSMiB },
		func(x float64) bool { return x > maxRSSMiB })
	if h := rep.HTTP; h != nil {
		out = append(out, row{label: fmt.Sprintf("http reads, %d clients", h.Clients), budget: fmt.Sprintf("p99<=%d", maxHTTPP99MS),
			ours: h, failed: h.Errors > 0 || h.P99MS > maxHTTPP99MS},
			row{label: "http reads per second", budget: fmt.Sprintf(">=%d", minHTTPPerSec),
				ours: &stats{P50MS: h.PerSec}, failed: h.PerSec < minHTTPPerSec})
	}
	return out
}

// ratio is a over b at the p50 (0 when either is missing).
func ratio(a, b *stats) float64 {
	if a == nil || b == nil || b.P50MS == 0 {
		return 0
	}
	return a.P50MS / b.P50MS
}

// writeTable prints the report as one table.
func writeTable(w io.Writer, rep *report, table []row) {
	fmt.Fprintf(w, "accords-load: %d bundles, %d calls an operation over stdio, seed %d, %d CPUs, load average %s\n",
		rep.Bundles, rep.Calls, rep.Seed, rep.CPUs, rep.LoadAverage)
	for _, t := range rep.Targets {
		fmt.Fprintf(w, "%-8s %s (catalog %s)\n", t.Name, t.Bin, t.Catalog)
		if len(t.Missing) > 0 {
			fmt.Fprintf(w, "%-8s registers no tool for: %s\n", "", strings.Join(t.Missing, ", "))
		}
	}
	cmp := len(rep.Targets) > 1
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := fmt.Sprintf("%-32s\tp50\tp95\tp99\terrors\t", "ms")
	if cmp {
		head += "compare p50\tp95\tp99\terrors\tours/compare\t"
	}
	fmt.Fprintln(tw, head+"budget\t")
	num := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	cells := func(s *stats) string {
		switch {
		case s == nil:
			return "missing\t\t\t\t"
		case s.Calls == 0:
			return num(s.P50MS) + "\t\t\t\t"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d\t", num(s.P50MS), num(s.P95MS), num(s.P99MS), s.Errors)
	}
	for _, r := range table {
		line := fmt.Sprintf("%-32s\t", r.label) + cells(r.ours)
		if cmp && r.cmp != nil {
			line += cells(r.cmp) + num(ratio(r.ours, r.cmp)) + "\t"
		} else if cmp {
			line += "\t\t\t\t\t"
		}
		fmt.Fprintln(tw, line+strings.TrimSpace(r.budget)+"\t")
	}
	tw.Flush()
	if len(rep.Failures) > 0 {
		fmt.Fprintln(w, "budget failed:", strings.Join(rep.Failures, "; "))
		return
	}
	fmt.Fprintln(w, "every budget met")
}

package loadgen

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Machine describes where figures were measured.
type Machine struct {
	NProc     int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Kernel    string `json:"kernel,omitempty"`
}

// ThisMachine reads /proc for the CPU model and memory.
func ThisMachine() Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(raw))
	}
	return m
}

// TransportReport is the result of one transport at one catalog size.
type TransportReport struct {
	Transport string `json:"transport"`
	Bundles   int    `json:"bundles"`
	Clients   int    `json:"clients"`
	Policy    string `json:"policy,omitempty"`
	// StartupEmptyMS is start-up to the first tools/list on an empty db,
	// or, when Reused, the first start on the kept one (which may repair
	// or rebuild its index).
	StartupEmptyMS float64 `json:"startup_empty_ms"`
	Reused         bool    `json:"reused_db,omitempty"`
	// StartupMS is the median start-up with the seeded catalog, over
	// StartupRunsMS.
	StartupMS     float64   `json:"startup_ms"`
	StartupRunsMS []float64 `json:"startup_runs_ms,omitempty"`
	// SeedPeakRSSMiB is the peak RSS of the process that seeded the
	// catalog; PeakRSSMiB of the one that served the workloads.
	SeedPeakRSSMiB float64 `json:"seed_peak_rss_mib,omitempty"`
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
	// RSSAnonMiB and RSSFileMiB split the serving process's resident set
	// at the end of the workloads into anonymous and file-backed pages.
	RSSAnonMiB float64 `json:"rss_anon_mib,omitempty"`
	RSSFileMiB float64 `json:"rss_file_mib,omitempty"`
	// GCCPUPercent is the serving process's GC share of CPU (only with
	// --env GODEBUG=gctrace=1).
	GCCPUPercent float64 `json:"gc_cpu_percent,omitempty"`
	// SeedFirstP50MS / SeedLastP50MS: upsert median over the first and the
	// last tenth of the seeding (flatness as the catalog grows).
	SeedFirstP50MS float64    `json:"seed_first_tenth_p50_ms,omitempty"`
	SeedLastP50MS  float64    `json:"seed_last_tenth_p50_ms,omitempty"`
	MissingTools   []string   `json:"missing_tools,omitempty"`
	Ops            []OpResult `json:"ops"`
	// Floor is tools/list and the cheap call alternating with the floor
	// server's tools/list and ping (stdio and attach).
	Floor *SideBySide `json:"floor,omitempty"`
}

// Report is the whole run.
type Report struct {
	Machine    Machine           `json:"machine"`
	Binary     string            `json:"binary"`
	Command    string            `json:"command"`
	Seed       uint64            `json:"seed"`
	Transports []TransportReport `json:"transports"`
	// Attach is the attached-front-end comparison (--compare-attach).
	Attach *AttachComparison `json:"attach_comparison,omitempty"`
	// SideBySide is the --compare run (ours, the other server, the floor).
	SideBySide *SideBySide `json:"side_by_side,omitempty"`
}

// WriteTable prints the report for people.
func (rep Report) WriteTable(w io.Writer) {
	m := rep.Machine
	fmt.Fprintf(w, "machine: %d CPUs, %s, %s RAM, %s %s\n", m.NProc, m.CPUModel, m.MemTotal, m.GoVersion, m.OS)
	fmt.Fprintf(w, "binary:  %s\n", rep.Binary)
	for _, tr := range rep.Transports {
		fmt.Fprintf(w, "\n== %s, %d bundles, %d client(s)\n", tr.Transport, tr.Bundles, tr.Clients)
		if tr.Policy != "" {
			fmt.Fprintf(w, "policy: %s\n", tr.Policy)
		}
		fmt.Fprintf(w, "start-up to first tools/list: %s %.1f ms; with catalog median %.1f ms %v\n",
			firstStart(tr), tr.StartupEmptyMS, tr.StartupMS, tr.StartupRunsMS)
		if tr.SeedPeakRSSMiB > 0 {
			fmt.Fprintf(w, "peak RSS: seeding %.1f MiB, serving %.1f MiB\n", tr.SeedPeakRSSMiB, tr.PeakRSSMiB)
		} else {
			fmt.Fprintf(w, "peak RSS: %.1f MiB\n", tr.PeakRSSMiB)
		}
		if tr.RSSAnonMiB > 0 {
			fmt.Fprintf(w, "resident at the end: %.1f MiB anonymous, %.1f MiB file-backed\n", tr.RSSAnonMiB, tr.RSSFileMiB)
		}
		if tr.GCCPUPercent > 0 {
			fmt.Fprintf(w, "GC share of CPU while serving: %.0f %%\n", tr.GCCPUPercent)
		}
		if tr.SeedFirstP50MS > 0 {
			fmt.Fprintf(w, "upsert p50 while seeding: first tenth %.2f ms, last tenth %.2f ms\n", tr.SeedFirstP50MS, tr.SeedLastP50MS)
		}
		if len(tr.MissingTools) > 0 {
			fmt.Fprintf(w, "tools not registered: %s\n", strings.Join(tr.MissingTools, ", "))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "op\tcalls\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\tops/s\twire p50\twire p99\t")
		for _, o := range tr.Ops {
			if o.Skipped != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", o.Op)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.0f\t%.3f\t%.3f\t\n",
				o.Op, o.Calls, errSummary(o.Errors), o.P50MS, o.P95MS, o.P99MS, o.MaxMS, o.PerSecond, o.WireP50MS, o.WireP99MS)
		}
		tw.Flush()
		writeRawTable(w, tr.Ops)
		for _, o := range tr.Ops {
			if o.Skipped != "" {
				fmt.Fprintf(w, "  skipped %s: %s\n", o.Op, o.Skipped)
			} else if o.Note != "" {
				fmt.Fprintf(w, "  %s: %s\n", o.Op, o.Note)
			}
		}
		if tr.Floor != nil {
			tr.Floor.Write(w)
		}
	}
	if rep.Attach != nil {
		rep.Attach.Write(w)
	}
	if rep.SideBySide != nil {
		rep.SideBySide.Write(w)
	}
}

// writeRawTable prints the bare client's pass of the operations that had
// one (HTTP runs).
func writeRawTable(w io.Writer, ops []OpResult) {
	if !slices.ContainsFunc(ops, func(o OpResult) bool { return o.RawCalls > 0 }) {
		return
	}
	fmt.Fprintf(w, "bare client (%s, requests encoded before the clock, no SDK):\n", RawProtocol)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcalls\terrors\tp50 ms\tp99 ms\tops/s\tserver CPU µs/call\tthrough the SDK client\t")
	for _, o := range ops {
		if o.RawCalls > 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f\t\n", o.Op, o.RawCalls, o.RawErrors, o.RawP50MS, o.RawP99MS, o.RawPerSecond, o.RawServerCPUUS, o.ServerCPUUS)
		}
	}
	tw.Flush()
}

func errSummary(errs map[string]int) string {
	if len(errs) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(errs))
	total := 0
	for k, v := range errs {
		keys = append(keys, fmt.Sprintf("%s:%d", k, v))
		total += v
	}
	sort.Strings(keys)
	return fmt.Sprintf("%d (%s)", total, strings.Join(keys, " "))
}

// WriteMarkdown prints the report as Markdown tables (docs/performance.md
// is made from it).
func (rep Report) WriteMarkdown(w io.Writer) {
	m := rep.Machine
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s RAM, %s, %s, kernel %s.\n\n", m.NProc, m.CPUModel, m.MemTotal, m.GoVersion, m.OS, m.Kernel)
	fmt.Fprintf(w, "Command: `%s`\n", rep.Command)
	for _, tr := range rep.Transports {
		fmt.Fprintf(w, "\n#### %s, %d bundles, %d client(s)\n\n", tr.Transport, tr.Bundles, tr.Clients)
		fmt.Fprintf(w, "- start-up to the first tools/list: %s %.1f ms; with the catalog, median %.1f ms of %v\n", firstStart(tr), tr.StartupEmptyMS, tr.StartupMS, tr.StartupRunsMS)
		if tr.SeedPeakRSSMiB > 0 {
			fmt.Fprintf(w, "- peak RSS (VmHWM): %.1f MiB while seeding, %.1f MiB while serving the workloads\n", tr.SeedPeakRSSMiB, tr.PeakRSSMiB)
		} else {
			fmt.Fprintf(w, "- peak RSS (VmHWM): %.1f MiB\n", tr.PeakRSSMiB)
		}
		if tr.RSSAnonMiB > 0 {
			fmt.Fprintf(w, "- resident at the end: %.1f MiB anonymous, %.1f MiB file-backed\n", tr.RSSAnonMiB, tr.RSSFileMiB)
		}
		if tr.SeedFirstP50MS > 0 {
			fmt.Fprintf(w, "- upsert p50 while seeding: first tenth %.2f ms, last tenth %.2f ms\n", tr.SeedFirstP50MS, tr.SeedLastP50MS)
		}
		if tr.Policy != "" {
			fmt.Fprintf(w, "- policy: %s\n", tr.Policy)
		}
		fmt.Fprintln(w, "\n| op | calls | errors | p50 ms | p95 ms | p99 ms | ops/s | wire p50 ms | wire p99 ms |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, o := range tr.Ops {
			if o.Skipped != "" {
				fmt.Fprintf(w, "| %s | skipped: %s | | | | | | | |\n", o.Op, o.Skipped)
				continue
			}
			fmt.Fprintf(w, "| %s | %d | %s | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", o.Op, o.Calls, errSummary(o.Errors), o.P50MS, o.P95MS, o.P99MS, o.PerSecond, o.WireP50MS, o.WireP99MS)
		}
		if slices.ContainsFunc(tr.Ops, func(o OpResult) bool { return o.RawCalls > 0 }) {
			fmt.Fprintf(w, "\nThe same operations through the bare client (%s, requests encoded before the clock, no SDK):\n\n", RawProtocol)
			fmt.Fprintln(w, "| op | calls | errors | p50 ms | p99 ms | ops/s | server CPU µs/call | the same through the SDK client |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
			for _, o := range tr.Ops {
				if o.RawCalls > 0 {
					fmt.Fprintf(w, "| %s | %d | %d | %.2f | %.2f | %.0f | %.0f | %.0f |\n", o.Op, o.RawCalls, o.RawErrors, o.RawP50MS, o.RawP99MS, o.RawPerSecond, o.RawServerCPUUS, o.ServerCPUUS)
				}
			}
		}
		if tr.Floor != nil {
			tr.Floor.WriteMarkdown(w)
		}
	}
	if rep.SideBySide != nil {
		rep.SideBySide.WriteMarkdown(w)
	}
	if c := rep.Attach; c != nil {
		fmt.Fprintf(w, "\n#### attached front end vs in-process, %d bundles, %d alternating search calls x %d rounds\n\n", c.Bundles, c.Calls, c.Rounds)
		fmt.Fprintln(w, "| | p50 ms | p95 ms |")
		fmt.Fprintln(w, "|---|---:|---:|")
		fmt.Fprintf(w, "| standalone (in-process) | %.3f | %.3f |\n", c.StandaloneP50MS, c.StandaloneP95MS)
		fmt.Fprintf(w, "| attached front end | %.3f | %.3f |\n", c.AttachedP50MS, c.AttachedP95MS)
		fmt.Fprintf(w, "\n- added at the median (median of per-pair differences): %.3f ms\n", c.AddedP50MS)
		fmt.Fprintf(w, "- launch attaching to a running daemon, to the initialize answer: median %.1f ms of %v; standalone launch %.1f ms\n", c.AttachInitMS, c.InitRunsMS, c.StandaloneInitMS)
	}
}

func firstStart(tr TransportReport) string {
	if tr.Reused {
		return "first start on the kept db"
	}
	return "empty db"
}

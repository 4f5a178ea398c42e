package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// AttachComparison is the cost of the attached front end: the same search
// calls, alternately, to a standalone stdio server (in-process) and to a
// stdio front end attached to a daemon, each on its own copy of the same
// catalog, so both see the same load at the same moments; and the time a
// launch takes to answer initialize once a daemon runs.
type AttachComparison struct {
	Bundles int `json:"bundles"`
	Calls   int `json:"calls"`
	// Rounds are the repetitions (each with fresh processes); the figures
	// below are the medians over the rounds, RoundsMS the per-round ones.
	Rounds int `json:"rounds"`
	// StandaloneP50MS and AttachedP50MS are the medians of each side's
	// search latency; AddedP50MS is the median over the call pairs of the
	// attached call minus its standalone twin.
	StandaloneP50MS float64 `json:"standalone_p50_ms"`
	AttachedP50MS   float64 `json:"attached_p50_ms"`
	AddedP50MS      float64 `json:"added_p50_ms"`
	StandaloneP95MS float64 `json:"standalone_p95_ms"`
	AttachedP95MS   float64 `json:"attached_p95_ms"`
	Errors          int     `json:"errors"`
	// AttachInitMS is the median, over InitRunsMS, of a launch's time from
	// process start to the initialize answer with the daemon running;
	// StandaloneInitMS the same for a standalone launch (it opens the
	// database and the index itself).
	AttachInitMS     float64          `json:"attach_initialize_ms"`
	InitRunsMS       []float64        `json:"attach_initialize_runs_ms"`
	StandaloneInitMS float64          `json:"standalone_initialize_ms"`
	RoundsMS         []ComparisonLine `json:"rounds_ms"`
}

// ComparisonLine is one round's medians.
type ComparisonLine struct {
	StandaloneP50MS float64 `json:"standalone_p50_ms"`
	AttachedP50MS   float64 `json:"attached_p50_ms"`
	AddedP50MS      float64 `json:"added_p50_ms"`
	// FrontEndCPUPerCallMS is the front end process's CPU time (user and
	// system) per call of the round: its own cost, apart from waiting.
	FrontEndCPUPerCallMS float64 `json:"front_end_cpu_per_call_ms"`
}

// cpuTime is a process's user plus system CPU time from /proc (-1 when
// unreadable), at the kernel's clock-tick resolution.
func cpuTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// CompareOptions configure CompareAttach.
type CompareOptions struct {
	Bin string
	// StandaloneDB and AttachDB hold the same seeded catalog.
	StandaloneDB, AttachDB string
	Corpus                 Corpus
	Bundles, Calls, Rounds int
	InitRuns               int
	Seed                   uint64
	Log                    func(format string, a ...any)
}

// CompareAttach runs the comparison. The daemon of AttachDB is started by
// the first attached launch and stopped at the end.
func CompareAttach(ctx context.Context, o CompareOptions) (AttachComparison, error) {
	res := AttachComparison{Bundles: o.Bundles, Calls: o.Calls, Rounds: max(o.Rounds, 1)}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	defer func() { _ = StopDaemon(context.Background(), o.Bin, o.AttachDB) }()
	var stP50, atP50, addP50, stP95, atP95 []float64
	for round := range res.Rounds {
		st, err := StartServer(ctx, ServerOptions{Bin: o.Bin, DBPath: o.StandaloneDB, Transport: Stdio})
		if err != nil {
			return res, err
		}
		at, err := StartServer(ctx, ServerOptions{Bin: o.Bin, DBPath: o.AttachDB, Transport: Attach})
		if err != nil {
			st.Close()
			return res, err
		}
		o.Log("round %d: %d search calls to each, alternating", round+1, o.Calls)
		cpu0 := cpuTime(at.Cmd.Process.Pid)
		line, p95s, errs := alternate(ctx, st, at, o, uint64(round))
		if cpu0 >= 0 && o.Calls > 0 {
			line.FrontEndCPUPerCallMS = ms(cpuTime(at.Cmd.Process.Pid)-cpu0) / float64(o.Calls+20)
		}
		res.Errors += errs
		st.Close()
		at.Close()
		res.RoundsMS = append(res.RoundsMS, line)
		stP50, atP50, addP50 = append(stP50, line.StandaloneP50MS), append(atP50, line.AttachedP50MS), append(addP50, line.AddedP50MS)
		stP95, atP95 = append(stP95, p95s[0]), append(atP95, p95s[1])
	}
	res.StandaloneP50MS, res.AttachedP50MS, res.AddedP50MS = medianF(stP50), medianF(atP50), medianF(addP50)
	res.StandaloneP95MS, res.AttachedP95MS = medianF(stP95), medianF(atP95)

	// Launches attaching to the running daemon (started by the rounds; a
	// first launch makes sure it still runs).
	o.Log("timing %d launches that attach to the running daemon", o.InitRuns)
	for range max(o.InitRuns, 1) {
		at, err := StartServer(ctx, ServerOptions{Bin: o.Bin, DBPath: o.AttachDB, Transport: Attach})
		if err != nil {
			return res, err
		}
		res.InitRunsMS = append(res.InitRunsMS, ms(at.Initialize))
		at.Close()
	}
	res.AttachInitMS = medianF(res.InitRunsMS)
	var stInit []float64
	for range 3 {
		st, err := StartServer(ctx, ServerOptions{Bin: o.Bin, DBPath: o.StandaloneDB, Transport: Stdio})
		if err != nil {
			return res, err
		}
		stInit = append(stInit, ms(st.Initialize))
		st.Close()
	}
	res.StandaloneInitMS = medianF(stInit)
	return res, nil
}

// alternate makes o.Calls search calls to each server with the same
// arguments, alternating which goes first.
func alternate(ctx context.Context, st, at *Server, o CompareOptions, round uint64) (ComparisonLine, [2]float64, int) {
	r := rand.New(rand.NewPCG(o.Seed, round+101))
	n := max(o.Bundles, 1)
	var a, b, diff []time.Duration
	errs := 0
	call := func(s *Server, args map[string]any) time.Duration {
		t0 := time.Now()
		_, code, _ := Call(ctx, s.Sessions[0], ToolSearch, args)
		d := time.Since(t0)
		if code != "" {
			errs++
		}
		return d
	}
	// Warm both (first calls pay for lazy start-up work).
	for range 20 {
		args := o.Corpus.SearchQuery(r, n)
		call(st, args)
		call(at, args)
	}
	for i := range o.Calls {
		if ctx.Err() != nil {
			break
		}
		args := o.Corpus.SearchQuery(r, n)
		var da, db time.Duration
		if i%2 == 0 {
			da, db = call(st, args), call(at, args)
		} else {
			db, da = call(at, args), call(st, args)
		}
		a, b, diff = append(a, da), append(b, db), append(diff, db-da)
	}
	slices.Sort(a)
	slices.Sort(b)
	slices.Sort(diff)
	line := ComparisonLine{StandaloneP50MS: ms(Percentile(a, 50)), AttachedP50MS: ms(Percentile(b, 50)), AddedP50MS: signedMS(median(diff))}
	return line, [2]float64{ms(Percentile(a, 95)), ms(Percentile(b, 95))}, errs
}

func median(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)/2]
}

func signedMS(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Write prints the comparison for people.
func (c AttachComparison) Write(w io.Writer) {
	fmt.Fprintf(w, "\n== attached front end vs in-process (%d bundles, %d alternating search calls per round, %d rounds)\n", c.Bundles, c.Calls, c.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50 ms\tp95 ms\t")
	fmt.Fprintf(tw, "standalone (in-process)\t%.3f\t%.3f\t\n", c.StandaloneP50MS, c.StandaloneP95MS)
	fmt.Fprintf(tw, "attached front end\t%.3f\t%.3f\t\n", c.AttachedP50MS, c.AttachedP95MS)
	tw.Flush()
	fmt.Fprintf(w, "added at the median (median of per-pair differences): %.3f ms (target <= 0.2 ms); per round %v\n", c.AddedP50MS, c.RoundsMS)
	fmt.Fprintf(w, "launch attaching to a running daemon, to the initialize answer: median %.1f ms of %v (target <= 50 ms); standalone launch %.1f ms\n",
		c.AttachInitMS, c.InitRunsMS, c.StandaloneInitMS)
	if c.Errors > 0 {
		fmt.Fprintf(w, "errors: %d\n", c.Errors)
	}
}

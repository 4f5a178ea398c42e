// Command accords-bench is the load tool: it starts the built accords-mcp
// binary, drives it as a real MCP client over stdio and Streamable HTTP,
// seeds a realistic catalog, runs the search, render, route, list, upsert
// and mixed workloads and reports latency percentiles, throughput, start-up
// time and peak RSS, as a table or as JSON.
//
//	make build && go run ./cmd/accords-bench --bin bin/accords-mcp --bundles 1000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/accordsai/accords-mcp/bench/loadgen"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	bin           string
	transports    []string
	bundles       int
	clients       int
	calls         int
	duration      time.Duration
	startupRuns   int
	dbDir         string
	ops           []string
	seed          uint64
	json          bool
	markdown      bool
	fromJSON      string
	env           []string
	bearer        string
	policy        string
	compareAttach bool
	rounds        int
	// compareBin is another stdio MCP server run side by side with bin
	// (--compare), started with compareArgs.
	compareBin  string
	compareArgs []string
	// raw: side-by-side runs time every operation again through a bare
	// line client.
	raw   bool
	floor bool
}

var allOps = []string{"status", "search", "search-filter", "render", "get", "route", "route-search", "list", "upsert", "mixed", "reads"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == loadgen.FloorArg {
		// The floor server itself, started by a run as its own process.
		if err := loadgen.ServeFloor(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "accords-bench floor:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("accords-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var transports, ops string
	var env, cmpArgs multiFlag
	fs.StringVar(&o.bin, "bin", "bin/accords-mcp", "the built server binary (make build)")
	fs.StringVar(&transports, "transport", "stdio,http", "transports to measure: stdio (standalone), http, attach (a front end attached to a daemon)")
	fs.IntVar(&o.bundles, "bundles", 1000, "catalog size to seed (five entries a bundle)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent HTTP clients (stdio always uses one)")
	fs.IntVar(&o.calls, "calls", 2000, "calls per operation (upper bound)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "time per operation (upper bound)")
	fs.IntVar(&o.startupRuns, "startup-runs", 5, "restarts with the seeded catalog to time start-up")
	fs.StringVar(&o.dbDir, "db", "", "keep databases in DIR/<transport>/ and reuse a catalog seeded there before (default: a temporary dir, removed)")
	fs.StringVar(&ops, "ops", strings.Join(allOps, ","), "operations after seeding: "+strings.Join(allOps, ","))
	fs.Uint64Var(&o.seed, "seed", loadgen.DefaultSeed, "random seed of the catalog and workloads")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.BoolVar(&o.markdown, "markdown", false, "print the report as Markdown tables")
	fs.StringVar(&o.fromJSON, "from-json", "", "render a report saved with --json (as a table, or with --markdown) instead of running")
	fs.Var(&env, "env", "KEY=VALUE for the server's environment (repeatable), e.g. ACCORDS_MCP_POLICY_FILE=...")
	fs.StringVar(&o.bearer, "bearer", "", "bearer token for HTTP when the policy file requires one")
	fs.StringVar(&o.compareBin, "compare", "", "instead of the per-transport runs: run another stdio MCP server BIN side by side with --bin over stdio (same calls, alternating, one run) with the floor, and print both and the ratios")
	fs.BoolVar(&o.raw, "raw", true, "with --compare and over HTTP: time every operation a second time through a bare client (requests encoded before the clock, no SDK; a line client over stdio, kept-alive POSTs over HTTP), the server's own answer time and throughput")
	fs.Var(&cmpArgs, "compare-arg", "an argument for the --compare binary (repeatable)")
	fs.BoolVar(&o.floor, "floor", true, "also measure the floor (a bare go-sdk server with one tool, started as `accords-bench floor`) in the same run, alternating with tools/list and status calls to the server")
	fs.BoolVar(&o.compareAttach, "compare-attach", false, "instead of the workloads: alternate search calls between a standalone stdio server and a front end attached to a daemon (same catalog), and time launches attaching to the running daemon")
	fs.IntVar(&o.rounds, "rounds", 3, "--compare-attach rounds (fresh processes each)")
	fs.StringVar(&o.policy, "policy", "", "policy file for the HTTP server (default: one lifting the anonymous caller's rate limit, since a load test against the default 60 calls a minute measures refusals; \"none\" keeps the server's default)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: accords-bench [flags]\n\nSeeds --bundles bundles through the built server and measures each operation.\nOperations whose tools the server does not register are reported as skipped.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.json && o.markdown {
		fmt.Fprintln(stderr, "accords-bench: --json and --markdown exclude each other")
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "accords-bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	o.env = env
	o.compareArgs = cmpArgs
	if err := o.resolveCompare(); err != nil {
		fmt.Fprintln(stderr, "accords-bench:", err)
		return 2
	}
	if o.fromJSON != "" {
		raw, err := os.ReadFile(o.fromJSON)
		if err != nil {
			fmt.Fprintln(stderr, "accords-bench:", err)
			return 1
		}
		var rep loadgen.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			fmt.Fprintf(stderr, "accords-bench: %s: %v\n", o.fromJSON, err)
			return 1
		}
		if o.markdown {
			rep.WriteMarkdown(stdout)
		} else {
			rep.WriteTable(stdout)
		}
		return 0
	}
	var err error
	if o.transports, err = pickList(transports, []string{loadgen.Stdio, loadgen.HTTP, loadgen.Attach}, "transport"); err != nil {
		fmt.Fprintln(stderr, "accords-bench:", err)
		return 2
	}
	if o.ops, err = pickList(ops, allOps, "operation"); err != nil {
		fmt.Fprintln(stderr, "accords-bench:", err)
		return 2
	}
	if o.bundles < 0 || o.clients < 1 || o.calls < 1 || o.startupRuns < 1 || o.bundles > 1_000_000 || o.rounds < 1 {
		fmt.Fprintln(stderr, "accords-bench: --bundles 0..1000000, --clients, --calls and --startup-runs at least 1")
		return 2
	}
	bin, err := filepath.Abs(o.bin)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		fmt.Fprintf(stderr, "accords-bench: server binary: %v (build it with make build)\n", err)
		return 2
	}
	o.bin = bin

	rep := loadgen.Report{Machine: loadgen.ThisMachine(), Binary: bin, Seed: o.seed,
		Command: "accords-bench " + strings.Join(args, " ")}
	if o.compareBin != "" {
		o.transports = nil
		sbs, err := sideBySide(ctx, o, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "accords-bench: compare:", err)
			return 1
		}
		rep.SideBySide = &sbs
	}
	if o.compareAttach {
		o.transports = nil
		c, err := compareAttach(ctx, o, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "accords-bench: compare-attach:", err)
			return 1
		}
		rep.Attach = &c
	}
	for _, t := range o.transports {
		tr, err := measure(ctx, o, t, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "accords-bench: %s: %v\n", t, err)
			return 1
		}
		rep.Transports = append(rep.Transports, tr)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return 1
		}
	} else if o.markdown {
		rep.WriteMarkdown(stdout)
	} else {
		rep.WriteTable(stdout)
	}
	return 0
}

// resolveCompare checks --compare: not with --compare-attach, and a binary
// that exists (made absolute).
func (o *options) resolveCompare() error {
	if o.compareBin == "" {
		return nil
	}
	if o.compareAttach {
		return errors.New("--compare and --compare-attach exclude each other")
	}
	cb, err := filepath.Abs(o.compareBin)
	if err == nil {
		_, err = os.Stat(cb)
	}
	if err != nil {
		return fmt.Errorf("--compare binary: %w", err)
	}
	o.compareBin = cb
	return nil
}

// pickList splits a comma-separated flag value, refusing names not in
// known.
func pickList(v string, known []string, what string) ([]string, error) {
	var out []string
	for x := range strings.SplitSeq(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			if !slices.Contains(known, x) {
				return nil, fmt.Errorf("unknown %s %q (%s)", what, x, strings.Join(known, ", "))
			}
			out = append(out, x)
		}
	}
	return out, nil
}

// benchPolicy lifts the rate limit of the anonymous HTTP caller and
// leaves everything else (capabilities, audit) as the server's default, so
// the gateway's cost is still measured.
const benchPolicy = `version = 1

[anonymous]
calls_per_minute = 0
`

// marker records what a kept database was seeded with, so a later run
// reuses it only when it matches.
type marker struct {
	Bundles int    `json:"bundles"`
	Seed    uint64 `json:"seed"`
}

// measure runs the benchmark over one transport: prepare the database,
// seed it, time restarts, then run the operations.
func measure(ctx context.Context, o options, transport string, logw io.Writer) (loadgen.TransportReport, error) {
	tr := loadgen.TransportReport{Transport: transport, Bundles: o.bundles, Clients: 1}
	if transport == loadgen.HTTP {
		tr.Clients = o.clients
	}
	root, cleanup, err := benchRoot(o)
	if err != nil {
		return tr, err
	}
	defer cleanup()
	m := &measurement{o: o, transport: transport, tr: &tr, dir: filepath.Join(root, transport),
		corpus: loadgen.Corpus{Seed: o.seed}}
	m.logf = func(format string, a ...any) {
		fmt.Fprintf(logw, "[%s] "+format+"\n", append([]any{transport}, a...)...)
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return tr, err
	}
	m.dbPath = filepath.Join(m.dir, "accords.db")
	m.markerPath = filepath.Join(m.dir, "accords-bench.json")
	reuse, err := m.prepareDB()
	if err != nil {
		return tr, err
	}
	env, err := m.serverEnv()
	if err != nil {
		return tr, err
	}
	m.so = loadgen.ServerOptions{Bin: o.bin, DBPath: m.dbPath, Transport: transport, Clients: tr.Clients, Env: env, Bearer: o.bearer}
	if transport == loadgen.Attach {
		// The first launch starts the daemon; it outlives the launches.
		defer func() { _ = loadgen.StopDaemon(context.Background(), o.bin, m.dbPath) }()
	}
	w := &loadgen.Workload{Corpus: m.corpus, Bundles: o.bundles, RunID: time.Now().Unix() % 1_000_000}

	// Phase 1: start on the (possibly empty) database and seed.
	seeded, err := m.seed(ctx, reuse)
	if err != nil {
		return tr, err
	}

	// Phase 2: restarts on the seeded catalog time start-up; the last one
	// serves the workloads.
	srv, err := m.startups(ctx)
	if err != nil {
		return tr, err
	}
	defer srv.Close()

	ops := w.Ops(srv)
	if err := m.runOps(ctx, srv, ops, seeded); err != nil {
		return tr, err
	}
	if o.floor && transport != loadgen.HTTP {
		// tools/list and the cheap call against the floor, alternating, so
		// the ratios hold on a noisy machine.
		floor, err := startFloor(ctx)
		if err != nil {
			return tr, err
		}
		ops[loadgen.OpToolsList] = loadgen.ListToolsOp()
		m.logf("running tools-list, status and the floor")
		sbs := loadgen.RunSideBySide(ctx, []*loadgen.Target{
			{Name: "ours", Binary: o.bin, Server: srv, Ops: ops, Seeded: seeded, StartupMS: tr.StartupMS},
			floor,
		}, []string{loadgen.OpToolsList, "status", loadgen.FloorTool}, loadgen.Limits{Calls: o.calls, Duration: o.duration}, o.seed, o.bundles)
		_ = floor.Server.Close()
		tr.Floor = &sbs
	}
	if rss, err := srv.PeakRSSBytes(); err == nil {
		tr.PeakRSSMiB = mib(rss)
	}
	if anon, file, err := srv.RSSByKind(); err == nil {
		tr.RSSAnonMiB, tr.RSSFileMiB = mib(anon), mib(file)
	}
	if pct, ok := srv.GCPercent(); ok {
		tr.GCCPUPercent = pct
	}
	if err := srv.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return tr, err
	}
	return tr, nil
}

// floorStartups is how many times the floor is started to time it.
const floorStartups = 3

// startFloor starts this binary as the floor server (`accords-bench
// floor`) a few times, timing its start-up, and returns the last start.
func startFloor(ctx context.Context) (*loadgen.Target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("floor server: %w", err)
	}
	so := loadgen.ServerOptions{Bin: self, Args: []string{loadgen.FloorArg}, Transport: loadgen.Stdio}
	t := &loadgen.Target{Name: "floor", Binary: self + " floor", Ops: loadgen.FloorOps(), Raw: true, Options: so}
	var runs []float64
	for i := range floorStartups {
		srv, err := loadgen.StartServer(ctx, so)
		if err != nil {
			return nil, fmt.Errorf("floor server: %w", err)
		}
		runs = append(runs, msf(srv.Startup))
		if i < floorStartups-1 {
			_ = srv.Close()
			continue
		}
		t.Server = srv
	}
	t.StartupMS = median(runs)
	return t, nil
}

// sideBySide seeds the same catalog into --bin and --compare (when it has
// the tools to take it), times their start-ups, starts the floor and runs
// every operation on all three, call by call.
func sideBySide(ctx context.Context, o options, logw io.Writer) (loadgen.SideBySide, error) {
	root, cleanup, err := benchRoot(o)
	if err != nil {
		return loadgen.SideBySide{}, err
	}
	defer cleanup()
	logf := func(format string, a ...any) { fmt.Fprintf(logw, "[compare] "+format+"\n", a...) }
	var targets []*loadgen.Target
	defer func() {
		for _, t := range targets {
			_ = t.Server.Close()
		}
	}()
	for _, side := range []struct {
		name, bin string
		args      []string
	}{{"ours", o.bin, nil}, {"compare", o.compareBin, o.compareArgs}} {
		dir := filepath.Join(root, "compare-"+side.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return loadgen.SideBySide{}, err
		}
		tr := &loadgen.TransportReport{}
		m := &measurement{o: o, transport: loadgen.Stdio, tr: tr, dir: dir, dbPath: filepath.Join(dir, "accords.db"),
			markerPath: filepath.Join(dir, "accords-bench.json"), corpus: loadgen.Corpus{Seed: o.seed},
			logf: func(format string, a ...any) { logf(side.name+": "+format, a...) }}
		m.so = loadgen.ServerOptions{Bin: side.bin, Args: side.args, DBPath: m.dbPath, Transport: loadgen.Stdio, Clients: 1, Env: o.env}
		reuse, err := m.prepareDB()
		if err != nil {
			return loadgen.SideBySide{}, err
		}
		seeded, err := m.seed(ctx, reuse)
		if err != nil {
			return loadgen.SideBySide{}, fmt.Errorf("%s: %w", side.name, err)
		}
		srv, err := m.startups(ctx)
		if err != nil {
			return loadgen.SideBySide{}, fmt.Errorf("%s: %w", side.name, err)
		}
		w := &loadgen.Workload{Corpus: m.corpus, Bundles: o.bundles, RunID: time.Now().Unix() % 1_000_000}
		ops := w.Ops(srv)
		ops[loadgen.OpToolsList] = loadgen.ListToolsOp()
		bin := side.bin
		if len(side.args) > 0 {
			bin += " " + strings.Join(side.args, " ")
		}
		targets = append(targets, &loadgen.Target{Name: side.name, Binary: bin, Server: srv, Ops: ops, Seeded: seeded, StartupMS: tr.StartupMS, Options: m.so})
	}
	if o.floor {
		floor, err := startFloor(ctx)
		if err != nil {
			return loadgen.SideBySide{}, err
		}
		targets = append(targets, floor)
	}
	names := []string{loadgen.OpToolsList}
	for _, n := range o.ops {
		if _, isMix := loadgen.Mixes[n]; !isMix {
			names = append(names, n)
		}
	}
	if o.floor {
		names = append(names, loadgen.FloorTool)
	}
	logf("running %s side by side", strings.Join(names, ", "))
	if o.raw {
		logf("then again through a bare line client (--raw)")
	}
	return loadgen.RunSideBySide(ctx, targets, names, loadgen.Limits{Calls: o.calls, Duration: o.duration, RawPass: o.raw}, o.seed, o.bundles), nil
}

// compareAttach seeds two copies of the catalog (one per side) and runs
// the attached-front-end comparison.
func compareAttach(ctx context.Context, o options, logw io.Writer) (loadgen.AttachComparison, error) {
	root, cleanup, err := benchRoot(o)
	if err != nil {
		return loadgen.AttachComparison{}, err
	}
	defer cleanup()
	logf := func(format string, a ...any) { fmt.Fprintf(logw, "[compare-attach] "+format+"\n", a...) }
	corpus := loadgen.Corpus{Seed: o.seed}
	var dbs [2]string
	for i, side := range []string{"standalone", "attach"} {
		dir := filepath.Join(root, "compare-"+side)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return loadgen.AttachComparison{}, err
		}
		dbs[i] = filepath.Join(dir, "accords.db")
		m := &measurement{o: o, transport: loadgen.Stdio, tr: &loadgen.TransportReport{}, dir: dir, dbPath: dbs[i],
			markerPath: filepath.Join(dir, "accords-bench.json"), corpus: corpus, logf: logf}
		m.so = loadgen.ServerOptions{Bin: o.bin, DBPath: dbs[i], Transport: loadgen.Stdio, Clients: 1, Env: o.env}
		reuse, err := m.prepareDB()
		if err != nil {
			return loadgen.AttachComparison{}, err
		}
		if _, err := m.seed(ctx, reuse); err != nil {
			return loadgen.AttachComparison{}, err
		}
	}
	return loadgen.CompareAttach(ctx, loadgen.CompareOptions{Bin: o.bin, StandaloneDB: dbs[0], AttachDB: dbs[1], Corpus: corpus,
		Bundles: o.bundles, Calls: o.calls, Rounds: o.rounds, InitRuns: o.startupRuns, Seed: o.seed, Log: logf})
}

// benchRoot is --db, or a temporary directory that cleanup removes.
func benchRoot(o options) (string, func(), error) {
	if o.dbDir != "" {
		return o.dbDir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "accords-bench-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// measurement is one transport's run: its database directory, the server
// options and the report it fills.
type measurement struct {
	o                       options
	transport               string
	tr                      *loadgen.TransportReport
	dir, dbPath, markerPath string
	so                      loadgen.ServerOptions
	corpus                  loadgen.Corpus
	logf                    func(format string, a ...any)
}

// prepareDB reports whether the database holds a catalog seeded with the
// same bundles and seed; otherwise it removes the database, its index and
// the marker.
func (m *measurement) prepareDB() (bool, error) {
	var have marker
	if raw, err := os.ReadFile(m.markerPath); err == nil {
		_ = json.Unmarshal(raw, &have)
	}
	reuse := have.Bundles == m.o.bundles && have.Seed == m.o.seed && m.o.bundles > 0
	if !reuse {
		for _, p := range []string{m.dbPath, m.dbPath + ".index", m.markerPath} {
			if err := os.RemoveAll(p); err != nil {
				return false, err
			}
		}
	}
	return reuse, nil
}

// serverEnv is the server's environment: --env, plus over HTTP the policy
// file (by default one lifting the anonymous rate limit).
func (m *measurement) serverEnv() ([]string, error) {
	env := append([]string(nil), m.o.env...)
	if m.transport != loadgen.HTTP {
		return env, nil
	}
	switch m.o.policy {
	case "none":
	case "":
		p := filepath.Join(m.dir, "bench-policy.toml")
		if err := os.WriteFile(p, []byte(benchPolicy), 0o600); err != nil {
			return nil, err
		}
		env = append(env, "ACCORDS_MCP_POLICY_FILE="+p)
		m.tr.Policy = "anonymous caller unlimited (accords-bench default)"
	default:
		env = append(env, "ACCORDS_MCP_POLICY_FILE="+m.o.policy)
		m.tr.Policy = m.o.policy
	}
	return env, nil
}

// seed starts the server once, times that start on the unseeded database
// and seeds the catalog unless it is reused; it reports whether a seeded
// catalog is there.
func (m *measurement) seed(ctx context.Context, reuse bool) (bool, error) {
	o, tr := m.o, m.tr
	srv, err := loadgen.StartServer(ctx, m.so)
	if err != nil {
		return false, err
	}
	tr.StartupEmptyMS = msf(srv.Startup)
	tr.Reused = reuse
	tr.MissingTools = loadgen.MissingTools(srv)
	seeded := reuse
	canSeed := srv.Has(loadgen.ToolUpsert) || srv.Has(loadgen.ToolImport)
	var seedRes *loadgen.OpResult
	switch {
	case reuse:
		m.logf("reusing the catalog of %d bundles in %s", o.bundles, m.dir)
	case o.bundles == 0:
	case !canSeed:
		seedRes = &loadgen.OpResult{Op: "seed", Transport: m.transport, Bundles: o.bundles, Skipped: "tools " + loadgen.ToolUpsert + " and " + loadgen.ToolImport + " not registered"}
	default:
		r, err := m.seedCatalog(ctx, srv)
		if err != nil {
			srv.Close()
			return false, err
		}
		seedRes = &r
		seeded = true
	}
	if err := srv.Close(); err != nil {
		return false, err
	}
	if seeded && o.dbDir != "" {
		raw, _ := json.Marshal(marker{Bundles: o.bundles, Seed: o.seed})
		if err := os.WriteFile(m.markerPath, raw, 0o600); err != nil {
			return false, err
		}
	}
	if seedRes != nil {
		tr.Ops = append(tr.Ops, *seedRes)
	}
	return seeded, nil
}

// seedCatalog upserts the corpus through srv and records the seed's
// latency, the drift of its p50 from the first tenth to the last, and the
// server's peak RSS.
func (m *measurement) seedCatalog(ctx context.Context, srv *loadgen.Server) (loadgen.OpResult, error) {
	o, tr := m.o, m.tr
	m.logf("seeding %d bundles", o.bundles)
	t0 := time.Now()
	rec, err := loadgen.Seed(ctx, srv, m.corpus, 0, o.bundles, func(done int) {
		if done%2000 == 0 {
			m.logf("  %d/%d (%.0fs)", done, o.bundles, time.Since(t0).Seconds())
		}
	})
	if err != nil {
		return loadgen.OpResult{}, err
	}
	r := rec.Summary("seed", m.transport, o.bundles, tr.Clients)
	first, last := rec.SplitP50()
	tr.SeedFirstP50MS, tr.SeedLastP50MS = msf(first), msf(last)
	r.Note = fmt.Sprintf("upsert p50 first tenth %.2f ms, last tenth %.2f ms", tr.SeedFirstP50MS, tr.SeedLastP50MS)
	if rss, err := srv.PeakRSSBytes(); err == nil {
		tr.SeedPeakRSSMiB = mib(rss)
	}
	return r, nil
}

// startups restarts the server --startup-runs times, timing each start,
// and returns the last one, still running.
func (m *measurement) startups(ctx context.Context) (*loadgen.Server, error) {
	var srv *loadgen.Server
	for i := range m.o.startupRuns {
		var err error
		srv, err = loadgen.StartServer(ctx, m.so)
		if err != nil {
			return nil, err
		}
		m.tr.StartupRunsMS = append(m.tr.StartupRunsMS, msf(srv.Startup))
		if i < m.o.startupRuns-1 {
			if err := srv.Close(); err != nil {
				return nil, err
			}
		}
	}
	m.tr.StartupMS = median(m.tr.StartupRunsMS)
	return srv, nil
}

// runOps runs each requested operation on srv, or records why it was
// skipped.
func (m *measurement) runOps(ctx context.Context, srv *loadgen.Server, ops map[string]loadgen.Op, seeded bool) error {
	o, tr := m.o, m.tr
	lim := loadgen.Limits{Calls: o.calls, Duration: o.duration}
	var raw *loadgen.RawHTTP
	if o.raw && m.transport == loadgen.HTTP {
		c, err := loadgen.NewRawHTTP(ctx, srv.Endpoint, o.bearer, len(srv.Sessions))
		if err != nil {
			return err
		}
		defer c.Close()
		raw = c
	}
	for k, name := range o.ops {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		seed := o.seed + uint64(k)*7919
		if weights, ok := loadgen.Mixes[name]; ok {
			m.runMixed(ctx, srv, ops, name, weights, lim, seed, seeded, raw)
			continue
		}
		op := ops[name]
		if why := loadgen.SkipReason(srv, op, seeded); why != "" {
			tr.Ops = append(tr.Ops, loadgen.OpResult{Op: name, Transport: m.transport, Bundles: o.bundles, Skipped: why})
			continue
		}
		m.logf("running %s", name)
		cpu0, cpuErr := srv.CPUTime()
		rec := loadgen.Run(ctx, srv, op, lim, seed)
		res := rec.Summary(name, m.transport, o.bundles, len(srv.Sessions))
		cpu1, _ := srv.CPUTime()
		if cpuErr == nil && m.transport != loadgen.Attach {
			// An attached front end's process is not the one serving.
			res.ServerCPUUS = loadgen.PerCallUS(cpu1-cpu0, res.Calls)
		}
		if raw != nil {
			m.logf("running %s through the bare HTTP client", name)
			r := loadgen.RunRawHTTP(ctx, raw, len(srv.Sessions), op, lim, seed).Summary(name, m.transport, o.bundles, len(srv.Sessions))
			if cpu2, err := srv.CPUTime(); err == nil && cpuErr == nil {
				r.ServerCPUUS = loadgen.PerCallUS(cpu2-cpu1, r.Calls)
			}
			res.SetRaw(r)
		}
		tr.Ops = append(tr.Ops, res)
	}
	return nil
}

// runMixed runs a mixed workload and records it as a whole and per
// operation, then the whole again through the bare HTTP client when raw is
// set.
func (m *measurement) runMixed(ctx context.Context, srv *loadgen.Server, ops map[string]loadgen.Op, name string, weights []loadgen.Weight, lim loadgen.Limits, seed uint64, seeded bool, raw *loadgen.RawHTTP) {
	o, tr := m.o, m.tr
	if !seeded {
		tr.Ops = append(tr.Ops, loadgen.OpResult{Op: name, Transport: m.transport, Bundles: o.bundles, Skipped: "no seeded catalog (upsert/import not registered)"})
		return
	}
	m.logf("running %s", name)
	cpu0, cpuErr := srv.CPUTime()
	all, parts, skipped := loadgen.RunMixed(ctx, srv, ops, weights, lim, seed)
	cpu1, _ := srv.CPUTime()
	if len(parts) == 0 {
		tr.Ops = append(tr.Ops, loadgen.OpResult{Op: name, Transport: m.transport, Bundles: o.bundles, Skipped: "none of its tools are registered"})
		return
	}
	r := all.Summary(name, m.transport, o.bundles, len(srv.Sessions))
	if cpuErr == nil && m.transport != loadgen.Attach {
		r.ServerCPUUS = loadgen.PerCallUS(cpu1-cpu0, r.Calls)
	}
	if len(skipped) > 0 {
		r.Note = "without " + strings.Join(skipped, ", ") + " (tools not registered)"
	}
	if raw != nil {
		m.logf("running %s through the bare HTTP client", name)
		rr := loadgen.RunRawHTTPMixed(ctx, raw, srv, len(srv.Sessions), ops, weights, lim, seed).Summary(name, m.transport, o.bundles, len(srv.Sessions))
		if cpu2, err := srv.CPUTime(); err == nil && cpuErr == nil {
			rr.ServerCPUUS = loadgen.PerCallUS(cpu2-cpu1, rr.Calls)
		}
		r.SetRaw(rr)
	}
	tr.Ops = append(tr.Ops, r)
	for _, n := range slices.Sorted(maps.Keys(parts)) {
		tr.Ops = append(tr.Ops, parts[n].Summary(name+":"+n, m.transport, o.bundles, len(srv.Sessions)))
	}
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func mib(b int64) float64         { return float64(b) / (1 << 20) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

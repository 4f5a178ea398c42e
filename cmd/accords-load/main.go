// Command accords-load drives built MCP server binaries through the go-sdk
// client, seeds a catalog (test/workload) through their upsert tool and
// reports per-call p50/p95/p99, start-up, peak RSS and, with --http, read
// throughput; --compare alternates the same calls with a second binary, and
// --check exits 1 when a budget fails.
//
//	make build && go run ./cmd/accords-load --bin bin/accords-mcp --bundles 1000 --http
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/accordsai/accords-mcp/test/workload"
)

type options struct {
	bin, compare            string
	env, cmpArgs, cmpEnv    []string
	compareSeed, http       bool
	bundles, calls, clients int
	startups                int
	ops, allOps             []string
	duration                time.Duration
	seed                    uint64
	check, asJSON           bool
	maxRatio                map[string]string
	ratios                  map[string]float64
	logf                    func(format string, a ...any)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "accords-load:", err)
		return 2
	}
	rep, err := measure(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "accords-load:", err)
		return 1
	}
	table := rows(o, rep)
	for _, r := range table {
		if r.failed {
			rep.Failures = append(rep.Failures, r.label)
		}
	}
	if !o.asJSON {
		writeTable(stdout, rep, table)
	} else if out, err := json.MarshalIndent(rep, "", "  "); err != nil {
		return 1
	} else {
		fmt.Fprintln(stdout, string(out))
	}
	return btoi(o.check && len(rep.Failures) > 0)
}

// parse reads the flags; every bad value is a usage error.
func parse(args []string, stderr io.Writer) (options, error) {
	o := options{allOps: slices.Sorted(maps.Keys(opTable(workload.Corpus{}, 1, 0)))}
	fs := pflag.NewFlagSet("accords-load", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin/accords-mcp", "the server binary to measure (make build)")
	fs.StringArrayVar(&o.env, "env", nil, "KEY=VALUE added to --bin's environment (repeatable; {dir} is its data folder)")
	fs.StringVar(&o.compare, "compare", "", "another stdio MCP server binary driven with the same calls, alternating (the predecessor, another build)")
	fs.StringArrayVar(&o.cmpArgs, "compare-arg", nil, "an argument for --compare (repeatable; {dir} is its data folder)")
	fs.StringArrayVar(&o.cmpEnv, "compare-env", nil, "KEY=VALUE added to --compare's environment (repeatable; {dir} is its data folder)")
	fs.BoolVar(&o.compareSeed, "compare-seed", true, "seed --compare through its upsert tool (false: measure it on the catalog it has, one --compare-env points it at)")
	fs.IntVar(&o.bundles, "bundles", 1000, "catalog size to seed (five entries a bundle)")
	fs.IntVar(&o.calls, "calls", 1000, "measured calls per operation and binary")
	fs.StringSliceVar(&o.ops, "ops", []string{"tools-list", "status", "search", "render", "route", "get", "upsert"}, "operations to measure over stdio")
	fs.IntVar(&o.startups, "startup-runs", 3, "starts on a fresh empty database, timed to the initialize answer")
	fs.BoolVar(&o.http, "http", false, "also measure --bin over Streamable HTTP: --clients sessions calling search, render and get for --duration")
	fs.IntVar(&o.clients, "clients", 16, "concurrent HTTP client sessions")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of the HTTP run")
	fs.Uint64Var(&o.seed, "seed", workload.DefaultSeed, "seed of the catalog and of the call arguments")
	fs.BoolVar(&o.check, "check", false, "exit 1 when a budget fails (the budget column)")
	fs.StringToStringVar(&o.maxRatio, "max-ratio", nil, "OP=X: a budget on ours over compare at the p50, e.g. search=0.1,upsert=0.2")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: accords-load [flags]\n\noperations: %s\n\nflags:\n", strings.Join(o.allOps, ", "))
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.bundles < 1 || o.bundles > 1_000_000 || o.calls < 1 || o.clients < 1 || o.startups < 1 || o.duration <= 0 {
		return o, errors.New("--bundles 1..1000000; --calls, --clients, --startup-runs and --duration above 0")
	}
	for _, op := range o.ops {
		if !slices.Contains(o.allOps, op) {
			return o, fmt.Errorf("unknown operation %q (%s)", op, strings.Join(o.allOps, ", "))
		}
	}
	o.ratios = map[string]float64{}
	for op, v := range o.maxRatio {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x <= 0 || !slices.Contains(o.ops, op) || o.compare == "" {
			return o, fmt.Errorf("--max-ratio %s=%s: an operation of --ops, a number above 0, and --compare", op, v)
		}
		o.ratios[op] = x
	}
	for _, p := range []*string{&o.bin, &o.compare} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err == nil {
				_, err = os.Stat(*p)
			}
			if err != nil {
				return o, fmt.Errorf("server binary: %w", err)
			}
		}
	}
	o.logf = func(format string, a ...any) { fmt.Fprintf(stderr, "accords-load: "+format+"\n", a...) }
	return o, nil
}

// Budgets over stdio, per tool call (ms).
var callBudgets = []struct {
	op    string
	pct   int
	maxMS float64
}{
	{"search", 50, 5}, {"search", 95, 20}, {"upsert", 50, 10}, {"render", 50, 2}, {"route", 50, 5}, {"tools-list", 50, 2},
}

// Budgets of start-up on an empty database, peak RSS, the seed's upsert p50
// over its last 100 bundles against its first 100, and HTTP reads.
const (
	maxStartupMS  = 300
	maxRSSMiB     = 150
	maxSeedGrowth = 2.0
	minHTTPPerSec = 1000
	maxHTTPP99MS  = 50
)

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/bench/loadgen"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--transport", "carrier-pigeon"},
		{"--ops", "search,teleport"},
		{"--clients", "0"},
		{"--bundles", "-1"},
		{"extra-arg"},
		{"--bin", filepath.Join(t.TempDir(), "missing")},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &out, &errOut), "args %v", args)
		assert.NotEmpty(t, errOut.String(), "args %v explain themselves", args)
		assert.Empty(t, out.String())
	}
}

// TestEndToEnd builds the server and runs a small load over both
// transports: every operation whose tool exists must run without errors,
// the seed must reach the catalog, and start-up and peak RSS are reported.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the server binary")
	}
	bin := testbin.AccordsMCP(t)

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--bin", bin, "--bundles", "30", "--calls", "30", "--clients", "3",
		"--startup-runs", "2", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep loadgen.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	require.Len(t, rep.Transports, 2)
	assert.Greater(t, rep.Machine.NProc, 0)
	for _, tr := range rep.Transports {
		assert.Greater(t, tr.StartupMS, 0.0, tr.Transport)
		assert.Len(t, tr.StartupRunsMS, 2)
		if _, err := os.Stat("/proc/self/status"); err == nil {
			assert.Greater(t, tr.PeakRSSMiB, 1.0, tr.Transport)
		}
		ops := map[string]loadgen.OpResult{}
		for _, o := range tr.Ops {
			ops[o.Op] = o
		}
		seed := ops["seed"]
		require.Empty(t, seed.Skipped, "%s: seed skipped", tr.Transport)
		assert.Equal(t, 30, seed.Calls)
		for _, name := range allOps {
			o, ok := ops[name]
			require.True(t, ok, "%s: op %s reported", tr.Transport, name)
			if o.Skipped != "" {
				t.Logf("%s %s skipped: %s", tr.Transport, name, o.Skipped)
				continue
			}
			assert.Empty(t, o.Errors, "%s %s errors", tr.Transport, name)
			assert.Greater(t, o.Calls, 0, "%s %s", tr.Transport, name)
			assert.LessOrEqual(t, o.P50MS, o.P95MS)
			assert.LessOrEqual(t, o.P95MS, o.P99MS)
		}
		if tr.Transport == loadgen.HTTP {
			assert.Equal(t, 3, tr.Clients)
		}
	}
}

// TestKeptDatabaseIsReused runs twice on one --db directory: the first run
// seeds and writes the marker, the second reuses the catalog without
// seeding; a different seed starts over. Over HTTP an explicit policy file
// is reported as such.
func TestKeptDatabaseIsReused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the server binary")
	}
	bin := testbin.AccordsMCP(t)
	db := t.TempDir()
	policy := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte(benchPolicy), 0o600))
	bench := func(extra ...string) loadgen.TransportReport {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{"--bin", bin, "--db", db, "--bundles", "4", "--calls", "3", "--clients", "1", "--startup-runs", "1",
			"--ops", "status,mixed", "--json"}, extra...)
		require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
		var rep loadgen.Report
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
		require.Len(t, rep.Transports, 1)
		return rep.Transports[0]
	}
	ops := func(tr loadgen.TransportReport) []string {
		var out []string
		for _, o := range tr.Ops {
			out = append(out, o.Op)
		}
		return out
	}

	first := bench("--transport", "stdio")
	assert.False(t, first.Reused)
	assert.Equal(t, "seed", first.Ops[0].Op)
	assert.Equal(t, 4, first.Ops[0].Calls)
	raw, err := os.ReadFile(filepath.Join(db, "stdio", "accords-bench.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"bundles":4,"seed":`+fmt.Sprint(loadgen.DefaultSeed)+`}`, string(raw))

	again := bench("--transport", "stdio")
	assert.True(t, again.Reused)
	assert.NotContains(t, ops(again), "seed")
	assert.Contains(t, ops(again), "mixed")
	assert.Empty(t, again.Policy, "stdio has no policy file")

	reseeded := bench("--transport", "stdio", "--seed", "7")
	assert.False(t, reseeded.Reused)
	assert.Equal(t, "seed", reseeded.Ops[0].Op)

	h := bench("--transport", "http", "--policy", policy)
	assert.Equal(t, policy, h.Policy)
	assert.False(t, h.Reused, "each transport has its own database")
	h = bench("--transport", "http", "--policy", "none", "--ops", "status")
	assert.Empty(t, h.Policy)
	assert.True(t, h.Reused)
	assert.Equal(t, []string{"status"}, ops(h))
}

// TestCompareAttach runs the attached-front-end comparison small: both
// sides answer every call, the attached launches are timed, and the
// daemon the comparison started is stopped at the end.
func TestCompareAttach(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the server binary")
	}
	bin := testbin.AccordsMCP(t)
	db := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--bin", bin, "--db", db, "--compare-attach", "--bundles", "10", "--calls", "40",
		"--rounds", "2", "--startup-runs", "3", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep loadgen.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	c := rep.Attach
	require.NotNil(t, c)
	assert.Empty(t, rep.Transports, "the comparison replaces the workloads")
	assert.Zero(t, c.Errors)
	assert.Len(t, c.RoundsMS, 2)
	assert.Greater(t, c.StandaloneP50MS, 0.0)
	assert.Greater(t, c.AttachedP50MS, 0.0)
	assert.Len(t, c.InitRunsMS, 3)
	assert.Greater(t, c.AttachInitMS, 0.0)
	_, err := os.Stat(filepath.Join(db, "compare-attach", "accords.db.sock"))
	assert.True(t, os.IsNotExist(err), "the daemon is stopped afterwards")
	var table bytes.Buffer
	rep.WriteTable(&table)
	assert.Contains(t, table.String(), "added at the median")
}

// TestMain lets the test binary stand in for accords-bench when a run
// starts the floor server (os.Executable is the test binary here).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == loadgen.FloorArg {
		if err := loadgen.ServeFloor(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// TestCompareSideBySide runs --compare twice: against a second copy of
// the server (every operation on both, same calls, ratios near one and no
// errors) and against the floor server as a foreign MCP server (only
// tools/list is comparable; the catalog operations are skipped for it
// with the reason, never faked).
func TestCompareSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and drives the server binary")
	}
	bin := testbin.AccordsMCP(t)
	second := filepath.Join(t.TempDir(), "accords-mcp-copy")
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(second, raw, 0o755))

	runCompare := func(extra ...string) loadgen.SideBySide {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--bin", bin, "--bundles", "20", "--calls", "25", "--startup-runs", "1",
			"--ops", "status,search,render,upsert,mixed", "--json"}, extra...)
		code := run(context.Background(), args, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		var rep loadgen.Report
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
		require.NotNil(t, rep.SideBySide)
		require.Empty(t, rep.Transports, "--compare replaces the per-transport runs")
		return *rep.SideBySide
	}
	byOp := func(s loadgen.SideBySide) map[string]loadgen.SideOp {
		m := map[string]loadgen.SideOp{}
		for _, o := range s.Ops {
			m[o.Op] = o
		}
		return m
	}

	s := runCompare("--compare", second)
	require.Len(t, s.Targets, 3)
	assert.Equal(t, []string{"ours", "compare", "floor"}, []string{s.Targets[0].Name, s.Targets[1].Name, s.Targets[2].Name})
	ops := byOp(s)
	assert.NotContains(t, ops, "mixed", "mixed is not run side by side")
	for _, name := range []string{loadgen.OpToolsList, "status", "search", "render", "upsert"} {
		o, ok := ops[name]
		require.True(t, ok, name)
		for _, who := range []string{"ours", "compare"} {
			r := o.Results[who]
			require.Empty(t, r.Skipped, "%s %s", who, name)
			assert.Equal(t, 25, r.Calls, "%s %s", who, name)
			assert.Empty(t, r.Errors, "%s %s", who, name)
		}
		assert.Greater(t, o.RatioP50, 0.0, name)
		assert.Greater(t, o.FloorRatioP50, 0.0, name)
		for _, who := range []string{"ours", "compare"} {
			r := o.Results[who]
			assert.Equal(t, 25, r.RawCalls, "%s %s: the raw pass ran", who, name)
			assert.Zero(t, r.RawErrors, "%s %s", who, name)
			assert.Greater(t, r.RawP50MS, 0.0, "%s %s", who, name)
		}
		assert.Greater(t, o.RawRatioP50, 0.0, name)
		assert.Greater(t, o.RawFloorRatioP50, 0.0, name)
	}
	assert.Empty(t, s.RawError)
	assert.Positive(t, s.Targets[0].RSSAnonMiB)
	assert.Positive(t, s.Targets[0].RSSFileMiB)
	assert.Equal(t, 25, ops[loadgen.FloorTool].Results["floor"].RawCalls)
	assert.Equal(t, 25, ops[loadgen.OpToolsList].Results["floor"].Calls, "the floor answers tools/list")
	assert.Equal(t, 25, ops[loadgen.FloorTool].Results["floor"].Calls, "the floor's one tool")
	assert.NotContains(t, ops[loadgen.FloorTool].Results, "ours")

	self, err := os.Executable()
	require.NoError(t, err)
	s = runCompare("--compare", self, "--compare-arg", loadgen.FloorArg, "--raw=false")
	ops = byOp(s)
	assert.Zero(t, ops["search"].Results["ours"].RawCalls, "--raw=false: no raw pass")
	assert.Equal(t, 25, ops[loadgen.OpToolsList].Results["compare"].Calls)
	assert.Contains(t, ops["search"].Results["compare"].Skipped, "not registered")
	assert.Equal(t, 25, ops["search"].Results["ours"].Calls)
	assert.Zero(t, ops["search"].RatioP50, "no ratio against a skipped side")
	assert.Contains(t, s.Targets[1].Missing, loadgen.ToolSearch)
}

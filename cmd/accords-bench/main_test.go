package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/bench/loadgen"
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
	bin := filepath.Join(t.TempDir(), "accords-mcp")
	out, err := exec.Command("go", "build", "-o", bin, "../accords-mcp").CombinedOutput()
	require.NoError(t, err, "%s", out)

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

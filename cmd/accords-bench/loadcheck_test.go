//go:build loadcheck

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/accordsai/accords-mcp/bench/loadgen"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/stretchr/testify/require"
)

// loadCheckMarker is the line of docs/performance.md holding the figures
// the check compares against: the stdio search p50 at 1,000 bundles and
// the floor's ping p50 measured in the same run.
var loadCheckMarker = regexp.MustCompile(`<!-- load-check: bundles=(\d+) search_p50_ms=([0-9.]+) floor_p50_ms=([0-9.]+) -->`)

// TestLoadCheck is the short load run of .ci/extra: it seeds 1,000 bundles
// through the built server over stdio, measures search beside the floor,
// and fails when search p50 regresses past twice its documented figure.
// The documented figure is scaled by the floor measured in the same run
// against the documented floor, so a slower or busier CI machine moves the
// limit with it while a regression of the server does not.
func TestLoadCheck(t *testing.T) {
	raw, err := os.ReadFile("../../docs/performance.md")
	require.NoError(t, err)
	m := loadCheckMarker.FindSubmatch(raw)
	require.NotNil(t, m, "docs/performance.md must hold the load-check marker")
	bundles, _ := strconv.Atoi(string(m[1]))
	docSearch, _ := strconv.ParseFloat(string(m[2]), 64)
	docFloor, _ := strconv.ParseFloat(string(m[3]), 64)
	require.Positive(t, docSearch)
	require.Positive(t, docFloor)

	bin := testbin.AccordsMCP(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--bin", bin, "--transport", "stdio", "--bundles", strconv.Itoa(bundles),
		"--ops", "search", "--calls", "1000", "--duration", "60s", "--startup-runs", "1", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep loadgen.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Len(t, rep.Transports, 1)
	tr := rep.Transports[0]
	var search loadgen.OpResult
	for _, o := range tr.Ops {
		if o.Op == "search" {
			search = o
		}
	}
	require.Empty(t, search.Errors)
	require.GreaterOrEqual(t, search.Calls, 500)
	require.NotNil(t, tr.Floor)
	var floor float64
	for _, o := range tr.Floor.Ops {
		if o.Op == loadgen.FloorTool {
			floor = o.Results["floor"].P50MS
		}
	}
	require.Positive(t, floor)
	scale := max(floor/docFloor, 1)
	limit := 2 * docSearch * scale
	t.Logf("search p50 %.3f ms (documented %.3f ms); floor p50 %.3f ms (documented %.3f ms); limit %.3f ms", search.P50MS, docSearch, floor, docFloor, limit)
	require.LessOrEqual(t, search.P50MS, limit, "stdio search p50 regressed past twice its documented figure (docs/performance.md)")
}

package app_test

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/resident"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The app hands the governor its database and index mappings: a release
// goes through every source without error, a search still answers, and
// /metrics shows the resident set and the count of releases.
func TestGovernResidentReleasesTheAppsMappingsAndCountsThem(t *testing.T) {
	if _, err := resident.FileResident(); err != nil {
		t.Skip(err)
	}
	a := testenv.Open(t, testenv.Config(t))
	var failed []string
	g := app.NewResidentGovernor(1, func(source string, err error) { failed = append(failed, source+": "+err.Error()) })
	a.GovernResident(g)
	g.Trim()
	g.Trim()
	assert.Empty(t, failed)
	hits, err := a.Catalog.Search(t.Context(), index.Query{Text: "gmail", Limit: 5})
	require.NoError(t, err)
	assert.NotEmpty(t, hits.Items, "the built-in cookbooks answer after their pages were released")

	var out bytes.Buffer
	require.NoError(t, a.Metrics.Registry.WriteText(&out))
	m := regexp.MustCompile(`(?m)^accords_mcp_mapped_releases_total (\S+)$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	n, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Equal(t, 2.0, n)
	m = regexp.MustCompile(`(?m)^accords_mcp_mapped_resident_bytes (\S+)$`).FindStringSubmatch(out.String())
	require.NotNil(t, m)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Positive(t, v)
}

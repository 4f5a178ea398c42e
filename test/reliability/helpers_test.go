package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// binary builds cmd/accords-mcp once per test run. It is built without
// -race even under go test -race: an instrumented server is several times
// slower, so a kill would find far fewer writes in flight. Races in the
// server are the in-process concurrency test's job.
func binary(t testing.TB) string { return testbin.AccordsMCP(t) }

// startStdio starts the binary on dbPath over stdio with one session.
func startStdio(t testing.TB, dbPath string) *mcpproc.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := mcpproc.Start(ctx, mcpproc.Options{Bin: binary(t), DBPath: dbPath, Transport: mcpproc.Stdio})
	require.NoError(t, err)
	return srv
}

// expectedHash is the content hash the catalog must store for bundle.
func expectedHash(t testing.TB, bundle map[string]any) string {
	t.Helper()
	b, err := catalog.BundleFromValue(bundle)
	require.NoError(t, err)
	_, hash, err := catalog.Prepare(b)
	require.NoError(t, err)
	return hash
}

// storedHash fetches id@version and returns its content hash, or "" when
// the catalog says it does not exist.
func storedHash(t testing.TB, cs *mcp.ClientSession, ctx context.Context, id, version string) string {
	t.Helper()
	env, err := mcptest.TryCall(ctx, cs, workload.ToolGet, map[string]any{"cookbook_id": id, "version": version})
	if env.Code() == "MCP_CATALOG_NOT_FOUND" {
		return ""
	}
	require.NoError(t, err)
	require.Empty(t, env.Code(), "get %s@%s: %+v", id, version, env.Error)
	data, _ := env.Data.(map[string]any)
	require.NotNil(t, data["bundle"], "get %s@%s returned no bundle", id, version)
	b, err := catalog.BundleFromValue(data["bundle"])
	require.NoError(t, err, "stored bundle %s@%s does not decode", id, version)
	_, hash, err := catalog.Prepare(b)
	require.NoError(t, err, "stored bundle %s@%s does not validate", id, version)
	return hash
}

// indexedVersions returns the versions of id the search index holds.
func indexedVersions(t testing.TB, ctx context.Context, cs *mcp.ClientSession, id string) map[string]bool {
	t.Helper()
	env, err := mcptest.TryCall(ctx, cs, workload.ToolSearch, map[string]any{"cookbook_id": id, "all_versions": true, "limit": 1000})
	require.NoError(t, err)
	require.Empty(t, env.Code(), "search %s: %+v", id, env.Error)
	out := map[string]bool{}
	data, _ := env.Data.(map[string]any)
	items, _ := data["items"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		require.Equal(t, id, m["cookbook_id"], "cookbook_id filter leaked another cookbook")
		out[m["version"].(string)] = true
	}
	return out
}

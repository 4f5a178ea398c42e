package reliability

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVaultFaults injects every kind of Vault failure through the
// simulator and calls Vault-backed tools over the HTTP bridge. Each call
// must come back as an envelope within the session timeout + 1 s, with the
// retryable network code for transport failures (D2), other calls must not
// wait behind a hung one, and the server must stay healthy afterwards.
func TestVaultFaults(t *testing.T) {
	const timeoutMS = 1000
	sim, err := vaultsim.Start("", vaultsim.Options{})
	require.NoError(t, err)
	defer sim.Close()

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.toml")
	require.NoError(t, os.WriteFile(policy, []byte("version = 1\n\n[anonymous]\ncalls_per_minute = 0\n"), 0o600))
	cfg := testenv.Config(t, "ACCORDS_MCP_POLICY_FILE="+policy, "VC_AGENT_TOKEN="+sim.AgentToken(),
		"VC_BASE_URL="+sim.URL, fmt.Sprintf("VC_TIMEOUT_MS=%d", timeoutMS))
	a, err := app.Open(cfg, testenv.Logger())
	require.NoError(t, err)
	hs := httptest.NewServer(a.HTTPHandler())
	defer func() {
		hs.Close()
		require.NoError(t, a.Close())
	}()
	connect := func() *mcp.ClientSession { return mcptest.ConnectHTTP(t, hs.URL+"/v1/mcp", mcptest.HTTPOptions{}) }
	cs := connect()
	defer cs.Close()
	ctx := context.Background()

	// Healthy baseline.
	env, err := mcptest.TryCall(ctx, cs, "vaultclaw_connectors_list", map[string]any{})
	require.NoError(t, err)
	require.Empty(t, env.Code(), "connectors list against a healthy simulator")

	calls := []struct {
		tool string
		args map[string]any
		path string
	}{
		{"vaultclaw_connectors_list", map[string]any{}, "/v0/connectors"},
		{"vaultclaw_job_get", map[string]any{"job_id": "job-1"}, "/v0/jobs/job-1"},
		{"vaultclaw_approvals_pending_list", map[string]any{}, "/v0/connectors/approvals/pending"},
	}
	if !heavy {
		calls = calls[:1] // every fault on one tool; all three with -tags=reliability
	}
	faults := []struct {
		name      string
		fault     vaultsim.Fault
		wantCode  string // "" accepts any envelope error code
		retryable bool
	}{
		{"latency past the timeout", vaultsim.Fault{Latency: 3 * timeoutMS * time.Millisecond}, "MCP_NETWORK_ERROR", true},
		{"never answers", vaultsim.Fault{Latency: time.Hour}, "MCP_NETWORK_ERROR", true},
		{"500 with error body", vaultsim.Fault{Status: 500, Body: `{"error":{"code":"INTERNAL","message":"boom"}}`}, "MCP_NETWORK_ERROR", true},
		{"502 html", vaultsim.Fault{Status: 502, Body: "<html>bad gateway</html>", ContentType: "text/html"}, "MCP_NETWORK_ERROR", true},
		{"503 empty", vaultsim.Fault{Status: 503, EmptyBody: true}, "MCP_NETWORK_ERROR", true},
		{"429", vaultsim.Fault{Status: 429, Body: `{"error":{"code":"RATE_LIMITED","message":"slow down"}}`}, "", true},
		{"connection reset", vaultsim.Fault{Reset: true, Times: 2}, "MCP_NETWORK_ERROR", true},
		{"garbage 200 body", vaultsim.Fault{Status: 200, Body: "\x00\xffnot json{{", ContentType: "application/json"}, "", false},
		{"truncated 200 JSON", vaultsim.Fault{Status: 200, Body: `{"items":[{"id":"a"`}, "", false},
		{"garbage 400 body", vaultsim.Fault{Status: 400, Body: "%%%"}, "", false},
	}
	limit := timeoutMS*time.Millisecond + time.Second
	codes := map[string]string{}
	for _, f := range faults {
		for _, c := range calls {
			t.Run(f.name+"/"+c.tool, func(t *testing.T) {
				sim.ClearFaults()
				fault := f.fault
				fault.Path = c.path
				if fault.Times == 0 {
					fault.Times = 3 // covers a transport-level retry of an idempotent GET
				}
				sim.InjectFault(fault)
				defer sim.ClearFaults()

				// A cheap local call made while the faulty one is in
				// flight must not wait for it.
				var wg sync.WaitGroup
				var sideErr error
				var side time.Duration
				wg.Go(func() {
					time.Sleep(100 * time.Millisecond)
					other := connect()
					defer other.Close()
					t0 := time.Now()
					env, err := mcptest.TryCall(ctx, other, workload.ToolStatus, map[string]any{})
					side = time.Since(t0)
					if err != nil || env.Code() != "" {
						sideErr = fmt.Errorf("status during fault: %s %w", env.Code(), err)
					}
				})
				cctx, cancel := context.WithTimeout(ctx, limit+5*time.Second)
				defer cancel()
				t0 := time.Now()
				env, err := mcptest.TryCall(cctx, cs, c.tool, args(c.args))
				code := env.Code()
				elapsed := time.Since(t0)
				wg.Wait()
				require.NoError(t, sideErr)
				assert.Less(t, side, 500*time.Millisecond, "a local call waited behind the faulty one")
				require.NoError(t, err, "no envelope")
				assert.LessOrEqual(t, elapsed, limit, "answered after %s", elapsed)
				codes[f.name+" "+c.tool] = code
				if f.wantCode != "" {
					require.Equal(t, f.wantCode, code, "%+v", env.Error)
				}
				if code != "" && env.Error != nil {
					if f.retryable {
						assert.True(t, env.Error.Retryable, "%s should be retryable: %+v", f.name, env.Error)
					}
					assert.NotContains(t, fmt.Sprint(env.Error), sim.AgentToken(), "token leaked into the error")
				}
			})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(codes)) {
		t.Logf("%-60s %q", k, codes[k])
	}

	// Healthy afterwards: Vault calls work again, local calls work, the
	// health endpoint answers.
	sim.ClearFaults()
	env, err = mcptest.TryCall(ctx, cs, "vaultclaw_connectors_list", map[string]any{})
	require.NoError(t, err)
	require.Empty(t, env.Code(), "connectors list after the faults")
	resp, err := http.Get(hs.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func args(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	maps.Copy(out, m)
	return out
}

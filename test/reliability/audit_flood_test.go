//go:build reliability

package reliability

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	floodVictimToken   = "bearer-token-of-globex-9876543210"
	floodAttackerToken = "bearer-token-of-mallory-5555555555"
)

// floodBatch is a JSON-RPC batch of n tools/call.
func floodBatch(n int) []any {
	msgs := make([]any, n)
	for i := range msgs {
		msgs[i] = mcptest.ToolsCall(i+1, "vaultclaw_session_status", map[string]any{})
	}
	return msgs
}

// TestRefusalFloodAtFullSize is the attack of issue 37 at its size: a
// caller with no capability posts 13 JSON-RPC batches of 8,000 calls over
// the HTTP bridge, then as many batches within the limit as it can,
// against a count bound of 2,000 receipts. Another tenant's
// session_configure and status receipts survive, verify, and the flood
// leaves a handful of receipts; with the refusal summaries off, the tenant
// floor alone keeps them.
func TestRefusalFloodAtFullSize(t *testing.T) {
	for _, summaries := range []bool{true, false} {
		name := "summaries"
		if !summaries {
			name = "floor alone"
		}
		t.Run(name, func(t *testing.T) {
			pol := filepath.Join(t.TempDir(), "policy.toml")
			require.NoError(t, os.WriteFile(pol, []byte(`
[[callers]]
id = "globex-bot"
token_sha256 = "`+policy.HashToken(floodVictimToken)+`"
tenant = "globex"
capabilities = ["session_admin"]

[[callers]]
id = "mallory"
token_sha256 = "`+policy.HashToken(floodAttackerToken)+`"
tenant = "mallory-corp"
capabilities = []
`), 0o600))
			env := []string{"ACCORDS_MCP_POLICY_FILE=" + pol, "ACCORDS_MCP_AUDIT_RETENTION=2000", "ACCORDS_MCP_AUDIT_TENANT_FLOOR=100"}
			if !summaries {
				env = append(env, "ACCORDS_MCP_AUDIT_REFUSAL_WINDOW=off")
			}
			a := testenv.Open(t, testenv.Config(t, env...))
			srv := httptest.NewServer(a.HTTPHandler())
			defer srv.Close()
			victim := map[string]string{"Authorization": "Bearer " + floodVictimToken}
			require.True(t, mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_configure",
				map[string]any{"token": "vc_tok_victim", "base_url": "http://127.0.0.1:9"}, victim).OK)
			require.True(t, mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", nil, victim).OK)
			before, err := a.Audit.List(audit.Filter{Scope: "globex"})
			require.NoError(t, err)
			require.Len(t, before, 2)

			attacker := map[string]string{"Authorization": "Bearer " + floodAttackerToken, "Mcp-Protocol-Version": "2025-03-26"}
			for range 13 {
				rep := mcptest.Post(t, srv.URL+"/v1/mcp", floodBatch(8000), attacker)
				require.Equal(t, http.StatusBadRequest, rep.StatusCode)
				assert.Contains(t, string(rep.Body), "batch_too_large")
			}
			const batches = 300
			for range batches {
				rep := mcptest.Post(t, srv.URL+"/v1/mcp", floodBatch(transport.DefaultMaxBatch), attacker)
				require.Equal(t, http.StatusOK, rep.StatusCode, string(rep.Body))
				var answers []json.RawMessage
				require.NoError(t, json.Unmarshal(rep.Body, &answers))
				require.Len(t, answers, transport.DefaultMaxBatch)
			}
			a.Gateway.FlushRefusals()
			require.NoError(t, a.Audit.Flush())
			require.NoError(t, a.Audit.Prune())

			after, err := audit.List(a.DB, audit.Filter{Scope: "globex"})
			require.NoError(t, err)
			assert.Equal(t, before, after, "the other tenant's receipts survive the flood")
			rep, err := audit.Verify(a.DB, audit.VerifyOptions{Verifier: a.AuditKey.Verifier()})
			require.NoError(t, err)
			require.True(t, rep.OK, "%+v", rep.Problem)
			flood, err := audit.List(a.DB, audit.Filter{Scope: "mallory-corp", Limit: 100000})
			require.NoError(t, err)
			if summaries {
				var counted uint64
				for _, r := range flood {
					counted += max(r.Count, 1)
				}
				assert.Less(t, len(flood), 100, "a few receipts stand for the flood")
				assert.EqualValues(t, batches*transport.DefaultMaxBatch, counted, "every refused call is accounted for")
			} else {
				assert.LessOrEqual(t, len(flood), 2000, "the count bound holds for the flooding tenant")
				assert.Equal(t, 2, rep.Kept, "the victim's receipts are kept under the floor")
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func gatewayEnv(vars map[string]string, stdin string) (*environment, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &environment{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] },
	}, &out, &errb
}

// seed runs real tool calls through the app (gateway included) so the log
// holds genuine receipts.
func seedAudit(t *testing.T, vars map[string]string, calls int) {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Open(cfg, nil)
	require.NoError(t, err)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	for range calls {
		mcptest.Call(t, cs, "vaultclaw_session_status", nil)
	}
	mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{"token": "tok-SECRET-abcdef"})
	_ = cs.Close()
	require.NoError(t, a.Close())
}

func TestAuditVerifyAndTail(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db")}
	seedAudit(t, vars, 4)

	env, out, _ := gatewayEnv(vars, "")
	require.Equal(t, 0, run(context.Background(), env, []string{"audit", "verify"}))
	assert.Contains(t, out.String(), "audit chain OK: 5 receipts (seq 1..5)")

	env, out, _ = gatewayEnv(vars, "")
	require.Equal(t, 0, run(context.Background(), env, []string{"audit", "tail", "-n", "2", "--json"}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &last))
	assert.Equal(t, "vaultclaw_session_configure", last["tool"], "oldest first, newest last")
	assert.EqualValues(t, 5, last["seq"])
	assert.NotContains(t, out.String(), "SECRET")

	env, out, _ = gatewayEnv(vars, "")
	require.Equal(t, 0, run(context.Background(), env, []string{"audit", "tail"}))
	assert.Contains(t, out.String(), "SEQ")
	assert.Contains(t, out.String(), "vaultclaw_session_status")

	// Remove receipt 3: verify names it and exits 1.
	db, err := store.Open(vars["ACCORDS_MCP_DB"], store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketAudit).Bucket([]byte("receipts")).Delete(store.U64(3))
	}))
	require.NoError(t, db.Close())
	env, out, _ = gatewayEnv(vars, "")
	require.Equal(t, 1, run(context.Background(), env, []string{"audit", "verify"}))
	assert.Contains(t, out.String(), "audit chain FAILED (removed at receipt 3)")

	env, out, _ = gatewayEnv(vars, "")
	require.Equal(t, 1, run(context.Background(), env, []string{"audit", "verify", "--json"}))
	var rep map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, false, rep["ok"])

	env, _, errb := gatewayEnv(vars, "")
	assert.Equal(t, 2, run(context.Background(), env, []string{"audit", "frobnicate"}))
	assert.Contains(t, errb.String(), "unknown subcommand")
}

func TestAuditVerifyReportsTruncatedTail(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db")}
	seedAudit(t, vars, 2)
	db, err := store.Open(vars["ACCORDS_MCP_DB"], store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(store.BucketAudit).Bucket([]byte("receipts")).Delete(store.U64(3))
	}))
	require.NoError(t, db.Close())
	env, out, _ := gatewayEnv(vars, "")
	require.Equal(t, 1, run(context.Background(), env, []string{"audit", "verify"}))
	assert.Contains(t, out.String(), "truncated")
	assert.Contains(t, out.String(), "1 receipts missing from the tail")
}

func TestPolicyHashToken(t *testing.T) {
	env, out, _ := gatewayEnv(nil, "my-token\n")
	require.Equal(t, 0, run(context.Background(), env, []string{"policy", "hash-token"}))
	assert.Equal(t, policy.HashToken("my-token")+"\n", out.String())
	env, _, _ = gatewayEnv(nil, "")
	assert.Equal(t, 1, run(context.Background(), env, []string{"policy", "hash-token"}))
}

func TestServeRefusesPublicAddressWithoutCallers(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db"), "ACCORDS_MCP_LOG_LEVEL": "error"}
	env, _, errb := gatewayEnv(vars, "")
	require.Equal(t, 1, run(context.Background(), env, []string{"serve", "--http", "0.0.0.0:0"}))
	assert.Contains(t, errb.String(), "requires bearer authentication")
}

func TestServeRejectsUnknownToolset(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db"), "ACCORDS_MCP_LOG_LEVEL": "error", "ACCORDS_MCP_STANDALONE": "true"}
	env, _, errb := gatewayEnv(vars, "")
	require.Equal(t, 1, run(context.Background(), env, []string{"serve", "--toolsets", "vault,nope"}))
	assert.Contains(t, errb.String(), `unknown toolset "nope"`)
}

func TestServeReadOnlyOverRealStdio(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db"), "ACCORDS_MCP_LOG_LEVEL": "error", "ACCORDS_MCP_STANDALONE": "true"}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"vaultclaw_session_configure","arguments":{"token":"tok-SECRET-1"}}}`,
	}, "\n") + "\n"
	env, out, errb := gatewayEnv(vars, in)
	require.Equal(t, 0, run(context.Background(), env, []string{"serve", "--read-only"}), errb.String())
	byID := map[float64]map[string]any{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var msg map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &msg), line)
		if id, ok := msg["id"].(float64); ok {
			byID[id] = msg
		}
	}
	list, _ := json.Marshal(byID[2]["result"])
	assert.Contains(t, string(list), "vaultclaw_session_status")
	assert.NotContains(t, string(list), "vaultclaw_session_configure")
	res := byID[3]["result"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	sc, _ := json.Marshal(res["structuredContent"])
	assert.Contains(t, string(sc), "MCP_PERMISSION_DENIED")

	env, out, _ = gatewayEnv(vars, "")
	require.Equal(t, 0, run(context.Background(), env, []string{"audit", "tail", "--json"}))
	assert.Contains(t, out.String(), `"outcome":"MCP_PERMISSION_DENIED"`)
}

// Each kind of tampering on a log written by real calls through the app.
func TestAuditVerifyNamesTamperingOnARealLog(t *testing.T) {
	receipts := []byte("receipts")
	cases := []struct {
		name, want string
		tamper     func(b *bolt.Bucket) error
	}{
		{"edit", "(altered at receipt 2)", func(b *bolt.Bucket) error {
			v := append([]byte(nil), b.Get(store.U64(2))...)
			return b.Put(store.U64(2), bytes.Replace(v, []byte(`"outcome":"ok"`), []byte(`"outcome":"MCP_X"`), 1))
		}},
		{"delete", "(removed at receipt 2)", func(b *bolt.Bucket) error { return b.Delete(store.U64(2)) }},
		{"reorder", "(reordered at receipt 2)", func(b *bolt.Bucket) error {
			v2 := append([]byte(nil), b.Get(store.U64(2))...)
			v3 := append([]byte(nil), b.Get(store.U64(3))...)
			if err := b.Put(store.U64(2), v3); err != nil {
				return err
			}
			return b.Put(store.U64(3), v2)
		}},
		{"truncate", "(truncated at receipt 4)", func(b *bolt.Bucket) error { return b.Delete(store.U64(4)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "accords.db")}
			seedAudit(t, vars, 3)
			db, err := store.Open(vars["ACCORDS_MCP_DB"], store.Options{})
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				return tc.tamper(tx.Bucket(store.BucketAudit).Bucket(receipts))
			}))
			require.NoError(t, db.Close())
			env, out, _ := gatewayEnv(vars, "")
			require.Equal(t, 1, run(context.Background(), env, []string{"audit", "verify"}))
			assert.Contains(t, out.String(), tc.want)
		})
	}
}

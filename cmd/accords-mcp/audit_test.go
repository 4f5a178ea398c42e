package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, db.Update(func(tx store.Tx) error {
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
	require.NoError(t, db.Update(func(tx store.Tx) error {
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
		tamper     func(b store.Bucket) error
	}{
		{"edit", "(altered at receipt 2)", func(b store.Bucket) error {
			v := append([]byte(nil), b.Get(store.U64(2))...)
			return b.Put(store.U64(2), bytes.Replace(v, []byte(`"outcome":"ok"`), []byte(`"outcome":"MCP_X"`), 1))
		}},
		{"delete", "(removed at receipt 2)", func(b store.Bucket) error { return b.Delete(store.U64(2)) }},
		{"reorder", "(reordered at receipt 2)", func(b store.Bucket) error {
			v2 := append([]byte(nil), b.Get(store.U64(2))...)
			v3 := append([]byte(nil), b.Get(store.U64(3))...)
			if err := b.Put(store.U64(2), v3); err != nil {
				return err
			}
			return b.Put(store.U64(3), v2)
		}},
		{"truncate", "(truncated at receipt 4)", func(b store.Bucket) error { return b.Delete(store.U64(4)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "accords.db")}
			seedAudit(t, vars, 3)
			db, err := store.Open(vars["ACCORDS_MCP_DB"], store.Options{})
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx store.Tx) error {
				return tc.tamper(tx.Bucket(store.BucketAudit).Bucket(receipts))
			}))
			require.NoError(t, db.Close())
			env, out, _ := gatewayEnv(vars, "")
			require.Equal(t, 1, run(context.Background(), env, []string{"audit", "verify"}))
			assert.Contains(t, out.String(), tc.want)
		})
	}
}

func runAuditCmd(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := gatewayEnv(vars, "")
	code := run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// TestAuditCommandsEndToEnd: the key, checkpoint, prove, export, offline
// verification, saved checkpoints and an acknowledgement, as an operator
// and an outside auditor would run them.
func TestAuditCommandsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "keys", "audit.key")
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "data", "accords.db"), "ACCORDS_MCP_AUDIT_KEY_FILE": keyFile}
	code, pub, _ := runAuditCmd(t, vars, "audit", "key")
	require.Equal(t, 0, code)
	pub = strings.TrimSpace(pub)
	assert.Regexp(t, `^accords-mcp-audit-[0-9a-f]{8}\+[0-9a-f]{8}\+\S+$`, pub)
	seedAudit(t, vars, 6)

	code, cp, _ := runAuditCmd(t, vars, "audit", "checkpoint")
	require.Equal(t, 0, code)
	assert.Contains(t, cp, "accords-mcp/audit/")
	assert.Contains(t, cp, "\n7\n", "the shutdown checkpoint covers all 7 receipts")
	saved := filepath.Join(t.TempDir(), "saved.cp")
	require.NoError(t, os.WriteFile(saved, []byte(cp), 0o600))

	code, proofJSON, _ := runAuditCmd(t, vars, "audit", "prove", "4")
	require.Equal(t, 0, code)
	var p audit.Proof
	require.NoError(t, json.Unmarshal([]byte(proofJSON), &p))
	v, err := audit.ParseVerifierKey(pub)
	require.NoError(t, err)
	_, err = audit.VerifyProof(p, v, "")
	require.NoError(t, err)
	code, tlog, _ := runAuditCmd(t, vars, "audit", "prove", "4", "--tlog")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(tlog, "c2sp.org/tlog-proof@v1\n"))
	code, _, errText := runAuditCmd(t, vars, "audit", "prove", "99")
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "newer than the newest checkpoint")

	// By call id: what a read call's result carries on replicas sharing
	// etcd (it has no receipt number).
	code, tailOut, _ := runAuditCmd(t, vars, "audit", "tail", "-n", "7", "--json")
	require.Equal(t, 0, code)
	var fourth audit.Receipt
	for line := range strings.SplitSeq(strings.TrimSpace(tailOut), "\n") {
		var r audit.Receipt
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r.Seq == 4 {
			fourth = r
		}
	}
	require.NotEmpty(t, fourth.CallID)
	code, proofJSON, _ = runAuditCmd(t, vars, "audit", "prove", "--call-id", fourth.CallID)
	require.Equal(t, 0, code)
	var byID audit.Proof
	require.NoError(t, json.Unmarshal([]byte(proofJSON), &byID))
	assert.Equal(t, p, byID, "the same receipt and proof as prove 4")
	code, one, _ := runAuditCmd(t, vars, "audit", "tail", "--call-id", fourth.CallID, "--json")
	require.Equal(t, 0, code)
	var found audit.Receipt
	require.NoError(t, json.Unmarshal([]byte(one), &found))
	assert.Equal(t, fourth, found)
	code, _, errText = runAuditCmd(t, vars, "audit", "prove", "--call-id", "call_nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, `no receipt with this call id "call_nope"`)
	code, _, errText = runAuditCmd(t, vars, "audit", "prove", "4", "--call-id", fourth.CallID)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errText, "not both")

	export := filepath.Join(t.TempDir(), "audit.ndjson")
	code, _, _ = runAuditCmd(t, vars, "audit", "export", "--out", export)
	require.Equal(t, 0, code)

	// The auditor: no database, no key file, only the export and the
	// public key.
	auditor := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "none.db"), "ACCORDS_MCP_AUDIT_KEY_FILE": filepath.Join(t.TempDir(), "absent.key")}
	code, out, errText := runAuditCmd(t, auditor, "audit", "verify", "--export", export, "--key", pub, "--checkpoint", saved)
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "audit chain OK: 7 receipts")
	assert.Contains(t, out, "saved checkpoints: 1 consistent")
	code, _, errText = runAuditCmd(t, auditor, "audit", "verify", "--export", export)
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "--key")

	// Tamper: move the head back over the last two receipts.
	db, err := store.Open(vars["ACCORDS_MCP_DB"], store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketAudit)
		rb := b.Bucket([]byte("receipts"))
		require.NoError(t, rb.Delete(store.U64(7)))
		require.NoError(t, rb.Delete(store.U64(6)))
		var five map[string]any
		require.NoError(t, json.Unmarshal(rb.Get(store.U64(5)), &five))
		head, _ := json.Marshal(map[string]any{"seq": 5, "hash": five["hash"]})
		require.NoError(t, b.Put([]byte("head"), head))
		cps := b.Bucket([]byte("checkpoints"))
		var doomed [][]byte
		c := cps.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			doomed = append(doomed, append([]byte(nil), k...))
		}
		for _, k := range doomed {
			require.NoError(t, cps.Delete(k))
		}
		return nil
	}))
	require.NoError(t, db.Close())
	code, out, _ = runAuditCmd(t, vars, "audit", "verify", "--checkpoint", saved)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "rolled_back")

	code, _, errText = runAuditCmd(t, vars, "audit", "acknowledge")
	assert.Equal(t, 2, code)
	assert.Contains(t, errText, "--note is required")
	code, out, errText = runAuditCmd(t, vars, "audit", "acknowledge", "--note", "restored from backup after disk failure", "--operator", "alice")
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "acknowledged:")
	code, out, _ = runAuditCmd(t, vars, "audit", "verify")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "acknowledged up to receipt")
	code, _, errText = runAuditCmd(t, vars, "audit", "acknowledge", "--note", "again")
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "nothing to acknowledge")

	code, _, _ = runAuditCmd(t, vars, "audit", "frobnicate")
	assert.Equal(t, 2, code)
}

func TestPolicyCheckAndTest(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(file, []byte(`
[[rules]]
id = "mail-inside"
tools = ["vaultclaw_connector_execute*"]
deny_if = 'args.request.connector_id == "google" && args.request.request.to.exists(t, email_domain(t) != "acme.example")'
message = "mail stays inside acme.example"
on_error = "allow"

[[rules]]
id = "plan-size"
tools = ["vaultclaw_plan_execute"]
deny_if = 'size(rendered.plan.steps) > 2'
`), 0o600))
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "a.db")}
	code, out, errText := runAuditCmd(t, vars, "policy", "check", file)
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "2 rules")
	assert.Contains(t, out, "rule plan-size: tools vaultclaw_plan_execute, evaluated when the request is rendered")

	args := `{"request":{"connector_id":"google","verb":"gmail.send","request":{"to":["x@evil.example"]}}}`
	code, out, _ = runAuditCmd(t, vars, "policy", "test", file, "--tool", "vaultclaw_connector_execute", "--args", args)
	assert.Equal(t, 1, code)
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, "deny", d["decision"])
	assert.Equal(t, "mail-inside", d["violated_rules"].([]any)[0].(map[string]any)["id"])
	code, out, _ = runAuditCmd(t, vars, "policy", "test", file, "--tool", "vaultclaw_connector_execute", "--args", strings.Replace(args, "evil", "acme", 1))
	assert.Equal(t, 0, code, out)
	code, out, _ = runAuditCmd(t, vars, "policy", "test", file, "--tool", "vaultclaw_plan_execute", "--args", `{}`,
		"--rendered", `{"plan":{"steps":[{},{},{}]}}`)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "plan-size")

	bad := filepath.Join(t.TempDir(), "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("[[rules]]\nid = \"x\"\ntools = [\"*\"]\ndeny_if = 'argz'\n"), 0o600))
	code, _, errText = runAuditCmd(t, vars, "policy", "check", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "line 4: rules[0] (x).deny_if")
	code, _, _ = runAuditCmd(t, vars, "policy", "test", file, "--tool", "nope")
	assert.Equal(t, 2, code)
}

package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

const simToken = "vc_tok_doctor_secret"

// opsVars is a fresh installation using the key file (not the env key), so
// key-file checks apply.
func opsVars(t *testing.T, extra ...string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "accords.db")}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return vars
}

func openApp(t *testing.T, vars map[string]string) *app.App {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	a, err := app.Open(cfg, nil)
	require.NoError(t, err)
	return a
}

// initialize creates the database and key file as a first start does.
func initialize(t *testing.T, vars map[string]string) {
	t.Helper()
	require.NoError(t, openApp(t, vars).Close())
}

func runDoctorCmd(t *testing.T, vars map[string]string) (int, string) {
	t.Helper()
	env, out, errb := opsEnv(vars, "")
	code := run(context.Background(), env, []string{"doctor"})
	return code, out.String() + errb.String()
}

// line returns the output line of one check.
func line(t *testing.T, out, check string) string {
	t.Helper()
	for l := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.HasPrefix(strings.TrimSpace(l[4:]), check) {
			return l
		}
	}
	t.Fatalf("no %q line in:\n%s", check, out)
	return ""
}

func TestDoctorHealthyInstallation(t *testing.T) {
	sim := httptest.NewServer(vaultsim.New(vaultsim.Options{AgentToken: simToken}))
	defer sim.Close()
	vars := opsVars(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL)
	initialize(t, vars)
	code, out := runDoctorCmd(t, vars)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "FAIL")
	for _, check := range []string{"db path", "db folder", "db file", "key file", "daemon", "schema version", "index", "audit chain", "vault"} {
		assert.True(t, strings.HasPrefix(line(t, out, check), "OK"), "%s: %s", check, out)
	}
	assert.Contains(t, line(t, out, "vault"), "HTTP 200")
	assert.NotContains(t, out, simToken, "the token is never printed")
	assert.Contains(t, out, "vc_***ret")
}

func TestDoctorBeforeFirstStart(t *testing.T) {
	vars := opsVars(t)
	code, out := runDoctorCmd(t, vars)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, line(t, out, "db path"), "created on first start")
	_, err := os.Stat(vars["ACCORDS_MCP_DB"])
	assert.True(t, os.IsNotExist(err), "doctor creates nothing")
	_, err = os.Stat(filepath.Join(filepath.Dir(vars["ACCORDS_MCP_DB"]), "accords.key"))
	assert.True(t, os.IsNotExist(err), "doctor creates no key file")
}

// TestDoctorReportsEachFault injects one fault per case into a healthy
// installation and expects exactly that check to FAIL, with a hint.
func TestDoctorReportsEachFault(t *testing.T) {
	sim := httptest.NewServer(vaultsim.New(vaultsim.Options{AgentToken: simToken}))
	defer sim.Close()
	cases := []struct {
		check  string
		want   string
		inject func(t *testing.T, vars map[string]string)
		env    []string
	}{
		{check: "db file", want: "0644", inject: func(t *testing.T, v map[string]string) {
			require.NoError(t, os.Chmod(v["ACCORDS_MCP_DB"], 0o644))
		}},
		{check: "db folder", want: "0755", inject: func(t *testing.T, v map[string]string) {
			require.NoError(t, os.Chmod(filepath.Dir(v["ACCORDS_MCP_DB"]), 0o755))
		}},
		{check: "key file", want: "0640", inject: func(t *testing.T, v map[string]string) {
			require.NoError(t, os.Chmod(filepath.Join(filepath.Dir(v["ACCORDS_MCP_DB"]), "accords.key"), 0o640))
		}},
		{check: "key file", want: "must be 32 bytes", inject: func(t *testing.T, v map[string]string) {
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(v["ACCORDS_MCP_DB"]), "accords.key"), []byte("nope\n"), 0o600))
		}},
		{check: "secret key", want: "must be 32 bytes", env: []string{"ACCORDS_MCP_SECRET_KEY=short"}},
		{check: "daemon", want: "does not answer", inject: func(t *testing.T, v map[string]string) {
			db, err := store.Open(v["ACCORDS_MCP_DB"], store.Options{}) // a holder without a control socket
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
		}},
		{check: "schema version", want: "newer", inject: func(t *testing.T, v map[string]string) {
			future := append(migrations.All(), migrations.Migration{Version: migrations.Latest() + 1, Name: "future", Apply: func(store.Tx) error { return nil }})
			db, err := store.Open(v["ACCORDS_MCP_DB"], store.Options{Migrations: future})
			require.NoError(t, err)
			require.NoError(t, db.Close())
			for _, bak := range globBak(t, v) {
				os.Remove(bak)
			}
		}},
		{check: "index", want: "rebuilds it on start", inject: func(t *testing.T, v map[string]string) {
			require.NoError(t, os.RemoveAll(v["ACCORDS_MCP_DB"]+".index"))
		}},
		{check: "index", want: "index is at catalog revision", inject: func(t *testing.T, v map[string]string) {
			// A write the index never saw: bump the store's revision.
			db, err := store.Open(v["ACCORDS_MCP_DB"], store.Options{})
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx store.Tx) error {
				c := tx.Bucket(store.BucketCatalog)
				cur := c.Get([]byte("rev"))
				require.Len(t, cur, 8)
				next := append([]byte{}, cur...)
				next[7]++
				return c.Put([]byte("rev"), next)
			}))
			require.NoError(t, db.Close())
		}},
		{check: "audit chain", want: "altered", inject: func(t *testing.T, v map[string]string) {
			db, err := bolt.Open(v["ACCORDS_MCP_DB"], 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(btx *bolt.Tx) error {
				tx := kv.BoltTx(btx)
				rs := tx.Bucket(store.BucketAudit).Bucket([]byte("receipts"))
				k, val := rs.Cursor().First()
				require.NotNil(t, k)
				return rs.Put(k, []byte(strings.Replace(string(val), `"outcome":"ok"`, `"outcome":"OK"`, 1)))
			}))
			require.NoError(t, db.Close())
		}},
		{check: "vault", want: "connection refused", inject: func(t *testing.T, v map[string]string) {
			configure(t, v, "http://127.0.0.1:1", simToken)
		}},
		{check: "vault", want: "HTTP 401", inject: func(t *testing.T, v map[string]string) {
			configure(t, v, sim.URL, "vc_tok_wrong_token")
		}},
		{check: "vault", want: "cannot be decrypted", inject: func(t *testing.T, v map[string]string) {
			// The session was sealed with the key file; another key is set.
			v["ACCORDS_MCP_SECRET_KEY"] = strings.Repeat("cd", 32)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.check+"/"+tc.want, func(t *testing.T) {
			vars := opsVars(t, "VC_AGENT_TOKEN="+simToken, "VC_BASE_URL="+sim.URL)
			seedCalls(t, vars, 2) // real tool calls, so the audit chain has receipts
			configure(t, vars, sim.URL, simToken)
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
			if tc.inject != nil {
				tc.inject(t, vars)
			}
			code, out := runDoctorCmd(t, vars)
			assert.Equal(t, 1, code, out)
			l := line(t, out, tc.check)
			assert.True(t, strings.HasPrefix(l, "FAIL"), l)
			assert.Contains(t, l, tc.want)
			assert.Contains(t, l, "hint:")
			assert.Equal(t, 1, strings.Count(out, "FAIL"), "only the injected fault fails:\n%s", out)
			assert.NotContains(t, out, simToken)
		})
	}
}

// configure stores the default scope's session as vaultclaw_session_configure does.
func configure(t *testing.T, vars map[string]string, baseURL, token string) {
	t.Helper()
	a := openApp(t, vars)
	_, err := a.Sessions.Configure(context.Background(), "default", baseURL, token, 2000)
	require.NoError(t, err)
	require.NoError(t, a.Close())
}

func globBak(t *testing.T, v map[string]string) []string {
	m, err := filepath.Glob(v["ACCORDS_MCP_DB"] + ".pre-*.bak")
	require.NoError(t, err)
	return m
}

// opsEnv is a command environment reading vars, with captured output.
func opsEnv(vars map[string]string, stdin string) (*environment, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &environment{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] },
	}, &out, &errb
}

// seedCalls makes n real tool calls through the app's MCP server (gateway
// included), so the audit log holds genuine receipts.
func seedCalls(t *testing.T, vars map[string]string, n int) {
	t.Helper()
	a := openApp(t, vars)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	for range n {
		mcptest.Call(t, cs, "vaultclaw_session_status", nil)
	}
	_ = cs.Close()
	require.NoError(t, a.Close())
}

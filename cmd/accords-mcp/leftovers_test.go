package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKilledRestoreLeavesNothingBehind: a restore killed while it copies
// the backup left its staging copy (34 MB in the report) beside the
// database for good. doctor now reports it, and the next start removes it.
func TestKilledRestoreLeavesNothingBehind(t *testing.T) {
	vars := opsVars(t)
	initialize(t, vars)
	dir := filepath.Dir(vars["ACCORDS_MCP_DB"])

	cmd := exec.Command(binary(t), "restore", "-")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_, err = stdin.Write(make([]byte, 1<<20)) // the backup arrives slowly
	require.NoError(t, err)
	var stage string
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, ".accords.db.restore-*"))
		if len(m) == 1 {
			fi, err := os.Stat(m[0])
			if err == nil && fi.Size() > 0 {
				stage = m[0]
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "restore stages its copy")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	stdin.Close()
	_, err = os.Stat(stage)
	require.NoError(t, err, "the kill left the staging copy")

	code, out := runDoctorCmd(t, vars)
	assert.Equal(t, 1, code)
	l := line(t, out, "leftovers")
	assert.Contains(t, l, "FAIL")
	assert.Contains(t, l, "1 temporary file(s)")
	assert.Contains(t, l, stage)

	// A backup killed while writing beside the database: its name carries
	// a process that no longer exists.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	tmp := filepath.Join(dir, ".nightly.db.tmp-"+strconv.Itoa(dead.Process.Pid)+"-0123456789ab")
	require.NoError(t, os.WriteFile(tmp, []byte("partial"), 0o600))
	// And one in use by a running process (this test) is left alone.
	inUse := filepath.Join(dir, ".other.db.tmp-"+strconv.Itoa(os.Getpid())+"-0123456789ab")
	require.NoError(t, os.WriteFile(inUse, []byte("busy"), 0o600))

	a := openApp(t, vars) // the next start
	require.NoError(t, a.Close())
	for _, p := range []string{stage, tmp} {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "%s is removed at the next start", p)
	}
	_, err = os.Stat(inUse)
	assert.NoError(t, err, "a file of a live process stays")
	require.NoError(t, os.Remove(inUse))
	_, out = runDoctorCmd(t, vars)
	assert.Contains(t, line(t, out, "leftovers"), "OK")
}

// TestMissingKeyFileWithSealedSessionsIsRefused: a lost key file used to be
// replaced silently by a new key, and every stored session failed later.
// The server now refuses to start and says how to recover; doctor says the
// same and can forget the unreadable sessions.
func TestMissingKeyFileWithSealedSessionsIsRefused(t *testing.T) {
	vars := opsVars(t)
	a := openApp(t, vars)
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	require.True(t, mcptest.Call(t, cs, "vaultclaw_session_configure", map[string]any{"token": "vc_tok_lost_key_1"}).OK)
	require.NoError(t, cs.Close())
	require.NoError(t, a.Close())
	keyFile := filepath.Join(filepath.Dir(vars["ACCORDS_MCP_DB"]), "accords.key")
	require.NoError(t, os.Remove(keyFile))

	env, _, errb := opsEnv(vars, "")
	env.stdin = strings.NewReader("")
	code := run(context.Background(), env, []string{"serve", "--standalone"})
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "key file")
	assert.Contains(t, errb.String(), "1 stored session(s) are sealed with it")
	assert.Contains(t, errb.String(), "--forget-sealed-sessions")
	_, err := os.Stat(keyFile)
	assert.True(t, os.IsNotExist(err), "no new key was made silently")

	code, out := runDoctorCmd(t, vars)
	assert.Equal(t, 1, code)
	kl := line(t, out, "key file")
	assert.Contains(t, kl, "FAIL")
	assert.Contains(t, kl, "ACCORDS_MCP_SECRET_KEY")

	_, stdout, stderr := runCmd(t, vars, "doctor", "--forget-sealed-sessions")
	assert.Contains(t, stdout, "forgot 1 session(s)", stderr)
	a = openApp(t, vars) // starts again, with a new key file
	cs = mcptest.Connect(t, a.MCPServer(), nil)
	assert.Equal(t, false, mcptest.RequireOK(t, mcptest.Call(t, cs, "vaultclaw_session_status", nil))["configured"])
	require.NoError(t, cs.Close())
	require.NoError(t, a.Close())
}

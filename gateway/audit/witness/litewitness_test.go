//go:build witness

package witness

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

// litewitnessVersion is the torchwood release built by the test: the
// newest whose go.mod this toolchain builds.
const litewitnessVersion = "v0.6.1"

// realWitness is a litewitness on loopback with its key in a dedicated
// ssh-agent, as its README runs it.
type realWitness struct {
	dir, bin, db, sock, fpr, url, vkey string
	name                               string
	proc                               *exec.Cmd
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

func startRealWitness(t *testing.T) *realWitness {
	for _, tool := range []string{"go", "ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run litewitness: %v", tool, err)
		}
	}
	w := &realWitness{dir: t.TempDir(), name: "witness.test/litewitness"}
	bin := filepath.Join(w.dir, "bin")
	install := exec.Command("go", "install",
		"filippo.io/torchwood/cmd/litewitness@"+litewitnessVersion, "filippo.io/torchwood/cmd/witnessctl@"+litewitnessVersion)
	install.Dir = w.dir // outside this module
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	out, err := install.CombinedOutput()
	require.NoError(t, err, "building litewitness: %s", out)
	w.bin, w.db, w.sock = bin, filepath.Join(w.dir, "witness.db"), filepath.Join(w.dir, "agent.sock")

	keyFile := filepath.Join(w.dir, "witness_key")
	run(t, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "witness", "-f", keyFile)
	agent := exec.Command("ssh-agent", "-D", "-a", w.sock)
	require.NoError(t, agent.Start())
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(w.sock); return err == nil }, 10*time.Second, 20*time.Millisecond)
	run(t, []string{"SSH_AUTH_SOCK=" + w.sock}, "ssh-add", "-q", keyFile)
	w.fpr = strings.Fields(run(t, nil, "ssh-keygen", "-l", "-E", "sha256", "-f", keyFile+".pub"))[1]

	// The cosignature/v1 verifier key, from the OpenSSH public key: its
	// blob ends with the 32-byte Ed25519 key.
	pubLine, err := os.ReadFile(keyFile + ".pub")
	require.NoError(t, err)
	blob, err := base64.StdEncoding.DecodeString(strings.Fields(string(pubLine))[1])
	require.NoError(t, err)
	pub := append([]byte{algCosignatureV1}, blob[len(blob)-32:]...)
	w.vkey = fmt.Sprintf("%s+%08x+%s", w.name, keyHash(w.name, pub), base64.StdEncoding.EncodeToString(pub))
	return w
}

func (w *realWitness) addLog(t *testing.T, origin, logVKey string) {
	ctl := filepath.Join(w.bin, "witnessctl")
	run(t, nil, ctl, "add-log", "-db", w.db, "-origin", origin)
	run(t, nil, ctl, "add-key", "-db", w.db, "-origin", origin, "-key", logVKey)
}

func (w *realWitness) start(t *testing.T) {
	if w.url == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		w.url = "http://" + ln.Addr().String()
		require.NoError(t, ln.Close())
	}
	w.proc = exec.Command(filepath.Join(w.bin, "litewitness"), "-db", w.db, "-name", w.name,
		"-key", w.fpr, "-ssh-agent", w.sock, "-listen", strings.TrimPrefix(w.url, "http://"))
	var logs bytes.Buffer
	w.proc.Stdout, w.proc.Stderr = &logs, &logs
	require.NoError(t, w.proc.Start())
	t.Cleanup(w.stop)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(w.url, "http://"))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "litewitness did not listen: %s", &logs)
}

func (w *realWitness) stop() {
	if w.proc != nil && w.proc.Process != nil {
		_ = w.proc.Process.Kill()
		_ = w.proc.Wait()
		w.proc = nil
	}
}

func (w *realWitness) witness(t *testing.T) Witness {
	ws, err := Parse(w.vkey + " " + w.url)
	require.NoError(t, err)
	return ws[0]
}

// TestLitewitness runs the log against torchwood's litewitness: checkpoints
// are cosigned (consistency proofs accepted), the cosignature verifies
// under the policy, a forked copy of the database signed with the same key
// is refused, and a stopped witness only delays its cosignature.
func TestLitewitness(t *testing.T) {
	rw := startRealWitness(t)
	key := testKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	db := openDB(t, path)
	l, err := audit.Open(db, audit.Options{Key: key})
	require.NoError(t, err)
	origin := l.Origin()
	require.NoError(t, l.Close())
	rw.addLog(t, origin, key.VerifierKey)
	rw.start(t)

	opts := func(db *store.DB) audit.Options {
		return audit.Options{Key: key, Witnesses: []audit.Anchor{NewSubmitter(db, rw.witness(t), nil)}}
	}
	l, err = audit.Open(db, opts(db))
	require.NoError(t, err)
	grow(t, l, 1, 3)
	st := waitState(t, db, rw.url, 3)
	require.Empty(t, st.Error)
	grow(t, l, 4, 4)
	st = waitState(t, db, rw.url, 7)
	require.Empty(t, st.Error, "consistency proof 3 -> 7 accepted")
	require.Equal(t, uint64(7), st.Cosigned)
	require.NoError(t, l.Close())

	policy := fmt.Sprintf("log %s\nwitness lite %s %s\nquorum lite\n", key.VerifierKey, rw.vkey, rw.url)
	pol, err := ParsePolicy([]byte(policy))
	require.NoError(t, err)
	p, err := audit.Prove(db, 5)
	require.NoError(t, err)
	v, err := pol.Check([]byte(p.Checkpoint), nil)
	require.NoError(t, err, p.Checkpoint)
	require.Equal(t, []string{"lite"}, v.Cosigners)

	// Fork: a copy of the database grows with other receipts.
	require.NoError(t, db.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	forkPath := filepath.Join(dir, "fork.db")
	require.NoError(t, os.WriteFile(forkPath, raw, 0o600))
	db = openDB(t, path)
	defer db.Close()
	l, err = audit.Open(db, opts(db))
	require.NoError(t, err)
	grow(t, l, 8, 2)
	require.Empty(t, waitState(t, db, rw.url, 9).Error)
	require.NoError(t, l.Close())

	fdb := openDB(t, forkPath)
	defer fdb.Close()
	fl, err := audit.Open(fdb, opts(fdb))
	require.NoError(t, err)
	grow(t, fl, 108, 4) // receipts 8..11 differ from the original's 8..9
	st = waitState(t, fdb, rw.url, 11)
	require.Contains(t, st.Error, "422", "litewitness refuses the fork's consistency proof")
	require.NoError(t, fl.Close())
	cp, err := audit.NewestCheckpoint(fdb)
	require.NoError(t, err)
	_, err = pol.Check(cp, nil)
	require.ErrorIs(t, err, ErrQuorum)

	// A stopped witness: appends go on, the state says unreachable; once
	// it is back the next checkpoint is cosigned.
	rw.stop()
	l, err = audit.Open(db, opts(db))
	require.NoError(t, err)
	start := time.Now()
	grow(t, l, 10, 2)
	require.Less(t, time.Since(start), 2*time.Second)
	st = waitState(t, db, rw.url, 11)
	require.Contains(t, st.Error, "unreachable")
	rw.start(t)
	grow(t, l, 12, 1)
	st = waitState(t, db, rw.url, 12)
	require.Empty(t, st.Error)
	require.Equal(t, uint64(12), st.Cosigned)
	require.NoError(t, l.Close())
}

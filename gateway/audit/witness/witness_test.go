package witness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

func testKey(t testing.TB) *audit.Key {
	k, err := audit.NewKey(make([]byte, audit.KeySize), "test")
	require.NoError(t, err)
	return k
}

func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	return db
}

func receipt(i int) audit.Receipt {
	return audit.Receipt{CallID: fmt.Sprintf("call_%d", i), Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Caller: "local", Transport: "stdio", Scope: "default", Tool: "tool", CapabilityUsed: "vault_read",
		ParamsHash: "hmac-sha256:00", ResultHash: "hmac-sha256:11", Outcome: audit.OutcomeOK}
}

// grow appends n receipts and signs a checkpoint.
func grow(t *testing.T, l *audit.Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, err := l.AppendSync(receipt(i))
		require.NoError(t, err)
	}
	require.NoError(t, l.Checkpoint())
	require.NoError(t, l.Flush())
}

// waitState waits until the witness at url has a state for size.
func waitState(t *testing.T, db *store.DB, url string, size uint64) audit.WitnessState {
	t.Helper()
	var st audit.WitnessState
	require.Eventually(t, func() bool {
		states, err := audit.WitnessStates(db)
		require.NoError(t, err)
		for _, s := range states {
			if s.URL == url && s.Submitted >= size {
				st = s
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond)
	return st
}

func policyFor(key *audit.Key, quorum string, ws ...*fakeWitness) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# test policy\nlog %s\n", key.VerifierKey)
	var names []string
	for _, w := range ws {
		fmt.Fprintf(&b, "witness %s %s %s\n", w.name, w.vkey, w.srv.URL)
		names = append(names, w.name)
	}
	if len(ws) > 1 {
		fmt.Fprintf(&b, "group all-of-them all %s\n", strings.Join(names, " "))
	}
	fmt.Fprintf(&b, "quorum %s\n", quorum)
	return []byte(b.String())
}

func TestCheckpointsAreCosignedAndMeetThePolicy(t *testing.T) {
	key := testKey(t)
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	w1 := newFakeWitness(t, "witness.example/one", key.Verifier())
	w2 := newFakeWitness(t, "witness.example/two", key.Verifier())
	l, err := audit.Open(db, audit.Options{Key: key, Witnesses: []audit.Anchor{NewSubmitter(db, w1.witness(t), nil)}})
	require.NoError(t, err)
	defer l.Close()
	grow(t, l, 1, 3)
	st := waitState(t, db, w1.srv.URL, 3)
	require.Empty(t, st.Error)
	require.Equal(t, uint64(3), st.Cosigned)
	grow(t, l, 4, 5) // consistency proof from 3 to 8
	st = waitState(t, db, w1.srv.URL, 8)
	require.Empty(t, st.Error)
	size, _ := w1.state()
	require.Equal(t, int64(8), size)

	p, err := audit.Prove(db, 2)
	require.NoError(t, err)
	require.Contains(t, p.Checkpoint, "— witness.example/one ")
	require.Contains(t, p.TLogProof, "— witness.example/one ")
	// The project's own verifier still opens the cosigned checkpoint.
	_, err = audit.VerifyProof(p, key.Verifier(), "")
	require.NoError(t, err)

	pol, err := ParsePolicy(policyFor(key, "witness.example/one", w1, w2))
	require.NoError(t, err)
	v, err := pol.Check([]byte(p.Checkpoint), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"witness.example/one"}, v.Cosigners)

	pol, err = ParsePolicy(policyFor(key, "all-of-them", w1, w2))
	require.NoError(t, err)
	_, err = pol.Check([]byte(p.Checkpoint), nil)
	require.ErrorIs(t, err, ErrQuorum)

	// A checkpoint signed by another key fails whatever the quorum.
	other, err := audit.NewKey(append(make([]byte, audit.KeySize-1), 1), "other")
	require.NoError(t, err)
	pol, err = ParsePolicy(policyFor(other, "none"))
	require.NoError(t, err)
	_, err = pol.Check([]byte(p.Checkpoint), nil)
	require.Error(t, err)
}

func TestConflictResumesFromTheWitnessSize(t *testing.T) {
	key := testKey(t)
	dir := t.TempDir()
	db := openDB(t, filepath.Join(dir, "a.db"))
	defer db.Close()
	w := newFakeWitness(t, "witness.example/c", key.Verifier())
	l, err := audit.Open(db, audit.Options{Key: key, Witnesses: []audit.Anchor{NewSubmitter(db, w.witness(t), nil)}})
	require.NoError(t, err)
	grow(t, l, 1, 4)
	waitState(t, db, w.srv.URL, 4)
	require.NoError(t, l.Close())
	// Forget what the witness cosigned: the next submission says old 0,
	// gets 409 with size 4, and retries with a proof from 4.
	require.NoError(t, audit.SaveWitnessState(db, audit.WitnessState{Name: w.name, URL: w.srv.URL}))
	l, err = audit.Open(db, audit.Options{Key: key, Witnesses: []audit.Anchor{NewSubmitter(db, w.witness(t), nil)}})
	require.NoError(t, err)
	defer l.Close()
	grow(t, l, 5, 2)
	st := waitState(t, db, w.srv.URL, 6)
	require.Empty(t, st.Error)
	require.Equal(t, uint64(6), st.Cosigned)
}

func TestRefusalsAndAnUnreachableWitnessDelayNothing(t *testing.T) {
	key := testKey(t)
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	refusing := newFakeWitness(t, "witness.example/r", key.Verifier())
	refusing.force = 403
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	hang := newFakeWitness(t, "witness.example/h", key.Verifier())
	hang.mu.Lock() // every request waits until the test ends
	t.Cleanup(hang.mu.Unlock)
	deadW := refusing.witness(t)
	deadW.URL = dead
	hangSub := NewSubmitter(db, hang.witness(t), nil)
	hangSub.client.Timeout = 8 * time.Second
	var outcomes []string
	var omu = make(chan struct{}, 1)
	omu <- struct{}{}
	l, err := audit.Open(db, audit.Options{Key: key,
		Witnesses: []audit.Anchor{NewSubmitter(db, refusing.witness(t), nil), NewSubmitter(db, deadW, nil), hangSub},
		OnAnchor: func(target string, err error) {
			<-omu
			outcomes = append(outcomes, fmt.Sprint(target, " ", err))
			omu <- struct{}{}
		}})
	require.NoError(t, err)
	start := time.Now()
	grow(t, l, 1, 3)
	require.Less(t, time.Since(start), 6*time.Second, "appends and signing do not wait for the hung witness (8 s)")
	st := waitState(t, db, refusing.srv.URL, 3)
	require.Contains(t, st.Error, "403")
	require.Zero(t, st.Cosigned)
	st = waitState(t, db, dead, 3)
	require.Contains(t, st.Error, "unreachable")
	st = waitState(t, db, hang.srv.URL, 3)
	require.Contains(t, st.Error, "unreachable")
	require.NoError(t, l.Close())
	p, err := audit.Prove(db, 1)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(p.Checkpoint, "— "), "no cosignature was kept")
}

// TestForkIsRefusedByTheWitness: an operator holding the key copies the
// database, lets the original grow under witnessing, then grows the copy
// with other receipts. Same origin, same key, validly signed checkpoints:
// the witness refuses the copy's, so the fork never meets a quorum.
func TestForkIsRefusedByTheWitness(t *testing.T) {
	key := testKey(t)
	dir := t.TempDir()
	orig := filepath.Join(dir, "a.db")
	db := openDB(t, orig)
	w := newFakeWitness(t, "witness.example/f", key.Verifier())
	opts := func(db *store.DB) audit.Options {
		return audit.Options{Key: key, Witnesses: []audit.Anchor{NewSubmitter(db, w.witness(t), nil)}}
	}
	l, err := audit.Open(db, opts(db))
	require.NoError(t, err)
	grow(t, l, 1, 2)
	waitState(t, db, w.srv.URL, 2)
	require.NoError(t, l.Close())
	require.NoError(t, db.Close())
	raw, err := os.ReadFile(orig)
	require.NoError(t, err)
	forkPath := filepath.Join(dir, "fork.db")
	require.NoError(t, os.WriteFile(forkPath, raw, 0o600))

	db = openDB(t, orig)
	defer db.Close()
	l, err = audit.Open(db, opts(db))
	require.NoError(t, err)
	grow(t, l, 3, 2)
	require.Empty(t, waitState(t, db, w.srv.URL, 4).Error)
	require.NoError(t, l.Close())

	fdb := openDB(t, forkPath)
	defer fdb.Close()
	fl, err := audit.Open(fdb, opts(fdb))
	require.NoError(t, err)
	grow(t, fl, 103, 2) // other receipts 3 and 4
	st := waitState(t, fdb, w.srv.URL, 4)
	require.ErrorContains(t, fmt.Errorf("%s", st.Error), "422")
	grow(t, fl, 105, 3) // and beyond: still not consistent with what it saw
	st = waitState(t, fdb, w.srv.URL, 7)
	require.Contains(t, st.Error, "422")
	require.NoError(t, fl.Close())

	pol, err := ParsePolicy(policyFor(key, w.name, w))
	require.NoError(t, err)
	cp, err := audit.NewestCheckpoint(fdb)
	require.NoError(t, err)
	_, err = pol.Check(cp, nil)
	require.ErrorIs(t, err, ErrQuorum, "the fork's checkpoints carry no cosignature")
	good, err := audit.NewestCheckpoint(db)
	require.NoError(t, err)
	_, err = pol.Check(good, nil)
	require.NoError(t, err)
}

func TestParse(t *testing.T) {
	key := testKey(t)
	w := newFakeWitness(t, "witness.example/p", key.Verifier())
	ws, err := Parse(" " + w.vkey + " " + w.srv.URL + "/ ,\n" + "https://b.example/w " + w.vkey + "x")
	require.Error(t, err) // a mangled key
	require.Nil(t, ws)
	ws, err = Parse(w.vkey + " " + w.srv.URL + "/;https://b.example/w " + w.vkey)
	require.NoError(t, err)
	require.Len(t, ws, 2)
	require.Equal(t, w.srv.URL, ws[0].URL)
	require.Equal(t, "witness.example/p", ws[1].Name())
	for _, bad := range []string{"onlyonefield", w.vkey + " ftp://x", w.vkey + " http://a," + w.vkey + " http://a"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
	}
	ws, err = Parse("  ")
	require.NoError(t, err)
	require.Empty(t, ws)
}

func TestParsePolicyRejects(t *testing.T) {
	key := testKey(t)
	w := newFakeWitness(t, "w1", key.Verifier())
	for name, text := range map[string]string{
		"no quorum":        "log " + key.VerifierKey + "\n",
		"undefined quorum": "quorum w9\n",
		"two quorums":      "quorum none\nquorum none\n",
		"bad threshold":    "witness w1 " + w.vkey + "\ngroup g 2 w1\nquorum g\n",
		"forward member":   "group g any w1\nwitness w1 " + w.vkey + "\nquorum g\n",
		"duplicate key":    "witness w1 " + w.vkey + "\nwitness w2 " + w.vkey + "\nquorum w1\n",
		"unknown keyword":  "monitor x\nquorum none\n",
		"member twice":     "witness w1 " + w.vkey + "\ngroup g any w1 w1\nquorum g\n",
	} {
		_, err := ParsePolicy([]byte(text))
		require.Error(t, err, name)
	}
	p, err := ParsePolicy([]byte("\t# c\n\nlog " + key.VerifierKey + " https://log.example\nwitness w1 " + w.vkey + "\ngroup g any w1\nquorum g\n"))
	require.NoError(t, err)
	require.Len(t, p.Logs, 1)
}

package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/compact"
)

// The holder of the data folder, without the key: every tamper below is made
// by writing the bbolt file directly, with the full knowledge of the format
// (re-chaining, rebuilding the tree, signing with a key of their own).

type tamperFixture struct {
	db      *store.DB
	key     *Key
	keyFile string
	dataDir string
	// saved is the newest checkpoint as an outside party recorded it
	// before the tamper (an anchor file, a copy of `audit checkpoint`).
	saved []byte
}

// newTamperFixture writes n receipts with a checkpoint every 4, closes the
// log (a final checkpoint) and keeps the key file outside the data folder.
func newTamperFixture(t *testing.T, n int) *tamperFixture {
	t.Helper()
	root := t.TempDir()
	f := &tamperFixture{dataDir: filepath.Join(root, "data"), keyFile: filepath.Join(root, "keys", "audit.key")}
	var err error
	f.key, err = LoadKey(KeySpec{File: f.keyFile, DataDir: f.dataDir}, true)
	require.NoError(t, err)
	f.db, err = store.Open(filepath.Join(f.dataDir, "accords.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { f.db.Close() })
	l, err := Open(f.db, Options{Key: f.key, Cadence: Cadence{Every: 4}})
	require.NoError(t, err)
	for i := 1; i <= n; i++ {
		appendOK(t, l, receipt(i, "default", time.Now()))
		require.NoError(t, l.Flush())
	}
	require.NoError(t, l.Close())
	f.saved, err = NewestCheckpoint(f.db)
	require.NoError(t, err)
	entries, err := os.ReadDir(f.dataDir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), "key", "the signing key must not be in the data folder")
	}
	return f
}

func (f *tamperFixture) verify(t *testing.T, saved ...[]byte) Report {
	t.Helper()
	pub, err := ParseVerifierKey(f.key.VerifierKey)
	require.NoError(t, err)
	rep, err := Verify(f.db, VerifyOptions{Verifier: pub, Saved: saved})
	require.NoError(t, err)
	return rep
}

func (f *tamperFixture) update(t *testing.T, fn func(b buckets)) {
	t.Helper()
	require.NoError(t, f.db.Update(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		require.NoError(t, err)
		fn(b)
		return nil
	}))
}

func (f *tamperFixture) receipts(t *testing.T) []Receipt {
	var out []Receipt
	f.update(t, func(b buckets) {
		c := b.receipts.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var r Receipt
			require.NoError(t, json.Unmarshal(v, &r))
			out = append(out, r)
		}
	})
	return out
}

// rewrite replaces the whole log with rs, renumbered from 1, re-chained,
// with a rebuilt tree and head, exactly as the server would have written
// it. Checkpoints are left alone unless dropCheckpoints.
func (f *tamperFixture) rewrite(t *testing.T, rs []Receipt, dropCheckpoints bool) {
	t.Helper()
	f.update(t, func(b buckets) {
		clear := func(bk store.Bucket) {
			var keys [][]byte
			c := bk.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				keys = append(keys, append([]byte(nil), k...))
			}
			for _, k := range keys {
				require.NoError(t, bk.Delete(k))
			}
		}
		clear(b.receipts)
		clear(b.tree)
		if dropCheckpoints {
			clear(b.checkpoints)
		}
		prev := Genesis
		rng := factory.NewEmptyRange(0)
		var head Head
		for i, r := range rs {
			r.Seq, r.PrevHash, r.Hash = uint64(i+1), prev, ""
			raw, err := seal(&r)
			require.NoError(t, err)
			require.NoError(t, b.receipts.Put(store.U64(r.Seq), raw))
			require.NoError(t, rng.Append(LeafHash(raw), func(id compact.NodeID, h []byte) {
				require.NoError(t, b.tree.Put(store.U64(nodeKey(id)), h))
			}))
			prev = r.Hash
			head = Head{Seq: r.Seq, Hash: r.Hash, Timestamp: r.Timestamp}
		}
		if len(rs) == 0 {
			require.NoError(t, b.root.Delete(keyHead))
		} else {
			require.NoError(t, store.PutJSON(b.root, keyHead, head))
		}
	})
}

// TestVerifyDetectsTamperingTheChainAloneMissed covers the six kinds a
// hash chain with a head cannot see (the other six are in
// TestVerifyDetectsEachKindOfTampering).
func TestVerifyDetectsTamperingTheChainAloneMissed(t *testing.T) {
	cases := []struct {
		name      string
		tamper    func(t *testing.T, f *tamperFixture)
		withSaved bool
		kind      string
	}{
		{"truncation with the head moved back", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			f.rewrite(t, rs[:7], false)
		}, false, ProblemTruncated},
		{"truncation with the head moved back and the newer checkpoints deleted", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			f.rewrite(t, rs[:7], false)
			f.update(t, func(b buckets) {
				for s := uint64(8); s <= 10; s++ {
					_ = b.checkpoints.Delete(store.U64(s))
				}
			})
		}, true, ProblemRolledBack},
		{"a middle receipt deleted and the rest re-chained", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			f.rewrite(t, append(rs[:1:1], rs[2:]...), false)
		}, false, ProblemRewritten},
		{"a middle receipt deleted, re-chained, checkpoints deleted", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			f.rewrite(t, append(rs[:4:4], rs[5:]...), true)
		}, true, ProblemRolledBack},
		{"two receipts reordered and re-chained", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			rs[2], rs[6] = rs[6], rs[2]
			f.rewrite(t, rs, false)
		}, false, ProblemRewritten},
		{"reordered, re-chained, checkpoints deleted", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			rs[2], rs[6] = rs[6], rs[2]
			f.rewrite(t, rs, true)
		}, true, ProblemRewritten},
		{"a full rewrite re-signed with another key", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			for i := range rs {
				rs[i].Tool, rs[i].Outcome = "vaultclaw_session_status", OutcomeOK
			}
			f.rewrite(t, rs, true)
			forger, err := NewKey(bytes.Repeat([]byte{7}, KeySize), "forger")
			require.NoError(t, err)
			f.update(t, func(b buckets) {
				rng, err := loadRange(b.tree, uint64(len(rs)))
				require.NoError(t, err)
				var info logInfo
				_, err = store.GetJSON(b.root, keyLog, &info)
				require.NoError(t, err)
				cp, err := signCheckpoint(forger, info.Origin, rng.End(), rootOf(rng))
				require.NoError(t, err)
				require.NoError(t, b.checkpoints.Put(store.U64(cp.Size), cp.Note))
			})
		}, false, ProblemForged},
		{"a full rewrite with the signatures removed", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			for i := range rs {
				rs[i].Caller = "someone-else"
			}
			f.rewrite(t, rs, true)
		}, false, ProblemUnsigned},
		{"every receipt deleted", func(t *testing.T, f *tamperFixture) {
			f.rewrite(t, nil, false)
		}, false, ProblemTruncated},
		{"every receipt deleted with the whole signed history", func(t *testing.T, f *tamperFixture) {
			f.rewrite(t, nil, true)
			f.update(t, func(b buckets) {
				require.NoError(t, b.root.Delete(keyLog))
			})
		}, true, ProblemRolledBack},
		{"the oldest deleted behind a forged retention checkpoint", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			f.update(t, func(b buckets) {
				for s := uint64(1); s <= 3; s++ {
					require.NoError(t, b.receipts.Delete(store.U64(s)))
				}
				// The record an older accords-mcp trusted.
				require.NoError(t, store.PutJSON(b.root, keyLegacyCheckpoint, legacyCheckpoint{Seq: 3, Hash: rs[2].Hash}))
			})
		}, false, ProblemRemoved},
		{"the oldest deleted behind a retention base signed with another key", func(t *testing.T, f *tamperFixture) {
			rs := f.receipts(t)
			forger, err := NewKey(bytes.Repeat([]byte{9}, KeySize), "forger")
			require.NoError(t, err)
			f.update(t, func(b buckets) {
				var info logInfo
				_, err := store.GetJSON(b.root, keyLog, &info)
				require.NoError(t, err)
				rng, err := loadRange(b.tree, 3)
				require.NoError(t, err)
				base, err := signBase(forger, Base{Origin: info.Origin, Kind: BaseRetention, Size: 3, Root: rootOf(rng), Chain: rs[2].Hash, Time: time.Now()})
				require.NoError(t, err)
				require.NoError(t, b.bases.Put(store.U64(3), base.Signed))
				for s := uint64(1); s <= 3; s++ {
					require.NoError(t, b.receipts.Delete(store.U64(s)))
				}
			})
		}, false, ProblemForged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newTamperFixture(t, 10)
			before := f.verify(t, f.saved)
			require.True(t, before.OK, "%+v", before.Problem)
			require.Equal(t, uint64(10), before.Newest.Size)

			tc.tamper(t, f)
			var rep Report
			if tc.withSaved {
				rep = f.verify(t, f.saved)
			} else {
				rep = f.verify(t)
			}
			require.False(t, rep.OK, "tamper %q not detected: %+v", tc.name, rep)
			assert.Equal(t, tc.kind, rep.Problem.Kind, rep.Problem.Message)

			// Start-up sees it too (the stretch covers this small log):
			// write tools would be refused, nothing more is signed.
			l, err := Open(f.db, Options{Key: f.key})
			require.NoError(t, err)
			if !tc.withSaved {
				require.NotNil(t, integrity(t, l), "start-up check missed %q", tc.name)
			}
			require.NoError(t, l.Close())
		})
	}
}

func TestAcknowledgeLiftsABreakAndVerificationGoesOn(t *testing.T) {
	f := newTamperFixture(t, 10)
	f.update(t, func(b buckets) {
		raw := append([]byte(nil), b.receipts.Get(store.U64(4))...)
		require.NoError(t, b.receipts.Put(store.U64(4), []byte(strings.Replace(string(raw), `"outcome":"ok"`, `"outcome":"MCP_INTERNAL"`, 1))))
	})
	l, err := Open(f.db, Options{Key: f.key, Cadence: Cadence{Every: 4}})
	require.NoError(t, err)
	p := integrity(t, l)
	require.NotNil(t, p)
	assert.Equal(t, ProblemAltered, p.Kind)
	before, err := NewestCheckpoint(f.db)
	require.NoError(t, err)
	appendOK(t, l, receipt(11, "default", time.Now()))
	require.NoError(t, l.Flush())
	after, err := NewestCheckpoint(f.db)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing is signed over a broken log")

	// It survives a restart until acknowledged.
	require.NoError(t, l.Close())
	l, err = Open(f.db, Options{Key: f.key, Cadence: Cadence{Every: 4}})
	require.NoError(t, err)
	require.NotNil(t, integrity(t, l))
	ref, err := l.Acknowledge("alice", "restored from the incident ticket 42", p)
	require.NoError(t, err)
	assert.Nil(t, integrity(t, l))
	assert.Equal(t, uint64(12), ref.Seq)
	for i := 13; i <= 20; i++ {
		appendOK(t, l, receipt(i, "default", time.Now()))
	}
	require.NoError(t, l.Close())

	rep := f.verify(t)
	require.True(t, rep.OK, "%+v", rep.Problem)
	require.Len(t, rep.Acknowledged, 1)
	assert.Contains(t, rep.Acknowledged[0].Note, "receipt 4")
	assert.Equal(t, uint64(20), rep.TreeSize)
	all, err := List(f.db, Filter{Limit: 100})
	require.NoError(t, err)
	var ack *Receipt
	for i := range all {
		if all[i].Type == TypeAcknowledgement {
			ack = &all[i]
		}
	}
	require.NotNil(t, ack, "the acknowledgement is a receipt")
	assert.Equal(t, "alice", ack.Caller)
	assert.Contains(t, ack.Note, "incident ticket 42")

	// A new tamper after the acknowledgement is caught again.
	f.update(t, func(b buckets) { require.NoError(t, b.receipts.Delete(store.U64(15))) })
	rep = f.verify(t)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemRemoved, rep.Problem.Kind)
}

func TestExportVerifiesOffline(t *testing.T) {
	f := newTamperFixture(t, 30)
	var buf bytes.Buffer
	n, err := Export(f.db, &buf)
	require.NoError(t, err)
	assert.Equal(t, 30, n)
	pub, err := ParseVerifierKey(f.key.VerifierKey)
	require.NoError(t, err)
	require.NoError(t, f.db.Close()) // no database from here on

	rep, err := VerifyExport(bytes.NewReader(buf.Bytes()), VerifyOptions{Verifier: pub, Saved: [][]byte{f.saved}})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 30, rep.Count)
	assert.Equal(t, uint64(30), rep.Newest.Size)

	// An edited receipt line, re-chained or not, fails offline too.
	lines := strings.Split(buf.String(), "\n")
	for i, line := range lines {
		if strings.Contains(line, `"seq":12,`) {
			lines[i] = strings.Replace(line, `"caller":"local"`, `"caller":"other"`, 1)
		}
	}
	rep, err = VerifyExport(strings.NewReader(strings.Join(lines, "\n")), VerifyOptions{Verifier: pub})
	require.NoError(t, err)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemAltered, rep.Problem.Kind)
	assert.Equal(t, uint64(12), rep.Problem.Seq)

	// Another key does not verify the export.
	other, err := NewKey(bytes.Repeat([]byte{3}, KeySize), "x")
	require.NoError(t, err)
	rep, err = VerifyExport(bytes.NewReader(buf.Bytes()), VerifyOptions{Verifier: other.Verifier()})
	require.NoError(t, err)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemForged, rep.Problem.Kind)

	_, err = VerifyExport(strings.NewReader("{}\n"), VerifyOptions{Verifier: pub})
	require.Error(t, err)
}

func TestAnchorFileReceivesEveryCheckpoint(t *testing.T) {
	db := openDB(t)
	anchorPath := filepath.Join(t.TempDir(), "anchors", "audit.anchor")
	require.NoError(t, os.MkdirAll(filepath.Dir(anchorPath), 0o700))
	a, err := ParseAnchor("file:" + anchorPath)
	require.NoError(t, err)
	var failures, successes int
	l := open(t, db, Options{Cadence: Cadence{Every: 5}, Anchor: a, OnAnchor: func(target string, err error) {
		assert.Equal(t, "file:"+anchorPath, target)
		if err != nil {
			failures++
		} else {
			successes++
		}
	}})
	for i := 1; i <= 23; i++ {
		appendOK(t, l, receipt(i, "default", time.Now()))
		require.NoError(t, l.Flush())
	}
	require.NoError(t, l.Close())
	raw, err := os.ReadFile(anchorPath)
	require.NoError(t, err)
	notes := SplitNotes(raw)
	require.GreaterOrEqual(t, len(notes), 5, "the first commit, every 5 receipts and the shutdown")
	assert.Equal(t, len(notes), successes)
	assert.Zero(t, failures)
	last, err := OpenCheckpoint(notes[len(notes)-1], "", testKey(t).Verifier())
	require.NoError(t, err)
	assert.Equal(t, uint64(23), last.Size)

	// The anchor file is a saved-checkpoint file: verify against it.
	rep := verifyDB(t, db, notes...)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Len(t, rep.Saved, len(notes))
}

func TestFailingAnchorNeverBlocksAndIsReported(t *testing.T) {
	db := openDB(t)
	a, err := ParseAnchor("exec:cat >/dev/null; echo witness unreachable >&2; exit 3")
	require.NoError(t, err)
	errs := make(chan error, 100)
	l := open(t, db, Options{Cadence: Cadence{Every: 1}, Anchor: a, OnAnchor: func(_ string, err error) { errs <- err }})
	for i := range 5 {
		_, err := l.AppendSync(receipt(i, "default", time.Now()))
		require.NoError(t, err, "a failing anchor never fails an append")
	}
	require.NoError(t, l.Close())
	close(errs)
	n := 0
	for err := range errs {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "witness unreachable")
		n++
	}
	assert.Positive(t, n)

	for _, bad := range []string{"file:relative/path", "exec:", "ftp://x"} {
		_, err := ParseAnchor(bad)
		assert.Error(t, err, bad)
	}
}

func TestLegacyLogIsAdoptedAtStart(t *testing.T) {
	db := openDB(t)
	// A log as the previous version wrote it: receipts, head, and an
	// unsigned retention record after receipts 1..3 were pruned.
	prev := "sha256:" + strings.Repeat("ab", 32)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		a := tx.Bucket(store.BucketAudit)
		rb := a.Bucket(bucketReceipts)
		var head Head
		for s := uint64(4); s <= 9; s++ {
			r := receipt(int(s), "default", time.Now())
			r.Seq, r.Type, r.PrevHash = s, TypeToolCall, prev
			raw, err := seal(&r)
			require.NoError(t, err)
			require.NoError(t, rb.Put(store.U64(s), raw))
			prev = r.Hash
			head = Head{Seq: s, Hash: r.Hash}
		}
		require.NoError(t, store.PutJSON(a, keyHead, head))
		return store.PutJSON(a, keyLegacyCheckpoint, legacyCheckpoint{Seq: 3, Hash: "sha256:" + strings.Repeat("ab", 32)})
	}))
	rep := verifyDB(t, db)
	require.False(t, rep.OK)
	assert.True(t, rep.Legacy)
	assert.Equal(t, ProblemUnsigned, rep.Problem.Kind)

	l := open(t, db, Options{})
	assert.Nil(t, integrity(t, l))
	appendOK(t, l, receipt(10, "default", time.Now()))
	require.NoError(t, l.Close())
	rep = verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 7, rep.Count)
	require.NotNil(t, rep.Base)
	assert.Equal(t, BaseAdopted, rep.Base.Kind)
	p, err := Prove(db, 5)
	require.NoError(t, err)
	_, err = VerifyProof(p, testKey(t).Verifier(), p.LeafHash)
	require.NoError(t, err)
}

func TestProveNamesTheReceiptOfARef(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{Cadence: Cadence{Every: 3}})
	var refs []Ref
	for i := 1; i <= 11; i++ {
		refs = append(refs, appendOK(t, l, receipt(i, "default", time.Now())))
	}
	require.NoError(t, l.Close())
	for _, ref := range refs {
		assert.Equal(t, l.Origin(), ref.Origin)
		p, err := Prove(db, ref.Seq)
		require.NoError(t, err)
		cp, err := VerifyProof(p, testKey(t).Verifier(), ref.LeafHash)
		require.NoError(t, err, "seq %d", ref.Seq)
		assert.Equal(t, uint64(11), cp.Size)
		assert.Contains(t, p.TLogProof, "c2sp.org/tlog-proof@v1")
	}
	p, err := Prove(db, 5)
	require.NoError(t, err)
	_, err = VerifyProof(p, testKey(t).Verifier(), refs[5].LeafHash)
	require.Error(t, err, "a proof names one receipt")
	p.Path[0] = p.Path[1]
	_, err = VerifyProof(p, testKey(t).Verifier(), "")
	require.Error(t, err)
	_, err = Prove(db, 99)
	require.ErrorIs(t, err, ErrNotCovered)
}

func TestKeyFileStaysOutOfTheDataFolder(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadKey(KeySpec{File: filepath.Join(dir, "data", "audit.key"), DataDir: filepath.Join(dir, "data")}, true)
	require.ErrorContains(t, err, "inside the database folder")
	_, err = LoadKey(KeySpec{File: filepath.Join(dir, "keys", "audit.key")}, false)
	require.ErrorIs(t, err, ErrNoKey)
	k1, err := LoadKey(KeySpec{File: filepath.Join(dir, "keys", "audit.key")}, true)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "keys", "audit.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	k2, err := LoadKey(KeySpec{File: filepath.Join(dir, "keys", "audit.key")}, false)
	require.NoError(t, err)
	assert.Equal(t, k1.VerifierKey, k2.VerifierKey)
	assert.Regexp(t, `^accords-mcp-audit-[0-9a-f]{8}\+[0-9a-f]{8}\+`, k1.VerifierKey)
	// The digest key is derived apart from the signing key and the
	// session key: distinct purposes, distinct keys.
	assert.NotEqual(t, k1.digest, derive(make([]byte, 32), labelSigning))
	k3, err := LoadKey(KeySpec{Env: strings.Repeat("cd", 32), File: "/nonexistent"}, false)
	require.NoError(t, err)
	assert.Equal(t, "env", k3.Source)
	_, err = ParseVerifierKey("garbage")
	require.Error(t, err)
}

func TestStartupFlagsAStoredIntegrityProblemAfterRestart(t *testing.T) {
	f := newTamperFixture(t, 6)
	f.update(t, func(b buckets) { require.NoError(t, b.receipts.Delete(store.U64(6))) })
	l, err := Open(f.db, Options{Key: f.key})
	require.NoError(t, err)
	require.NotNil(t, integrity(t, l))
	require.NoError(t, l.Close())
}

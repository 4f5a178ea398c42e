package witness_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/audit/witness"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestVerifiedWithoutOurCode checks what the log hands out (audit prove's
// JSON and tlog-proof, the export's checkpoints, cosignatures included)
// with golang.org/x/mod/sumdb/note and sumdb/tlog and the standard library
// only. x/mod's note knows Ed25519 keys (type 0x01) but not cosignature/v1
// (type 0x04), so the cosignature is checked by the twenty lines of
// cosigV1 below, written from C2SP tlog-cosignature.
func TestVerifiedWithoutOurCode(t *testing.T) {
	key, err := audit.NewKey(make([]byte, audit.KeySize), "test")
	require.NoError(t, err)
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	fw := witness.StartWitness(t, key)
	l, err := audit.Open(db, audit.Options{Key: key, Witnesses: []audit.Anchor{witness.NewSubmitter(db, fw.W, nil)}})
	require.NoError(t, err)
	for i := 1; i <= 5; i++ {
		_, err := l.AppendSync(audit.Receipt{CallID: fmt.Sprint("c", i), Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Tool: "t", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	require.NoError(t, l.Checkpoint())
	require.NoError(t, l.Flush())
	require.Eventually(t, func() bool {
		cp, err := audit.NewestCheckpoint(db)
		return err == nil && strings.Count(string(cp), "— ") == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, l.Close())

	// The inputs an auditor has: the printed key (audit key), the witness
	// key (from its operator), and audit prove 3's JSON.
	logVKey, witnessVKey := key.VerifierKey, fw.VKey
	p, err := audit.Prove(db, 3)
	require.NoError(t, err)
	js, err := json.Marshal(p)
	require.NoError(t, err)
	var proof struct {
		LeafIndex  int64    `json:"leaf_index"`
		Receipt    string   `json:"receipt"`
		Path       []string `json:"inclusion_proof"`
		Checkpoint string   `json:"checkpoint"`
		TLogProof  string   `json:"tlog_proof"`
	}
	require.NoError(t, json.Unmarshal(js, &proof))

	logV, err := note.NewVerifier(logVKey)
	require.NoError(t, err)
	wV := parseCosigV1(t, witnessVKey)
	n, err := note.Open([]byte(proof.Checkpoint), note.VerifierList(logV, wV))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 2, "log signature and witness cosignature both verify")
	lines := strings.Split(n.Text, "\n")
	size, err := strconv.ParseInt(lines[1], 10, 64)
	require.NoError(t, err)
	root, err := tlog.ParseHash(lines[2])
	require.NoError(t, err)

	var path tlog.RecordProof
	for _, h := range proof.Path {
		ph, err := tlog.ParseHash(h)
		require.NoError(t, err)
		path = append(path, ph)
	}
	leaf := tlog.RecordHash([]byte(proof.Receipt)) // SHA-256(0x00 || receipt), as RFC 6962
	require.NoError(t, tlog.CheckRecord(path, size, root, proof.LeafIndex, leaf))
	require.Error(t, tlog.CheckRecord(path, size, root, proof.LeafIndex+1, leaf), "a shifted index is refused")

	// The tlog-proof text: "c2sp.org/tlog-proof@v1", "extra BASE64",
	// "index N", the hashes, a blank line, the checkpoint.
	head, cp, ok := strings.Cut(proof.TLogProof, "\n\n")
	require.True(t, ok)
	require.Equal(t, proof.Checkpoint, cp)
	hl := strings.Split(head, "\n")
	require.Equal(t, "c2sp.org/tlog-proof@v1", hl[0])
	require.Equal(t, "extra "+base64.StdEncoding.EncodeToString([]byte(proof.Receipt)), hl[1])
	require.Equal(t, "index 2", hl[2])
	require.Equal(t, proof.Path, hl[3:])

	// Consistency of the newest checkpoint in the export with the one of
	// the proof above (the writer keeps one checkpoint per 1,000 receipts
	// and the newest, so the older one is the auditor's saved copy).
	l, err = audit.Open(db, audit.Options{Key: key, Witnesses: []audit.Anchor{witness.NewSubmitter(db, fw.W, nil)}})
	require.NoError(t, err)
	for i := 6; i <= 9; i++ {
		_, err := l.AppendSync(audit.Receipt{CallID: fmt.Sprint("c", i), Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Tool: "t", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	var export bytes.Buffer
	_, err = audit.Export(db, &export)
	require.NoError(t, err)
	var trees []tlog.Tree
	for line := range strings.Lines(export.String()) {
		var e struct {
			Type string `json:"type"`
			Note string `json:"note"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Type != "checkpoint" {
			continue
		}
		n, err := note.Open([]byte(e.Note), note.VerifierList(logV, wV))
		require.NoError(t, err)
		f := strings.Split(n.Text, "\n")
		sz, _ := strconv.ParseInt(f[1], 10, 64)
		h, err := tlog.ParseHash(f[2])
		require.NoError(t, err)
		trees = append(trees, tlog.Tree{N: sz, Hash: h})
	}
	require.NotEmpty(t, trees)
	older, newer := tlog.Tree{N: size, Hash: root}, trees[len(trees)-1]
	require.Equal(t, int64(9), newer.N)
	cproof, err := audit.ConsistencyProof(db, uint64(older.N), uint64(newer.N))
	require.NoError(t, err)
	var tp tlog.TreeProof
	for _, h := range cproof {
		tp = append(tp, tlog.Hash(h))
	}
	require.NoError(t, tlog.CheckTree(tp, newer.N, newer.Hash, older.N, older.Hash))
}

// cosigV1 is a note.Verifier for C2SP tlog-cosignature v1 keys, from the
// specification: the signature is an 8-byte big-endian timestamp and an
// Ed25519 signature of "cosignature/v1\ntime T\n" + checkpoint text.
type cosigV1 struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

func (c cosigV1) Name() string    { return c.name }
func (c cosigV1) KeyHash() uint32 { return c.hash }
func (c cosigV1) Verify(msg, sig []byte) bool {
	if len(sig) != 72 {
		return false
	}
	m := append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", binary.BigEndian.Uint64(sig)), msg...)
	return ed25519.Verify(c.pub, m, sig[8:])
}

func parseCosigV1(t *testing.T, vkey string) note.Verifier {
	f := strings.SplitN(vkey, "+", 3)
	require.Len(t, f, 3)
	key, err := base64.StdEncoding.DecodeString(f[2])
	require.NoError(t, err)
	require.Equal(t, byte(4), key[0])
	sum := sha256.Sum256(append([]byte(f[0]+"\n"), key...))
	require.Equal(t, fmt.Sprintf("%08x", binary.BigEndian.Uint32(sum[:4])), f[1])
	return cosigV1{name: f[0], hash: binary.BigEndian.Uint32(sum[:4]), pub: key[1:]}
}

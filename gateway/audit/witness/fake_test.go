package witness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// fakeWitness is an in-process C2SP tlog-witness for protocol edge cases
// (the real one, litewitness, runs in the tests tagged witness). It
// checks the log signature and consistency with x/mod's note and tlog.
type fakeWitness struct {
	t      *testing.T
	name   string
	priv   ed25519.PrivateKey
	vkey   string
	logKey note.Verifier
	srv    *httptest.Server

	mu       sync.Mutex
	size     int64
	hash     tlog.Hash
	requests int
	force    int // answer this status instead when non-zero
}

func newFakeWitness(t *testing.T, name string, logKey note.Verifier) *fakeWitness {
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, name)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := append([]byte{algCosignatureV1}, priv.Public().(ed25519.PublicKey)...)
	f := &fakeWitness{t: t, name: name, priv: priv, logKey: logKey,
		vkey: fmt.Sprintf("%s+%08x+%s", name, keyHash(name, pub), base64.StdEncoding.EncodeToString(pub))}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWitness) witness(t *testing.T) Witness {
	v, err := NewVerifier(f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	return Witness{URL: f.srv.URL, VKey: f.vkey, Verifier: v}
}

func (f *fakeWitness) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if r.Method != http.MethodPost || r.URL.Path != "/add-checkpoint" {
		http.NotFound(w, r)
		return
	}
	if f.force != 0 {
		http.Error(w, "forced", f.force)
		return
	}
	body, _ := io.ReadAll(r.Body)
	head, signed, ok := bytes.Cut(body, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	old, err := strconv.ParseInt(strings.TrimPrefix(lines[0], "old "), 10, 64)
	if !ok || err != nil || !strings.HasPrefix(lines[0], "old ") {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var proof tlog.TreeProof
	for _, l := range lines[1:] {
		h, err := tlog.ParseHash(l)
		if err != nil {
			http.Error(w, "bad proof hash", http.StatusBadRequest)
			return
		}
		proof = append(proof, h)
	}
	n, err := note.Open(signed, note.VerifierList(f.logKey))
	if err != nil {
		http.Error(w, "unknown log key", http.StatusForbidden)
		return
	}
	tl := strings.SplitN(n.Text, "\n", 4)
	tree, err := tlog.ParseTree([]byte("go.sum database tree\n" + tl[1] + "\n" + tl[2] + "\n"))
	if err != nil {
		http.Error(w, "bad checkpoint", http.StatusBadRequest)
		return
	}
	if old != f.size {
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "%d\n", f.size)
		return
	}
	if old > tree.N || (old > 0 && tlog.CheckTree(proof, tree.N, tree.Hash, old, f.hash) != nil) {
		http.Error(w, "bad consistency proof", http.StatusUnprocessableEntity)
		return
	}
	f.size, f.hash = tree.N, tree.Hash
	ts := uint64(time.Now().Unix())
	sig := binary.BigEndian.AppendUint64(nil, ts)
	sig = append(sig, ed25519.Sign(f.priv, cosignedMessage(ts, []byte(n.Text)))...)
	pub := append([]byte{algCosignatureV1}, f.priv.Public().(ed25519.PublicKey)...)
	kh := binary.BigEndian.AppendUint32(nil, keyHash(f.name, pub))
	fmt.Fprintf(w, "— %s %s\n", f.name, base64.StdEncoding.EncodeToString(append(kh, sig...)))
}

func (f *fakeWitness) state() (int64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size, f.requests
}

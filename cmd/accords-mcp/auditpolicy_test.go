package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	be "encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cosigningWitness answers every add-checkpoint with a cosignature/v1 of
// the checkpoint (no state: the protocol's refusals are tested in
// gateway/audit/witness); it returns the server and its verifier key.
func cosigningWitness(t *testing.T, name string) (*httptest.Server, string) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := append([]byte{4}, priv.Public().(ed25519.PublicKey)...)
	sum := sha256.Sum256(append([]byte(name+"\n"), pub...))
	vkey := fmt.Sprintf("%s+%x+%s", name, sum[:4], base64.StdEncoding.EncodeToString(pub))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, signed, _ := bytes.Cut(body, []byte("\n\n"))
		text, _, _ := bytes.Cut(signed, []byte("\n\n"))
		ts := uint64(time.Now().Unix())
		msg := append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", ts), append(text, '\n')...)
		sig := append(be.BigEndian.AppendUint64(append([]byte(nil), sum[:4]...), ts), ed25519.Sign(priv, msg)...)
		fmt.Fprintf(w, "— %s %s\n", name, base64.StdEncoding.EncodeToString(sig))
	}))
	t.Cleanup(srv.Close)
	return srv, vkey
}

// TestAuditVerifyPolicy: a server with ACCORDS_MCP_AUDIT_WITNESS gets its
// checkpoints cosigned; audit verify --policy accepts them when the
// quorum is met, on the database and on an export, and fails otherwise.
func TestAuditVerifyPolicy(t *testing.T) {
	srv, wkey := cosigningWitness(t, "witness.example/cmd")
	dir := t.TempDir()
	vars := map[string]string{"ACCORDS_MCP_DB": filepath.Join(dir, "data", "accords.db"),
		"ACCORDS_MCP_AUDIT_KEY_FILE": filepath.Join(t.TempDir(), "audit.key"),
		"ACCORDS_MCP_AUDIT_WITNESS":  wkey + " " + srv.URL}
	code, pub, _ := runAuditCmd(t, vars, "audit", "key")
	require.Equal(t, 0, code)
	pub = strings.TrimSpace(pub)
	seedAudit(t, vars, 3)

	pol := func(body string) string {
		p := filepath.Join(t.TempDir(), "policy")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	one := pol(fmt.Sprintf("log %s\nwitness w1 %s %s\nquorum w1\n", pub, wkey, srv.URL))
	_, otherKey := cosigningWitnessKey("witness.example/other")
	two := pol(fmt.Sprintf("log %s\nwitness w1 %s\nwitness w2 %s\ngroup both all w1 w2\nquorum both\n", pub, wkey, otherKey))

	code, out, errText := runAuditCmd(t, vars, "audit", "verify", "--policy", one)
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "cosigned by [w1]: quorum met")
	code, _, errText = runAuditCmd(t, vars, "audit", "verify", "--policy", two)
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "witness quorum not met")

	export := filepath.Join(t.TempDir(), "audit.ndjson")
	code, _, _ = runAuditCmd(t, vars, "audit", "export", "--out", export)
	require.Equal(t, 0, code)
	auditor := map[string]string{"ACCORDS_MCP_DB": filepath.Join(t.TempDir(), "none.db"), "ACCORDS_MCP_AUDIT_KEY_FILE": filepath.Join(t.TempDir(), "absent.key")}
	code, out, errText = runAuditCmd(t, auditor, "audit", "verify", "--export", export, "--key", pub, "--policy", one)
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "quorum met")
	code, _, errText = runAuditCmd(t, auditor, "audit", "verify", "--export", export, "--key", pub, "--policy", two)
	assert.Equal(t, 1, code)
	assert.Contains(t, errText, "quorum not met")
}

// cosigningWitnessKey is the verifier key of a witness that never signs.
func cosigningWitnessKey(name string) (ed25519.PrivateKey, string) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	pub := append([]byte{4}, priv.Public().(ed25519.PublicKey)...)
	sum := sha256.Sum256(append([]byte(name+"\n"), pub...))
	return priv, fmt.Sprintf("%s+%x+%s", name, sum[:4], base64.StdEncoding.EncodeToString(pub))
}

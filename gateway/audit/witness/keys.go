// Package witness submits the audit log's signed checkpoints to C2SP
// tlog-witness witnesses (add-checkpoint), keeps their cosignatures with
// the checkpoints, and checks checkpoints against a C2SP tlog-policy.
package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// golang.org/x/mod/sumdb/note verifies only Ed25519 keys (type 0x01), and
// torchwood exports a cosignature/v1 signer but no verifier built from a
// verifier key, so cosignature/v1 keys (type 0x04, C2SP tlog-cosignature)
// are read here; Ed25519 keys go to x/mod.

const algCosignatureV1 = 4

// NewVerifier reads a verifier key (C2SP signed-note vkey) of a witness
// or a log: cosignature/v1 or Ed25519.
func NewVerifier(vkey string) (note.Verifier, error) {
	vkey = strings.TrimSpace(vkey)
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	key, err := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || err != nil || len(key) == 0 || len(hash16) != 8 || name == "" {
		return nil, fmt.Errorf("verifier key %q is malformed (expected name+hash+base64)", vkey)
	}
	if key[0] != algCosignatureV1 {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("verifier key %q: %w", vkey, err)
		}
		return v, nil
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("verifier key %q is malformed", vkey)
	}
	if uint32(hash) != keyHash(name, key) {
		return nil, fmt.Errorf("verifier key %q: the key hash does not match", vkey)
	}
	return &cosigVerifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

func keyHash(name string, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosigVerifier checks C2SP tlog-cosignature v1 signatures: an 8-byte
// big-endian timestamp and an Ed25519 signature of
// "cosignature/v1\ntime T\n" followed by the checkpoint text.
type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }

func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	return ed25519.Verify(v.key, cosignedMessage(t, msg), sig[8:])
}

func cosignedMessage(t uint64, msg []byte) []byte {
	return append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", t), msg...)
}

// Witness is one configured witness.
type Witness struct {
	// URL is the submission prefix: add-checkpoint is URL + "/add-checkpoint".
	URL      string
	VKey     string
	Verifier note.Verifier
}

// Name is the witness key's name.
func (w Witness) Name() string { return w.Verifier.Name() }

// Parse reads ACCORDS_MCP_AUDIT_WITNESS: entries separated by commas,
// semicolons or newlines, each a witness verifier key and its submission
// prefix URL separated by whitespace ("VKEY URL"), the order of a
// tlog-policy witness line. "" is none.
func Parse(spec string) ([]Witness, error) {
	var out []Witness
	seen := map[string]bool{}
	for entry := range strings.FieldsFuncSeq(spec, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		f := strings.Fields(entry)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_WITNESS entry %q: write the witness key and its URL, \"name+hash+key https://witness.example/prefix\"", strings.TrimSpace(entry))
		}
		if strings.Contains(f[0], "://") {
			f[0], f[1] = f[1], f[0] // either order
		}
		v, err := NewVerifier(f[0])
		if err != nil {
			return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_WITNESS: %w", err)
		}
		u := strings.TrimRight(f[1], "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_WITNESS: witness URL %q must start with http:// or https://", f[1])
		}
		if seen[u] {
			return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_WITNESS: witness %s named twice", u)
		}
		seen[u] = true
		out = append(out, Witness{URL: u, VKey: f[0], Verifier: v})
	}
	return out, nil
}

// ErrNoCosignature means a response held no signature of the witness key.
var ErrNoCosignature = errors.New("no valid cosignature of the witness key")

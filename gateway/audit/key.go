package audit

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/accordsai/accords-mcp/platform/keyring"
	"golang.org/x/mod/sumdb/note"
)

// Key is the audit log's identity: a 32-byte secret kept outside the
// database folder, from which the checkpoint signing key and the HMAC key
// of the receipts' digests are derived.
type Key struct {
	signer   note.Signer
	verifier note.Verifier
	// VerifierKey is the public key in signed-note verifier form.
	VerifierKey string
	digest      []byte
	// Source is "env" or the key file path, for diagnostics.
	Source string
}

// KeySize is the length of the audit master secret.
const KeySize = 32

// Derivation labels; changing one changes every key derived from it.
const (
	labelSigning = "accords-mcp audit checkpoint signing v1"
	labelDigest  = "accords-mcp audit receipt digests v1"
)

// keyName is the signer name in notes: a prefix and the first 8 hex digits
// of the public key's SHA-256.
func keyName(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "accords-mcp-audit-" + hex.EncodeToString(sum[:4])
}

func derive(master []byte, label string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// NewKey builds the key from the master secret.
func NewKey(master []byte, source string) (*Key, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("audit key must be %d bytes, got %d", KeySize, len(master))
	}
	priv := ed25519.NewKeyFromSeed(derive(master, labelSigning))
	pub := priv.Public().(ed25519.PublicKey)
	name := keyName(pub)
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(vkey, "+")
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%s+%s", name, parts[1],
		base64.StdEncoding.EncodeToString(append([]byte{1}, priv.Seed()...)))
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("audit signer: %w", err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	return &Key{signer: signer, verifier: verifier, VerifierKey: vkey, digest: derive(master, labelDigest), Source: source}, nil
}

// Signer signs checkpoints and base notes.
func (k *Key) Signer() note.Signer { return k.signer }

// Verifier checks signatures of this key.
func (k *Key) Verifier() note.Verifier { return k.verifier }

// Hasher keys the receipts' params_hash and result_hash.
func (k *Key) Hasher() *Hasher {
	h, _ := NewHasher(k.digest)
	return h
}

// ParseVerifierKey reads a public key in verifier form, as `audit key`
// prints it (surrounding whitespace ignored).
func ParseVerifierKey(s string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("audit public key %q: %w (expected the output of accords-mcp audit key)", strings.TrimSpace(s), err)
	}
	return v, nil
}

// ErrNoKey means no audit key is configured and the key file is absent.
var ErrNoKey = errors.New("no audit key")

// KeySpec says where the key comes from: Env (ACCORDS_MCP_AUDIT_KEY, hex or
// base64) wins over File (ACCORDS_MCP_AUDIT_KEY_FILE or its default).
type KeySpec struct {
	Env  string
	File string
	// DataDir is the database folder; a key file inside it is refused.
	DataDir string
}

// LoadKey reads the key; with create, a missing key file is created (folder
// 0700, file 0600). Without create, a missing file is ErrNoKey.
func LoadKey(spec KeySpec, create bool) (*Key, error) {
	if env := strings.TrimSpace(spec.Env); env != "" {
		master, err := keyring.DecodeKey(env)
		if err != nil {
			return nil, fmt.Errorf("ACCORDS_MCP_AUDIT_KEY: %w", err)
		}
		return NewKey(master, "env")
	}
	if spec.File == "" {
		return nil, fmt.Errorf("%w: set ACCORDS_MCP_AUDIT_KEY or ACCORDS_MCP_AUDIT_KEY_FILE", ErrNoKey)
	}
	if spec.DataDir != "" && inside(spec.File, spec.DataDir) {
		return nil, fmt.Errorf("audit key file %s is inside the database folder %s: whoever holds that folder could re-sign a rewritten log; "+
			"put it elsewhere (ACCORDS_MCP_AUDIT_KEY_FILE) or pass it in ACCORDS_MCP_AUDIT_KEY", spec.File, spec.DataDir)
	}
	master, err := keyring.ReadKeyFile(spec.File, create)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !create:
		return nil, fmt.Errorf("%w: %s does not exist (it is created on the server's first start; or pass the public key with --key)", ErrNoKey, spec.File)
	case err != nil:
		return nil, fmt.Errorf("audit %w", err)
	}
	return NewKey(master, spec.File)
}

// inside reports whether path lies in dir (after cleaning and resolving
// symlinks where they exist).
func inside(path, dir string) bool {
	abs := func(p string) string {
		p, _ = filepath.Abs(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(r, filepath.Base(p))
		}
		return p
	}
	rel, err := filepath.Rel(abs(dir), abs(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

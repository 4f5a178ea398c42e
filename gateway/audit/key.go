package audit

import (
	"cmp"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
		master, err := decodeSecret(env)
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
	raw, err := os.ReadFile(spec.File)
	switch {
	case err == nil:
		master, derr := decodeSecret(strings.TrimSpace(string(raw)))
		if derr != nil {
			return nil, fmt.Errorf("audit key file %s: %w", spec.File, derr)
		}
		return NewKey(master, spec.File)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read audit key file %s: %w", spec.File, err)
	case !create:
		return nil, fmt.Errorf("%w: %s does not exist (it is created on the server's first start; or pass the public key with --key)", ErrNoKey, spec.File)
	}
	master := make([]byte, KeySize)
	if _, err := rand.Read(master); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(spec.File), 0o700); err != nil {
		return nil, fmt.Errorf("create audit key folder: %w", err)
	}
	f, err := os.OpenFile(spec.File, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadKey(spec, false) // another process created it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("create audit key file %s: %w", spec.File, err)
	}
	_, err = f.WriteString(hex.EncodeToString(master) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if err := cmp.Or(err, f.Close()); err != nil {
		return nil, err
	}
	return NewKey(master, spec.File)
}

func decodeSecret(s string) ([]byte, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be %d bytes encoded as hex (64 characters) or base64", KeySize)
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

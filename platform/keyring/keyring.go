// Package keyring seals small secrets at rest with AES-256-GCM, keyed by
// ACCORDS_MCP_SECRET_KEY or a 0600 key file beside the database.
package keyring

import (
	"cmp"
	"crypto/aes"
	"crypto/cipher"
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
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

// ErrWrongKey means a sealed value was written under another key.
var ErrWrongKey = errors.New("sealed value cannot be opened with the configured secret key (ACCORDS_MCP_SECRET_KEY or key file differs from the one used to store it)")

// Keyring seals and opens values. Its zero value is unusable; use Load.
type Keyring struct {
	aead   cipher.AEAD
	derive []byte // HMAC key for Derive, itself derived from the key
	Source string // "env" or the key file path, for diagnostics
}

// Load returns a keyring from envKey (hex or base64 of 32 bytes) when set,
// otherwise from keyFile, creating it with mode 0600 when absent.
func Load(envKey, keyFile string) (*Keyring, error) {
	if strings.TrimSpace(envKey) != "" {
		key, err := DecodeKey(strings.TrimSpace(envKey))
		if err != nil {
			return nil, fmt.Errorf("ACCORDS_MCP_SECRET_KEY: %w", err)
		}
		return newKeyring(key, "env")
	}
	key, err := ReadKeyFile(keyFile, true)
	if err != nil {
		return nil, err
	}
	return newKeyring(key, keyFile)
}

// New builds a keyring from raw key bytes (tests, tools).
func New(key []byte) (*Keyring, error) { return newKeyring(key, "memory") }

func newKeyring(key []byte, source string) (*Keyring, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("accords-mcp keyring derivation v1"))
	return &Keyring{aead: aead, derive: m.Sum(nil), Source: source}, nil
}

// DecodeKey reads a 32-byte key written as hex or base64.
func DecodeKey(s string) ([]byte, error) {
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

// ReadKeyFile reads the key in the file at path. With create, a missing
// file is made with a new random key (folder 0700, file 0600; a file
// another process created meanwhile wins); without, it is an error
// wrapping fs.ErrNotExist.
func ReadKeyFile(path string, create bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, derr := DecodeKey(strings.TrimSpace(string(b)))
		if derr != nil {
			return nil, fmt.Errorf("key file %s: %w", path, derr)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	// O_EXCL: if another process created the file meanwhile, use theirs.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadKeyFile(path, false)
	}
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	return key, cmp.Or(err, f.Close())
}

// Seal encrypts plaintext; aad binds the ciphertext to its record (for
// example the scope) so a sealed value cannot be moved to another record.
func (k *Keyring) Seal(plaintext, aad []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return k.aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts a value produced by Seal with the same aad.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, ErrWrongKey
	}
	pt, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrWrongKey
	}
	return pt, nil
}

// Derive returns a 32-byte key for purpose (for example the audit HMAC
// key), independent of the sealing key and of every other purpose.
func (k *Keyring) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, k.derive)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

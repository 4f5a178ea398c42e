package keyring_test

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/stretchr/testify/require"
)

func TestKeyFileCreatedPrivateAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "accords.key")
	k1, err := keyring.Load("", path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	sealed := k1.Seal([]byte("secret-token"), []byte("scope-a"))
	require.NotContains(t, string(sealed), "secret-token")

	k2, err := keyring.Load("", path)
	require.NoError(t, err)
	pt, err := k2.Open(sealed, []byte("scope-a"))
	require.NoError(t, err)
	require.Equal(t, "secret-token", string(pt))
}

func TestEnvKeyHexAndBase64(t *testing.T) {
	raw := []byte(strings.Repeat("k", keyring.KeySize))
	for _, enc := range []string{hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw)} {
		k, err := keyring.Load(enc, filepath.Join(t.TempDir(), "unused.key"))
		require.NoError(t, err)
		require.Equal(t, "env", k.Source)
	}
	_, err := keyring.Load("too-short", "")
	require.ErrorContains(t, err, "ACCORDS_MCP_SECRET_KEY")
}

func TestWrongKeyOrMovedValueIsRefused(t *testing.T) {
	a, err := keyring.New([]byte(strings.Repeat("a", 32)))
	require.NoError(t, err)
	b, err := keyring.New([]byte(strings.Repeat("b", 32)))
	require.NoError(t, err)
	sealed := a.Seal([]byte("tok"), []byte("scope"))

	_, err = b.Open(sealed, []byte("scope"))
	require.ErrorIs(t, err, keyring.ErrWrongKey)
	_, err = a.Open(sealed, []byte("other-scope"))
	require.ErrorIs(t, err, keyring.ErrWrongKey, "a sealed value is bound to its record")
	_, err = a.Open([]byte{1, 2}, []byte("scope"))
	require.ErrorIs(t, err, keyring.ErrWrongKey)
}

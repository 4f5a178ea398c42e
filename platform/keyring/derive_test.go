package keyring_test

import (
	"bytes"
	"testing"

	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeriveIsStablePerKeyAndPurpose(t *testing.T) {
	k1, err := keyring.New(bytes.Repeat([]byte{1}, keyring.KeySize))
	require.NoError(t, err)
	k1again, err := keyring.New(bytes.Repeat([]byte{1}, keyring.KeySize))
	require.NoError(t, err)
	k2, err := keyring.New(bytes.Repeat([]byte{2}, keyring.KeySize))
	require.NoError(t, err)

	a := k1.Derive("audit-hmac")
	require.Len(t, a, 32)
	assert.Equal(t, a, k1again.Derive("audit-hmac"), "same key, same purpose")
	assert.NotEqual(t, a, k1.Derive("other"), "purposes are independent")
	assert.NotEqual(t, a, k2.Derive("audit-hmac"), "keys are independent")
	assert.NotEqual(t, bytes.Repeat([]byte{1}, keyring.KeySize), a, "never the sealing key itself")
}

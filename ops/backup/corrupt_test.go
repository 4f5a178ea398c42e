package backup_test

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveLeaf returns a leaf page the database references: from the newer
// meta page's root bucket down the first branch elements. (The first leaf
// page in the file may be a free one, left by an earlier transaction, which
// Check rightly never reads.)
func liveLeaf(t *testing.T, raw []byte, ps int) int {
	t.Helper()
	meta := 0
	if binary.NativeEndian.Uint64(raw[ps+16+48:]) > binary.NativeEndian.Uint64(raw[16+48:]) {
		meta = 1 // higher txid
	}
	id := int(binary.NativeEndian.Uint64(raw[meta*ps+16+16:])) // root bucket's root page
	for range 16 {
		switch binary.NativeEndian.Uint16(raw[id*ps+8:]) {
		case 0x02:
			return id
		case 0x01:
			id = int(binary.NativeEndian.Uint64(raw[id*ps+16+8:])) // element 0's child
		default:
			t.Fatalf("page %d is neither branch nor leaf", id)
		}
	}
	t.Fatal("no leaf under the root")
	return 0
}

// TestCheckRefusesCraftedReferences points page references and element
// sizes past the end of the file: bbolt would fault reading them through its
// mapping; Check must refuse them with a reason instead.
func TestCheckRefusesCraftedReferences(t *testing.T) {
	good, raw := goodBackup(t)
	_ = good
	ps := int(binary.NativeEndian.Uint32(raw[16+8:]))
	dir := t.TempDir()
	leaf := liveLeaf(t, raw, ps)
	cases := map[string]func(b []byte){
		"leaf value past the page": func(b []byte) {
			binary.NativeEndian.PutUint32(b[leaf*ps+16+12:], 1<<30) // vsize of element 0
		},
		"leaf key past the page": func(b []byte) {
			binary.NativeEndian.PutUint32(b[leaf*ps+16+4:], 1<<28) // pos of element 0
		},
		"page header id mismatch": func(b []byte) {
			binary.NativeEndian.PutUint64(b[leaf*ps:], 999999)
		},
		"element count beyond the page": func(b []byte) {
			binary.NativeEndian.PutUint16(b[leaf*ps+10:], 0xFFF0)
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			b := append([]byte{}, raw...)
			corrupt(b)
			p := filepath.Join(dir, name+".db")
			require.NoError(t, os.WriteFile(p, b, 0o600))
			_, err := backup.Check(p)
			require.Error(t, err)
			assert.ErrorIs(t, err, backup.ErrInvalid)
		})
	}
}

// TestCheckSurvivesRandomDamage overwrites random bytes of a good backup
// many times: Check may accept damage in unused space, but it must always
// return (a fault while bbolt reads the file would crash this test).
func TestCheckSurvivesRandomDamage(t *testing.T) {
	_, raw := goodBackup(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for i := range 150 {
		b := append([]byte{}, raw...)
		off := rng.IntN(len(b) - 16)
		for j := range 1 + rng.IntN(16) {
			b[off+j] = byte(rng.Uint32())
		}
		p := filepath.Join(dir, "damaged.db")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		if _, err := backup.Check(p); err != nil {
			refused++
			assert.ErrorIs(t, err, backup.ErrInvalid, "iteration %d", i)
		}
	}
	assert.Greater(t, refused, 0)
}

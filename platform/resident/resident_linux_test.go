package resident

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tx\nVmRSS:\t  2048 kB\nRssFile:\t    1568 kB\nRssShmem:\t0 kB\nBad:\t12\n")
	n, err := statusField(status, "RssFile:")
	require.NoError(t, err)
	assert.Equal(t, int64(1568<<10), n)
	_, err = statusField(status, "Missing:")
	assert.Error(t, err)
	_, err = statusField(status, "Bad:")
	assert.Error(t, err, "a line without its unit")
	_, err = statusField([]byte("X:\nRssFile:\tmany kB\n"), "RssFile:")
	assert.Error(t, err)
}

// A file mapped and read is counted in RssFile; releasing its range takes
// it off, and reading it again gives the same bytes.
func TestReleaseUnmapsAFileMappingButKeepsItsData(t *testing.T) {
	const size = 16 << 20
	path := filepath.Join(t.TempDir(), "mapped")
	want := bytes.Repeat([]byte("accords-mcp resident "), size/21+1)[:size]
	require.NoError(t, os.WriteFile(path, want, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer func() { _ = syscall.Munmap(m) }()

	before, err := FileResident()
	require.NoError(t, err)
	require.Equal(t, want, m, "read every page")
	touched, err := FileResident()
	require.NoError(t, err)
	require.Greater(t, touched-before, int64(size/2), "the pages read are resident")

	g := New(Options{Budget: 1})
	g.Add("file", func(release func(Range)) error {
		release(Range{Addr: uintptr(unsafe.Pointer(&m[0])), Len: len(m)})
		return nil
	})
	g.Trim()
	after, err := FileResident()
	require.NoError(t, err)
	assert.Less(t, after, touched-int64(size/2), "released")
	assert.GreaterOrEqual(t, g.Freed(), int64(size/2))
	assert.Equal(t, want, m, "the data is still there")
}

// The executable's clean read-only mappings are found and releasing them
// leaves the process running its code.
func TestExecutableReleasesCleanMappingsOnly(t *testing.T) {
	src, err := Executable()
	require.NoError(t, err)
	var ranges []Range
	require.NoError(t, src(func(r Range) { ranges = append(ranges, r) }))
	require.NotEmpty(t, ranges)
	stack := uintptr(unsafe.Pointer(&ranges)) // never in the executable's file mappings
	for _, r := range ranges {
		assert.Zero(t, r.Addr%uintptr(os.Getpagesize()), "page aligned")
		assert.False(t, stack >= r.Addr && stack < r.Addr+uintptr(r.Len))
	}
	g := New(Options{Budget: 1})
	g.Add("executable", src)
	for range 3 {
		g.Trim()
	}
	// Still running: code, read-only data and the runtime's tables refault.
	var buf bytes.Buffer
	for i := range 1000 {
		buf.WriteString(filepath.Join("a", string(rune('a'+i%26))))
	}
	assert.Positive(t, buf.Len())
}

// A private read-only mapping that holds a copied page (as the loader
// leaves relocated data) is not offered: releasing it would lose the copy.
// A clean one of the same file is.
func TestCleanMappingsLeaveCopiedPagesAlone(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "relocated")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{7}, 4*page), 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	var st syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))

	copied, err := syscall.Mmap(int(f.Fd()), 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { _ = syscall.Munmap(copied) }()
	copied[0] = 1 // a private copy of the first page
	require.NoError(t, syscall.Mprotect(copied, syscall.PROT_READ))
	clean, err := syscall.Mmap(int(f.Fd()), int64(2*page), 2*page, syscall.PROT_READ, syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { _ = syscall.Munmap(clean) }()
	_ = clean[0]

	ranges, err := cleanMappings(st.Ino)
	require.NoError(t, err)
	require.Equal(t, []Range{{Addr: uintptr(unsafe.Pointer(&clean[0])), Len: 2 * page}}, ranges)
	assert.Equal(t, byte(1), copied[0])
}

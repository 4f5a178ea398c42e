package backup

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt on-disk constants (internal/common in bbolt v1.5): a page header of
// 16 bytes, then the meta: magic, version, page size, flags (4 bytes each),
// root bucket (pgid, sequence), freelist pgid, high-water pgid, txid, and an
// FNV-64a checksum of the 56 bytes before it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64
	noFreelist     = ^uint64(0)
)

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

// readMeta parses one meta page at off; ok is false when it is not a valid
// meta page (bad magic, version or checksum).
func readMeta(r io.ReaderAt, off int64) (boltMeta, bool) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := r.ReadAt(buf, off); err != nil {
		return boltMeta{}, false
	}
	m := buf[pageHeaderSize:]
	le := binary.NativeEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: le.Uint32(m[8:]),
		root:     le.Uint64(m[16:]),
		freelist: le.Uint64(m[32:]),
		pgid:     le.Uint64(m[40:]),
		txid:     le.Uint64(m[48:]),
	}, true
}

// preflight validates the meta pages before bbolt maps the file: bbolt
// trusts the high-water mark, and reading a page past the end of a
// truncated file is a fatal SIGBUS that no recover can catch.
func preflight(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	m0, ok0 := readMeta(f, 0)
	var metas []boltMeta
	if ok0 {
		metas = append(metas, m0)
		if m1, ok := readMeta(f, int64(m0.pageSize)); ok {
			metas = append(metas, m1)
		}
	} else {
		for _, ps := range []int64{4096, 8192, 16384, 32768, 65536} {
			if m1, ok := readMeta(f, ps); ok && int64(m1.pageSize) == ps {
				metas = append(metas, m1)
				break
			}
		}
	}
	if len(metas) == 0 {
		return fmt.Errorf("%w: no valid bbolt meta page (not a bbolt database, or its header is damaged)", ErrInvalid)
	}
	// bbolt uses the valid meta with the highest transaction id; check every
	// valid one, since bbolt falls back to the other.
	use := metas[0]
	for _, m := range metas {
		if m.txid > use.txid {
			use = m
		}
		ps := uint64(m.pageSize)
		if ps < 512 || ps > 1<<20 || ps&(ps-1) != 0 {
			return fmt.Errorf("%w: implausible page size %d", ErrInvalid, ps)
		}
		if m.pgid < 2 || m.pgid > uint64(size)/ps {
			return fmt.Errorf("%w: the file is %d bytes but its meta page says it holds %d pages of %d bytes (%d bytes): truncated", ErrInvalid, size, m.pgid, ps, m.pgid*ps)
		}
		if m.root >= m.pgid || (m.freelist != noFreelist && m.freelist >= m.pgid) {
			return fmt.Errorf("%w: meta page points past the end of the data (root %d, freelist %d, pages %d)", ErrInvalid, m.root, m.freelist, m.pgid)
		}
	}
	return walkTree(path, use)
}

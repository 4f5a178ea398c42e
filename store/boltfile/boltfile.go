// Package boltfile reads a bbolt file's header with plain reads, so a file
// cut shorter than its recorded high-water mark is refused before bbolt
// maps it (a read past the end is an uncatchable SIGBUS).
package boltfile

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt on-disk constants (bbolt v1.5): a 16-byte page header, then the
// meta fields and an FNV-64a checksum of the 56 bytes before it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64
	// NoFreelist is the freelist page id of a file that does not store
	// its freelist.
	NoFreelist = ^uint64(0)
)

// Meta is what one meta page says about the file.
type Meta struct {
	PageSize uint32
	// Root is the root bucket's page, Freelist the freelist's (NoFreelist when
	// not stored), Pgid the high-water mark in pages.
	Root, Freelist, Pgid uint64
	Txid                 uint64
}

// readMeta parses one meta page at off; ok is false when it is not a valid
// meta page (bad magic, version or checksum).
func readMeta(r io.ReaderAt, off int64) (Meta, bool) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := r.ReadAt(buf, off); err != nil {
		return Meta{}, false
	}
	m := buf[pageHeaderSize:]
	le := binary.NativeEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return Meta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return Meta{}, false
	}
	return Meta{
		PageSize: le.Uint32(m[8:]),
		Root:     le.Uint64(m[16:]),
		Freelist: le.Uint64(m[32:]),
		Pgid:     le.Uint64(m[40:]),
		Txid:     le.Uint64(m[48:]),
	}, true
}

// Check returns the meta page bbolt would use (valid, highest txid) of a
// file of size bytes. It fails when none is valid, or any valid one has an
// implausible page size, claims more pages than the file holds or points
// past its high-water mark.
func Check(r io.ReaderAt, size int64) (Meta, error) {
	m0, ok0 := readMeta(r, 0)
	var metas []Meta
	if ok0 {
		metas = append(metas, m0)
		if m1, ok := readMeta(r, int64(m0.PageSize)); ok {
			metas = append(metas, m1)
		}
	} else {
		for _, ps := range []int64{4096, 8192, 16384, 32768, 65536} {
			if m1, ok := readMeta(r, ps); ok && int64(m1.PageSize) == ps {
				metas = append(metas, m1)
				break
			}
		}
	}
	if len(metas) == 0 {
		return Meta{}, fmt.Errorf("no valid bbolt meta page (not a bbolt database, or its header is damaged)")
	}
	use := metas[0]
	for _, m := range metas {
		if m.Txid > use.Txid {
			use = m
		}
		ps := uint64(m.PageSize)
		if ps < 512 || ps > 1<<20 || ps&(ps-1) != 0 {
			return Meta{}, fmt.Errorf("implausible page size %d", ps)
		}
		if m.Pgid < 2 || m.Pgid > uint64(size)/ps {
			return Meta{}, fmt.Errorf("the file is %d bytes but its meta page says it holds %d pages of %d bytes (%d bytes): truncated", size, m.Pgid, ps, m.Pgid*ps)
		}
		if m.Root >= m.Pgid || (m.Freelist != NoFreelist && m.Freelist >= m.Pgid) {
			return Meta{}, fmt.Errorf("meta page points past the end of the data (root %d, freelist %d, pages %d)", m.Root, m.Freelist, m.Pgid)
		}
	}
	return use, nil
}

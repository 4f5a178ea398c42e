package backup

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/accordsai/accords-mcp/store/boltfile"
)

// Page layout of bbolt v1.5: a 16-byte header (id, flags, count, overflow)
// then fixed 16-byte elements whose pos is relative to the element itself.
const (
	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagFreelist = 0x10
	bucketLeaf   = 0x01
	elemSize     = 16
	inBucketSize = 16
)

// walker reads the page tree with plain reads, never mmap, so bbolt only
// sees a file whose every reachable reference stays inside it (a bad one
// would fault fatally).
type walker struct {
	f       *os.File
	ps      uint64
	pgid    uint64
	visited map[uint64]bool
}

func walkTree(path string, m boltfile.Meta) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := &walker{f: f, ps: uint64(m.PageSize), pgid: m.Pgid, visited: map[uint64]bool{}}
	if m.Freelist != boltfile.NoFreelist {
		if err := w.freelist(m.Freelist); err != nil {
			return err
		}
	}
	return w.visit(m.Root, 0)
}

func (w *walker) read(id uint64) ([]byte, error) {
	if id < 2 || id >= w.pgid {
		return nil, fmt.Errorf("%w: reference to page %d outside the data (pages 2..%d)", ErrInvalid, id, w.pgid-1)
	}
	hdr := make([]byte, 16)
	if _, err := w.f.ReadAt(hdr, int64(id*w.ps)); err != nil {
		return nil, fmt.Errorf("%w: page %d unreadable: %w", ErrInvalid, id, err)
	}
	le := binary.NativeEndian
	if got := le.Uint64(hdr); got != id {
		return nil, fmt.Errorf("%w: page %d has id %d in its header", ErrInvalid, id, got)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if id+overflow >= w.pgid {
		return nil, fmt.Errorf("%w: page %d overflows past the data (%d more pages)", ErrInvalid, id, overflow)
	}
	buf := make([]byte, (overflow+1)*w.ps)
	if _, err := w.f.ReadAt(buf, int64(id*w.ps)); err != nil {
		return nil, fmt.Errorf("%w: page %d unreadable: %w", ErrInvalid, id, err)
	}
	return buf, nil
}

func (w *walker) freelist(id uint64) error {
	buf, err := w.read(id)
	if err != nil {
		return err
	}
	le := binary.NativeEndian
	if le.Uint16(buf[8:]) != flagFreelist {
		return fmt.Errorf("%w: freelist page %d has type %#x", ErrInvalid, id, le.Uint16(buf[8:]))
	}
	start, count := uint64(16), uint64(le.Uint16(buf[10:]))
	if count == 0xFFFF {
		if len(buf) < 24 {
			return fmt.Errorf("%w: freelist page %d is cut short", ErrInvalid, id)
		}
		count, start = le.Uint64(buf[16:]), 24
	}
	if count > (uint64(len(buf))-start)/8 {
		return fmt.Errorf("%w: freelist page %d claims %d ids, more than it holds", ErrInvalid, id, count)
	}
	for i := range count {
		if free := le.Uint64(buf[start+8*i:]); free >= w.pgid {
			return fmt.Errorf("%w: freelist names page %d outside the data", ErrInvalid, free)
		}
	}
	return nil
}

// maxDepth bounds nesting (tree levels plus nested buckets).
const maxDepth = 256

func (w *walker) visit(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: page tree nested deeper than %d levels", ErrInvalid, maxDepth)
	}
	if w.visited[id] {
		return fmt.Errorf("%w: page %d is referenced twice", ErrInvalid, id)
	}
	w.visited[id] = true
	buf, err := w.read(id)
	if err != nil {
		return err
	}
	return w.page(buf, id, depth, false)
}

// page checks one branch or leaf page held in buf (a file page, or an
// inline bucket's page inside its parent's value).
func (w *walker) page(buf []byte, id uint64, depth int, inline bool) error {
	le := binary.NativeEndian
	if len(buf) < 16 {
		return fmt.Errorf("%w: inline bucket page under page %d is cut short", ErrInvalid, id)
	}
	flags, count := le.Uint16(buf[8:]), uint64(le.Uint16(buf[10:]))
	if 16+count*elemSize > uint64(len(buf)) {
		return fmt.Errorf("%w: page %d claims %d elements, more than it holds", ErrInvalid, id, count)
	}
	switch {
	case flags == flagBranch && !inline:
		for i := range count {
			off := 16 + i*elemSize
			pos, ksize, child := uint64(le.Uint32(buf[off:])), uint64(le.Uint32(buf[off+4:])), le.Uint64(buf[off+8:])
			if off+pos+ksize > uint64(len(buf)) {
				return fmt.Errorf("%w: branch page %d element %d points outside the page", ErrInvalid, id, i)
			}
			if err := w.visit(child, depth+1); err != nil {
				return err
			}
		}
	case flags == flagLeaf:
		for i := range count {
			off := 16 + i*elemSize
			eflags := le.Uint32(buf[off:])
			pos, ksize, vsize := uint64(le.Uint32(buf[off+4:])), uint64(le.Uint32(buf[off+8:])), uint64(le.Uint32(buf[off+12:]))
			end := off + pos + ksize + vsize
			if end > uint64(len(buf)) {
				return fmt.Errorf("%w: leaf page %d element %d points outside the page", ErrInvalid, id, i)
			}
			if eflags&bucketLeaf == 0 {
				continue
			}
			val := buf[off+pos+ksize : end]
			if len(val) < inBucketSize {
				return fmt.Errorf("%w: bucket header on page %d is cut short", ErrInvalid, id)
			}
			if root := le.Uint64(val); root != 0 {
				if err := w.visit(root, depth+1); err != nil {
					return err
				}
			} else if err := w.page(val[inBucketSize:], id, depth+1, true); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: page %d has type %#x where a branch or leaf page belongs", ErrInvalid, id, flags)
	}
	return nil
}

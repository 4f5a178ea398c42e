package index

import (
	"unsafe"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Mapped calls fn with each persisted segment's memory mapping, while a
// snapshot holding them is open so that none is closed (unmapped)
// meanwhile. Segments still in memory have none; a persisted zap
// segment (one with a path) hands out its mapping as Data.
func (ix *Index) Mapped(fn func(addr uintptr, n int)) error {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	is, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return nil
	}
	for _, s := range is.Segments() {
		m, ok := s.Segment().(interface {
			Data() []byte
			Path() string
		})
		if !ok || m.Path() == "" {
			continue
		}
		if d := m.Data(); len(d) > 0 {
			fn(uintptr(unsafe.Pointer(&d[0])), len(d))
		}
	}
	return nil
}

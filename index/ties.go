package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/collector"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// topScored returns the limit best matches of q in Search's order (score,
// then the tie-break that list_key encodes), and how many matched.
// It is what a search sorted by -_score then list_key returns, at a
// fraction of its cost: bleve's collector reads the sort field's doc value
// of every match, while this one reads a match's list_key only when its
// score equals that of a match it must be ordered against. The matches of a
// two-word query in a large catalog often tie at the page boundary (scores
// repeat when titles are alike), so this is the common case of a search.
func (ix *Index) topScored(ctx context.Context, q query.Query, limit int) ([]Hit, uint64, error) {
	r, s, done, err := ix.searcher(ctx, q, search.SearcherOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer done()
	top, err := newTieHeap(r, limit, &ix.keys)
	if err != nil {
		return nil, 0, err
	}
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0), IndexReader: r}
	var total uint64
	for {
		if total&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		dm, err := s.Next(sctx)
		if err != nil {
			return nil, 0, err
		}
		if dm == nil {
			break
		}
		total++
		top.offer(dm.Score, dm.IndexInternalID)
		sctx.DocumentMatchPool.Put(dm)
	}
	out, err := top.page(r)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// newTieHeap returns an empty heap of the limit best matches whose
// list_keys it reads from r, through keys when r is a scorch snapshot.
func newTieHeap(r index.IndexReader, limit int, keys *keyCache) (*tieHeap, error) {
	dvr, err := r.DocValueReader([]string{"list_key"})
	if err != nil {
		return nil, err
	}
	read := func(id index.IndexInternalID) string {
		var key string
		_ = dvr.VisitDocValues(id, func(_ string, term []byte) { key = string(term) })
		return key
	}
	if is, ok := r.(*scorch.IndexSnapshot); ok && keys != nil {
		read = keys.reader(is.Segments(), read)
	}
	return &tieHeap{limit: limit, key: func(c *candidate) string {
		if !c.keyed {
			c.keyed, c.key = true, read(c.id)
		}
		return c.key
	}}, nil
}

// keyCache keeps the list_keys read from each segment, by document. A
// segment never changes, and a search reads the keys of the matches that
// tie at its page boundary (about 80 for a two-word query at 10,000
// bundles), each a doc value of its own chunk, read and decoded afresh: a
// twentieth of a search before they were kept.
type keyCache struct {
	mu   sync.Mutex
	segs map[uint64]*segmentKeys // by segment id
}

// segmentKeys are one segment's keys by document number, nil until read.
type segmentKeys struct {
	keys []atomic.Pointer[string]
}

// reader returns read with the keys of segs kept in the cache. The cache
// drops the segments segs does not hold (merged away) when it holds more
// than segs.
func (kc *keyCache) reader(segs []*scorch.SegmentSnapshot, read func(index.IndexInternalID) string) func(index.IndexInternalID) string {
	offs := make([]uint64, len(segs))
	kept := make([]*segmentKeys, len(segs))
	kc.mu.Lock()
	if kc.segs == nil {
		kc.segs = map[uint64]*segmentKeys{}
	}
	var off uint64
	for i, s := range segs {
		n := s.Segment().Count()
		sk := kc.segs[s.Id()]
		if sk == nil || uint64(len(sk.keys)) != n {
			sk = &segmentKeys{keys: make([]atomic.Pointer[string], n)}
			kc.segs[s.Id()] = sk
		}
		offs[i], kept[i] = off, sk
		off += n
	}
	if len(kc.segs) > len(segs) {
		live := make(map[uint64]*segmentKeys, len(segs))
		for _, s := range segs {
			live[s.Id()] = kc.segs[s.Id()]
		}
		kc.segs = live
	}
	kc.mu.Unlock()
	return func(id index.IndexInternalID) string {
		n := id.Value()
		i := sort.Search(len(offs), func(x int) bool { return offs[x] > n }) - 1
		if i < 0 || n-offs[i] >= uint64(len(kept[i].keys)) {
			return read(id)
		}
		slot := &kept[i].keys[n-offs[i]]
		if p := slot.Load(); p != nil {
			return *p
		}
		key := read(id)
		slot.Store(&key)
		return key
	}
}

// page returns the heap's matches best first, with their stored hits.
func (h *tieHeap) page(r index.IndexReader) ([]Hit, error) {
	best := h.c
	slices.SortFunc(best, func(a, b *candidate) int { return -h.compare(a, b) })
	out := make([]Hit, 0, len(best))
	hits := newHitReader(r)
	for _, c := range best {
		hit, err := hits.hit(c.id)
		if err != nil {
			return nil, err
		}
		hit.Score = c.score
		out = append(out, hit)
	}
	return out, nil
}

// listed returns the first limit matches of q in list_key order, unscored,
// and how many matched: bleve's own collector sorted by list_key, as a
// search request would run it, with the page's stored hits read by
// hitReader on the same snapshot.
func (ix *Index) listed(ctx context.Context, q query.Query, limit int) ([]Hit, uint64, error) {
	r, s, done, err := ix.searcher(ctx, q, search.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, 0, err
	}
	defer done()
	coll := collector.NewTopNCollector(limit, 0, search.ParseSortOrderStrings([]string{"list_key"}))
	if err := coll.Collect(ctx, s, r); err != nil {
		return nil, 0, err
	}
	hits := newHitReader(r)
	out := make([]Hit, 0, len(coll.Results()))
	for _, dm := range coll.Results() {
		h, err := hits.hit(dm.IndexInternalID)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, h)
	}
	return out, coll.Total(), nil
}

// searcher opens a reader on the index's current snapshot and q's
// searcher on it; done closes both.
func (ix *Index) searcher(ctx context.Context, q query.Query, opts search.SearcherOptions) (index.IndexReader, search.Searcher, func(), error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := q.Searcher(ctx, r, ix.bi.Mapping(), opts)
	if err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	return r, s, func() { s.Close(); r.Close() }, nil
}

// storedHitOf decodes the stored "hit" field of a document.
func storedHitOf(r index.IndexReader, id index.IndexInternalID) (Hit, error) {
	ext, err := r.ExternalID(id)
	if err != nil {
		return Hit{}, err
	}
	doc, err := r.Document(ext)
	if err != nil {
		return Hit{}, err
	}
	if doc == nil {
		return Hit{}, fmt.Errorf("hit %s: document gone", ext)
	}
	var raw []byte
	doc.VisitFields(func(f index.Field) {
		if f.Name() == "hit" {
			raw = f.Value()
		}
	})
	if raw == nil {
		return Hit{}, errors.New("hit " + ext + ": no stored hit")
	}
	return decodeStoredHit(ext, raw)
}

// hitReader reads the stored hits of matches by internal id. On a scorch
// snapshot it decodes the document's stored fields once, in the segment
// the id falls in; storedHitOf decodes them twice (ExternalID, then
// Document) and Document also looks the external id up in every segment's
// dictionary, which made loading a page of ten hits about a tenth of a
// search.
type hitReader struct {
	r    index.IndexReader
	segs []*scorch.SegmentSnapshot
	// offs[i] is the first internal id of segs[i]: ids number the
	// documents of the snapshot's segments in order, deleted ones included.
	offs []uint64
}

func newHitReader(r index.IndexReader) *hitReader {
	h := &hitReader{r: r}
	if is, ok := r.(*scorch.IndexSnapshot); ok {
		var off uint64
		for _, s := range is.Segments() {
			h.segs = append(h.segs, s)
			h.offs = append(h.offs, off)
			off += s.Segment().Count()
		}
	}
	return h
}

func (h *hitReader) hit(id index.IndexInternalID) (Hit, error) {
	if h.segs == nil {
		return storedHitOf(h.r, id)
	}
	n := id.Value()
	i := sort.Search(len(h.offs), func(x int) bool { return h.offs[x] > n }) - 1
	if i < 0 {
		return Hit{}, fmt.Errorf("document number %d not found", n)
	}
	var ext string
	var raw []byte
	err := h.segs[i].VisitDocument(n-h.offs[i], func(name string, _ byte, val []byte, _ []uint64) bool {
		switch name {
		case "_id":
			ext = string(val)
		case "hit":
			raw = append([]byte(nil), val...)
		}
		return true
	})
	switch {
	case err != nil:
		return Hit{}, err
	case ext == "":
		return Hit{}, fmt.Errorf("document number %d not found", n)
	case raw == nil:
		return Hit{}, errors.New("hit " + ext + ": no stored hit")
	}
	return decodeStoredHit(ext, raw)
}

// candidate is a match kept for the page; its list_key is read on demand.
type candidate struct {
	score float64
	id    index.IndexInternalID
	key   string
	keyed bool
}

// tieHeap keeps the limit best candidates, the worst at the root.
type tieHeap struct {
	c     []*candidate
	limit int
	key   func(*candidate) string
}

// compare orders a before b (> 0) when it scores higher or, scoring the
// same, has the lower list_key.
func (h *tieHeap) compare(a, b *candidate) int {
	switch {
	case a.score > b.score:
		return 1
	case a.score < b.score:
		return -1
	}
	ka, kb := h.key(a), h.key(b)
	switch {
	case ka < kb:
		return 1
	case ka > kb:
		return -1
	}
	return 0
}

// offer considers a match; id is copied only when the match is kept. The
// heap is sifted here rather than through container/heap, whose interface
// calls were a third of offer's time, and offer runs for every match.
func (h *tieHeap) offer(score float64, id index.IndexInternalID) {
	if len(h.c) < h.limit {
		h.c = append(h.c, &candidate{score: score, id: slices.Clone(id)})
		h.up(len(h.c) - 1)
		return
	}
	worst := h.c[0]
	if score < worst.score {
		return
	}
	c := &candidate{score: score, id: slices.Clone(id)}
	if h.compare(c, worst) <= 0 {
		return
	}
	h.c[0] = c
	h.down(0)
}

// up moves h.c[i] towards the root while it is worse than its parent.
func (h *tieHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h.compare(h.c[i], h.c[parent]) >= 0 {
			return
		}
		h.c[i], h.c[parent] = h.c[parent], h.c[i]
		i = parent
	}
}

// down moves h.c[i] away from the root while a child is worse.
func (h *tieHeap) down(i int) {
	for {
		worst := i
		for _, child := range []int{2*i + 1, 2*i + 2} {
			if child < len(h.c) && h.compare(h.c[child], h.c[worst]) < 0 {
				worst = child
			}
		}
		if worst == i {
			return
		}
		h.c[i], h.c[worst] = h.c[worst], h.c[i]
		i = worst
	}
}

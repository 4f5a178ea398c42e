package index

import (
	"context"
	"math"
	"sort"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/scorer"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// topText is topScored for a text query of the latest versions in its
// common shape, without bleve's searchers: textQuery is a disjunction of
// two match queries (each a disjunction of the text's terms in one field)
// and four exact-id terms, and when those four are not in the index the
// page comes from the terms' postings, read segment by segment as scorch's
// term field reader reads them, merged here by document. bleve's two
// levels of disjunction searchers over its term searchers (a merge, a
// scorer and a pooled match for every document at each level) were most
// of a search's time.
//
// The scores are bleve's to the bit, its arithmetic redone in its order of
// operations. A term's posting scores as its TermQueryScorer scores it
// (checked against that scorer on every term's first posting, every
// search: a differing bleve sends the search to topScored). Each
// disjunction orders its clauses by match count (bleve's sort, so equal
// counts end up as bleve leaves them), sums its clauses' weights in that
// order for the query norm, and scores a document as the sum of its
// matching clauses' scores in that order times the share of its clauses
// that match. Any other shape (a field analyzed to no terms, or to more
// than bleve's slice disjunction takes, an exact term in the index, an
// index that is not scorch's)
// answers ok false and goes to topScored as well.
func (ix *Index) topText(ctx context.Context, text string, filter query.Query, limit int) (hits []Hit, total uint64, ok bool, err error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return nil, 0, false, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, false, err
	}
	defer r.Close()
	p := &textPlan{ctx: ctx, r: r, m: ix.bi.Mapping()}
	defer p.close()
	if ok, err := p.build(text); !ok || err != nil {
		return nil, 0, false, err
	}
	f := &filterCursor{}
	if filter != nil {
		if f.s, err = p.own(filter.Searcher(ctx, r, p.m, search.SearcherOptions{Score: "none"})); err != nil {
			return nil, 0, false, err
		}
	}
	top, err := newTieHeap(r, limit, &ix.keys)
	if err != nil {
		return nil, 0, false, err
	}
	total, ok, err = p.collect(top, f)
	if !ok || err != nil {
		return nil, 0, false, err
	}
	if hits, err = top.page(r); err != nil {
		return nil, 0, false, err
	}
	return hits, total, true, nil
}

// textPlan is textQuery's six clauses in query order: the two match
// queries, then the exact terms (which match nothing here, but weigh in
// the norm and count in the share).
type textPlan struct {
	ctx        context.Context
	r          index.IndexReader
	m          mapping.IndexMapping
	clauses    [6]textClause
	titleFirst bool // title's clause sorts before text's in the top disjunction
	docs       uint64
	segs       []*scorch.SegmentSnapshot
	offsets    []uint64 // of segs' first documents
	queryNorm  float64
	cursors    []*termCursor
	owned      []search.Searcher
}

// textClause is a match query's terms in bleve's order, or an exact term
// that matches nothing.
type textClause struct {
	terms  []*termCursor
	weight float64
	count  uint64
}

// termCursor is one term's postings, segment by segment, read and scored
// as bleve's term searcher reads and scores them, without its term field
// reader's per-posting work (bleve's Posting.Norm, a square root and a
// division for every posting, was 6 % of a search) or the pooled match it
// wraps each one in.
type termCursor struct {
	term, field             string
	boost, idf, queryWeight float64
	docs                    uint64 // the term's documents: the term searcher's Count
	segs                    []termSegment
	seg                     int     // the segment being read
	ok                      bool    // positioned on a match
	at                      uint64  // its document number
	score                   float64 // and score
	// first is the term's first posting as bleve's reader reports it,
	// for checkScores.
	first    index.TermFieldDoc
	hasFirst bool
}

// termSegment is the term's postings in one segment, whose documents are
// numbered from offset in the snapshot.
type termSegment struct {
	itr    segment.PostingsIterator
	offset uint64
}

// weight is bleve's TermQueryScorer.Weight.
func (t *termCursor) weight() float64 {
	sum := t.boost * t.idf
	return sum * sum
}

// next reads the term's next match and scores it as TermQueryScorer.Score
// does under the default (tf-idf) model.
func (t *termCursor) next() error {
	for t.seg < len(t.segs) {
		ts := &t.segs[t.seg]
		p, err := ts.itr.Next()
		if err != nil {
			t.ok = false
			return err
		}
		if p == nil {
			t.seg++
			continue
		}
		freq := p.Frequency()
		norm := postingNorm(p)
		var tf float64
		if freq < scorer.MaxSqrtCache {
			tf = scorer.SqrtCache[int(freq)]
		} else {
			tf = math.Sqrt(float64(freq))
		}
		score := tf * norm * t.idf
		if t.queryWeight != 1.0 {
			score = score * t.queryWeight
		}
		t.ok, t.at, t.score = true, p.Number()+ts.offset, score
		if !t.hasFirst {
			t.hasFirst = true
			t.first = index.TermFieldDoc{ID: index.NewIndexInternalID(nil, t.at), Freq: freq, Norm: p.Norm()}
		}
		return nil
	}
	t.ok = false
	return nil
}

// normBits is what zapx's postings hold for a field's length; norms holds
// Posting.Norm of the short lengths, computed by the same expression.
type normBits interface{ NormUint64() uint64 }

var norms = func() (n [256]float64) {
	for i := range n {
		n[i] = float64(float32(1.0 / math.Sqrt(float64(uint32(i)))))
	}
	return n
}()

func postingNorm(p segment.Posting) float64 {
	if nb, ok := p.(normBits); ok {
		if l := nb.NormUint64(); l < uint64(len(norms)) {
			return norms[l]
		}
	}
	return p.Norm()
}

func (p *textPlan) own(s search.Searcher, err error) (search.Searcher, error) {
	if err == nil {
		p.owned = append(p.owned, s)
	}
	return s, err
}

func (p *textPlan) close() {
	for _, s := range p.owned {
		_ = s.Close()
	}
}

// term opens t's postings in field in every segment, as scorch's term
// field reader does (deleted documents excepted), with bleve's idf for it
// (the term searcher's: 1 + ln(documents / (documents with the term + 1))).
func (p *textPlan) term(t, field string, boost float64) (*termCursor, error) {
	c := &termCursor{term: t, field: field, boost: boost}
	for i, ss := range p.segs {
		dict, err := ss.Segment().Dictionary(field)
		if err != nil {
			return nil, err
		}
		pl, err := dict.PostingsList([]byte(t), ss.Deleted(), nil)
		if err != nil {
			return nil, err
		}
		c.docs += pl.Count()
		c.segs = append(c.segs, termSegment{itr: pl.Iterator(true, true, false, nil), offset: p.offsets[i]})
	}
	c.idf = 1.0 + math.Log(float64(p.docs)/float64(c.docs+1.0))
	p.cursors = append(p.cursors, c)
	return c, nil
}

// build opens the clauses' terms and gives each the top disjunction's
// query norm (it overwrites the match queries' own), or reports false for
// a shape it does not take.
func (p *textPlan) build(text string) (bool, error) {
	is, ok := p.r.(*scorch.IndexSnapshot)
	if !ok {
		return false, nil
	}
	docs, err := p.r.DocCount()
	if err != nil {
		return false, err
	}
	p.docs = docs
	p.segs = is.Segments()
	var off uint64
	for _, ss := range p.segs {
		p.offsets = append(p.offsets, off)
		off += ss.Segment().Count()
	}
	for i, f := range []struct {
		field string
		boost float64
	}{{"title", boostTitle}, {"text", boostText}} {
		analyzer := p.m.AnalyzerNamed(p.m.AnalyzerNameForPath(f.field))
		if analyzer == nil {
			return false, nil
		}
		tokens := analyzer.Analyze([]byte(text))
		if len(tokens) == 0 || len(tokens) > searcher.DisjunctionHeapTakeover {
			return false, nil
		}
		c := &p.clauses[i]
		for _, tok := range tokens {
			t, err := p.term(string(tok.Term), f.field, f.boost)
			if err != nil {
				return false, err
			}
			c.terms = append(c.terms, t)
		}
		c.terms = inBleveOrder(c.terms, func(t *termCursor) uint64 { return t.docs })
		for _, t := range c.terms {
			c.weight += t.weight()
			c.count += t.docs
		}
	}
	for i, f := range []struct {
		field string
		boost float64
	}{{"entry_id", boostExactID}, {"verb", boostExactField}, {"cookbook_id", boostExactField}, {"tags", boostExactField}} {
		t, err := p.term(text, f.field, f.boost)
		if err != nil || t.docs != 0 {
			return false, err
		}
		p.clauses[2+i] = textClause{weight: t.weight()}
	}
	order := inBleveOrder([]int{0, 1, 2, 3, 4, 5}, func(c int) uint64 { return p.clauses[c].count })
	sumOfSquaredWeights := 0.0
	for _, c := range order {
		sumOfSquaredWeights += p.clauses[c].weight
	}
	p.queryNorm = 1.0 / math.Sqrt(sumOfSquaredWeights)
	for _, t := range p.cursors {
		t.queryWeight = t.boost * t.idf * p.queryNorm
	}
	for _, c := range order {
		if c < 2 {
			p.titleFirst = c == 0
			break
		}
	}
	return true, nil
}

// inBleveOrder returns items in the order bleve's disjunction searcher
// puts its clauses in: sort.Sort of searcher.OrderedSearcherList by count,
// whose order of equal counts depends on nothing but the counts, so the
// same sort of stand-ins with the same counts leaves them the same way.
func inBleveOrder[T any](items []T, count func(T) uint64) []T {
	order := make(searcher.OrderedSearcherList, len(items))
	for i, it := range items {
		order[i] = countOnly{n: count(it), item: i}
	}
	sort.Sort(order)
	out := make([]T, len(items))
	for i, o := range order {
		out[i] = items[o.(countOnly).item]
	}
	return out
}

// checkScores compares every positioned term's first score with what
// bleve's own TermQueryScorer makes of the same posting as bleve's reader
// reports it: a guard against a bleve whose scoring (or norms) changed
// under this copy of it.
func (p *textPlan) checkScores(sctx *search.SearchContext) bool {
	for _, t := range p.cursors {
		if !t.ok {
			continue
		}
		sc := scorer.NewTermQueryScorer([]byte(t.term), t.field, t.boost, p.docs, t.docs, 0, search.SearcherOptions{})
		sc.SetQueryNorm(p.queryNorm)
		dm := sc.Score(sctx, &t.first)
		same := dm.Score == t.score && sc.Weight() == t.weight()
		sctx.DocumentMatchPool.Put(dm)
		if !same {
			return false
		}
	}
	return true
}

// collect visits every matching document, scoring it as the top
// disjunction would, offers those the filter accepts to top, and counts
// them. It reports false when checkScores finds bleve scoring otherwise.
func (p *textPlan) collect(top *tieHeap, f *filterCursor) (uint64, bool, error) {
	title, body := &p.clauses[0], &p.clauses[1]
	poolSize := 1
	if f.s != nil {
		poolSize += f.s.DocumentMatchPoolSize()
	}
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(poolSize, 0), IndexReader: p.r}
	for _, t := range p.cursors[:len(title.terms)+len(body.terms)] {
		if err := t.next(); err != nil {
			return 0, false, err
		}
	}
	if !p.checkScores(sctx) {
		return 0, false, nil
	}
	var total uint64
	var id index.IndexInternalID
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := p.ctx.Err(); err != nil {
				return 0, false, err
			}
		}
		low := body.lowest(title.lowest(nil))
		if low == nil {
			return total, true, nil
		}
		at := low.at
		id = index.NewIndexInternalID(id, at)
		keep, err := f.accepts(sctx, id)
		if err != nil {
			return 0, false, err
		}
		if keep {
			total++
			top.offer(p.score(at), id)
		}
		for _, c := range []*textClause{title, body} {
			if err := c.advance(at); err != nil {
				return 0, false, err
			}
		}
	}
}

// score is the top disjunction's score of document at: its matching
// clauses' scores summed in its order, times the share of its six clauses
// that match.
func (p *textPlan) score(at uint64) float64 {
	first, firstOK := p.clauses[0].score(at)
	second, secondOK := p.clauses[1].score(at)
	if !p.titleFirst {
		first, second, firstOK, secondOK = second, first, secondOK, firstOK
	}
	var sum float64
	matched := 0
	if firstOK {
		sum += first
		matched++
	}
	if secondOK {
		sum += second
		matched++
	}
	return sum * (float64(matched) / float64(len(p.clauses)))
}

// lowest returns whichever of low (which may be nil) and the clause's
// positioned terms is on the lowest document number.
func (c *textClause) lowest(low *termCursor) *termCursor {
	for _, t := range c.terms {
		if t.ok && (low == nil || t.at < low.at) {
			low = t
		}
	}
	return low
}

// score is the clause's score of document at, as bleve's disjunction
// scores it, and whether any of its terms matches there.
func (c *textClause) score(at uint64) (float64, bool) {
	var sum float64
	matched := 0
	for _, t := range c.terms {
		if t.ok && t.at == at {
			sum += t.score
			matched++
		}
	}
	if matched == 0 {
		return 0, false
	}
	return sum * (float64(matched) / float64(len(c.terms))), true
}

// advance moves every term positioned on document at to its next match.
func (c *textClause) advance(at uint64) error {
	for _, t := range c.terms {
		if t.ok && t.at == at {
			if err := t.next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// countOnly stands for a clause in bleve's ordering of a disjunction's
// clauses, which reads nothing but their counts.
type countOnly struct {
	search.Searcher
	n    uint64
	item int
}

func (c countOnly) Count() uint64 { return c.n }

package index

import (
	"context"
	"math"
	"sort"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// topText is topScored for a text query of the latest versions in its
// common shape, without bleve's disjunction searchers: textQuery is a
// disjunction of two match queries (each a disjunction of the text's terms
// in one field) and four exact-id terms, and when those four are not in the
// index the page comes from the terms' own searchers merged here by
// document. bleve's two levels of disjunction searchers (a merge, a scorer
// and a pooled match for every document at each level) were half of a
// search's time.
//
// The scores are bleve's to the bit: the term searchers are bleve's, and
// what the disjunctions add is redone in their order of operations. Each
// disjunction orders its clauses by match count (bleve's sort, so equal
// counts end up as bleve leaves them), sums its clauses' weights in that
// order for the query norm, and scores a document as the sum of its
// matching clauses' scores in that order times the share of its clauses
// that match. Any other shape (a field analyzed to no terms, or to more
// than bleve's slice disjunction takes, an exact term in the index)
// answers ok false and goes to topScored.
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
	if total, err = p.collect(top, f); err != nil {
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
	owned      []search.Searcher
}

// textClause is a match query's term searchers in bleve's order with
// their current matches, or an exact term that matches nothing.
type textClause struct {
	terms  []search.Searcher
	currs  []*search.DocumentMatch
	weight float64
	count  uint64
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

func (p *textPlan) term(t, field string, boost float64) (search.Searcher, error) {
	tq := query.NewTermQuery(t)
	tq.SetField(field)
	tq.SetBoost(boost)
	return p.own(tq.Searcher(p.ctx, p.r, p.m, search.SearcherOptions{}))
}

// build makes the clauses' searchers and gives every term the top
// disjunction's query norm (it overwrites the match queries' own), or
// reports false for a shape it does not take.
func (p *textPlan) build(text string) (bool, error) {
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
			s, err := p.term(string(tok.Term), f.field, f.boost)
			if err != nil {
				return false, err
			}
			c.terms = append(c.terms, s)
		}
		sort.Sort(searcher.OrderedSearcherList(c.terms))
		for _, s := range c.terms {
			c.weight += s.Weight()
			c.count += s.Count()
		}
	}
	for i, f := range []struct {
		field string
		boost float64
	}{{"entry_id", boostExactID}, {"verb", boostExactField}, {"cookbook_id", boostExactField}, {"tags", boostExactField}} {
		s, err := p.term(text, f.field, f.boost)
		if err != nil || s.Count() != 0 {
			return false, err
		}
		p.clauses[2+i] = textClause{weight: s.Weight()}
	}
	order := make(searcher.OrderedSearcherList, len(p.clauses))
	for i := range p.clauses {
		order[i] = countOnly{n: p.clauses[i].count, clause: i}
	}
	sort.Sort(order)
	sumOfSquaredWeights := 0.0
	for _, o := range order {
		sumOfSquaredWeights += p.clauses[o.(countOnly).clause].weight
	}
	queryNorm := 1.0 / math.Sqrt(sumOfSquaredWeights)
	for _, s := range p.owned {
		s.SetQueryNorm(queryNorm)
	}
	for _, o := range order {
		if c := o.(countOnly).clause; c < 2 {
			p.titleFirst = c == 0
			break
		}
	}
	return true, nil
}

// collect visits every matching document, scoring it as the top
// disjunction would, offers those the filter accepts to top, and counts
// them.
func (p *textPlan) collect(top *tieHeap, f *filterCursor) (uint64, error) {
	title, body := &p.clauses[0], &p.clauses[1]
	poolSize := len(title.terms) + len(body.terms) + 1
	if f.s != nil {
		poolSize += f.s.DocumentMatchPoolSize()
	}
	sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(poolSize, 0), IndexReader: p.r}
	for _, c := range []*textClause{title, body} {
		c.currs = make([]*search.DocumentMatch, len(c.terms))
		for i, s := range c.terms {
			var err error
			if c.currs[i], err = s.Next(sctx); err != nil {
				return 0, err
			}
		}
	}
	var total uint64
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := p.ctx.Err(); err != nil {
				return 0, err
			}
		}
		low, _ := title.lowest(nil)
		doc, at := body.lowest(low)
		if doc == nil {
			return total, nil
		}
		keep, err := f.accepts(sctx, doc)
		if err != nil {
			return 0, err
		}
		if keep {
			total++
			top.offer(p.score(at), doc.IndexInternalID)
		}
		for _, c := range []*textClause{title, body} {
			if err := c.advance(sctx, at); err != nil {
				return 0, err
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
// current matches has the lowest document number, and that number.
func (c *textClause) lowest(low *search.DocumentMatch) (*search.DocumentMatch, uint64) {
	best := low
	for _, d := range c.currs {
		if d != nil && (best == nil || d.IndexInternalID.Value() < best.IndexInternalID.Value()) {
			best = d
		}
	}
	if best == nil {
		return nil, 0
	}
	return best, best.IndexInternalID.Value()
}

// score is the clause's score of document at, as bleve's disjunction
// scores it, and whether any of its terms matches there.
func (c *textClause) score(at uint64) (float64, bool) {
	var sum float64
	matched := 0
	for _, d := range c.currs {
		if d != nil && d.IndexInternalID.Value() == at {
			sum += d.Score
			matched++
		}
	}
	if matched == 0 {
		return 0, false
	}
	return sum * (float64(matched) / float64(len(c.currs))), true
}

// advance moves every term positioned on document at to its next match.
func (c *textClause) advance(sctx *search.SearchContext, at uint64) error {
	for i, d := range c.currs {
		if d == nil || d.IndexInternalID.Value() != at {
			continue
		}
		sctx.DocumentMatchPool.Put(d)
		var err error
		if c.currs[i], err = c.terms[i].Next(sctx); err != nil {
			return err
		}
	}
	return nil
}

// filterCursor is a filter's searcher advanced along the documents it is
// asked about, as filteredQuery's is; without a searcher it accepts all.
type filterCursor struct {
	s    search.Searcher
	ref  *search.DocumentMatch
	done bool
}

func (f *filterCursor) accepts(sctx *search.SearchContext, doc *search.DocumentMatch) (bool, error) {
	switch {
	case f.s == nil:
		return true, nil
	case f.done:
		return false, nil
	case f.ref == nil || f.ref.IndexInternalID.Compare(doc.IndexInternalID) < 0:
		if f.ref != nil {
			sctx.DocumentMatchPool.Put(f.ref)
		}
		var err error
		if f.ref, err = f.s.Advance(sctx, doc.IndexInternalID); err != nil || f.ref == nil {
			f.done = true
			return false, err
		}
	}
	return f.ref.IndexInternalID.Equals(doc.IndexInternalID), nil
}

// countOnly stands for a clause in bleve's ordering of a disjunction's
// clauses, which reads nothing but their counts.
type countOnly struct {
	search.Searcher
	n      uint64
	clause int
}

func (c countOnly) Count() uint64 { return c.n }

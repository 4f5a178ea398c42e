package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/accordsai/accords-mcp/platform/canonjson"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// Query is a recipe search (decision D7). Every field is optional; filters
// are exact keyword matches and are ANDed.
type Query struct {
	// Text is free text matched against titles, descriptions, ids,
	// connector, verb and tags, ranked by relevance.
	Text        string
	CookbookID  string
	ConnectorID string
	Verb        string
	// Tags must all be present on the entry (entry tags, exact).
	Tags      []string
	EntryType string
	// AllVersions widens the search from the latest version of each
	// cookbook to every stored version.
	AllVersions bool
	// Limit caps the hits (DefaultLimit when 0, at most MaxLimit).
	Limit int
}

// Search limits.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
	// MaxQueryBytes and MaxQueryTerms bound the free text: every term
	// becomes a searcher on several fields, so a long text costs memory
	// and time in proportion (a 1 MB query cost 750 MB).
	MaxQueryBytes = 1024
	MaxQueryTerms = 32
)

// QueryTerms counts the words of text as the analyzer splits them (runs of
// letters and digits).
func QueryTerms(text string) int {
	return len(strings.FieldsFunc(text, notWordRune))
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// ClipQuery shortens text to MaxQueryTerms words within MaxQueryBytes, for
// callers that derive the text themselves (the route resolver) and would
// rather search less than fail.
func ClipQuery(text string) string {
	if len(text) <= MaxQueryBytes && QueryTerms(text) <= MaxQueryTerms {
		return text
	}
	words := strings.FieldsFunc(text, notWordRune)
	if len(words) > MaxQueryTerms {
		words = words[:MaxQueryTerms]
	}
	out := strings.Join(words, " ")
	for len(out) > MaxQueryBytes {
		i := strings.LastIndexByte(out[:MaxQueryBytes], ' ')
		if i <= 0 {
			return ""
		}
		out = out[:i]
	}
	return out
}

// Result is a page of hits in rank order. Total counts every match.
type Result struct {
	Items []Hit  `json:"items"`
	Total uint64 `json:"total"`
}

// Field boosts: a word in an entry title counts three times a word of the
// text field (description, cookbook title, ids, verb, tags); an exact id or
// verb typed as the query ranks first. The cookbook description is not
// searched: it would make every entry of a cookbook match words that
// describe only some of them.
const (
	boostTitle      = 3.0
	boostText       = 1.0
	boostExactID    = 6.0
	boostExactField = 4.0
)

// Search runs q. Hits are ordered by score (descending), then higher
// version, then cookbook_id, then entry_id, so equal-scoring results always
// come back in the same order. A query without text lists every match in
// that tie-break order (score 0).
//
// Text queries of the latest versions are mostly answered by topText,
// which merges the text's term searchers itself; the rest are collected by
// topScored. Both read the tie-break key (list_key) of a match only when
// its score ties with one it is ordered against: a bleve sort on it would
// read it for every match.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.bi == nil {
		return Result{}, errors.New("index closed")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		limit = MaxLimit
	}
	bq := query.NewBooleanQuery(nil, nil, nil)
	text := strings.TrimSpace(q.Text)
	var tq query.Query
	if text != "" {
		tq = textQuery(text, q.AllVersions)
		bq.AddMust(tq)
	}
	var filters []query.Query
	term := func(field, value string) query.Query {
		t := query.NewTermQuery(value)
		t.SetField(field)
		return t
	}
	add := func(field, value string) {
		if value != "" {
			filters = append(filters, term(field, value))
		}
	}
	add("cookbook_id", q.CookbookID)
	add("connector_id", q.ConnectorID)
	add("verb", q.Verb)
	add("entry_type", q.EntryType)
	for _, tag := range q.Tags {
		add("tags", tag)
	}
	var filter query.Query
	switch {
	case len(filters) > 0 && text != "":
		// Filters never change the score of a text query.
		filter = query.NewConjunctionQuery(filters)
		bq.AddFilter(filter)
	case len(filters) > 0:
		// Without text nothing is scored; the filters themselves drive the
		// iteration over their postings (a bleve Filter would scan every
		// document of a match-all instead).
		bq.AddMust(query.NewConjunctionQuery(filters))
	}
	// A text query of the latest versions reaches only their documents
	// (textQuery). A listing excludes older versions (few documents), far
	// cheaper than requiring the latest flag (almost every document).
	switch {
	case text == "" && !q.AllVersions:
		bq.AddMustNot(term("latest", "0"))
	case text == "" && len(filters) == 0:
		bq.AddMust(query.NewMatchAllQuery())
	}
	var top query.Query = bq
	collect := ix.topScored
	switch {
	case text == "":
		collect = ix.listed
	case len(filters) == 0:
		// Text alone: its disjunction itself, not the boolean holding it,
		// whose conjunction of one clause added a layer to every match and
		// changed no score (it sets the query norm the disjunction sets
		// itself, and adds the one score to zero).
		top = tq
	default:
		// Text and filters: the disjunction filtered, without those two
		// layers either.
		top = &filteredQuery{text: tq, filter: filter}
	}
	if text != "" && !q.AllVersions {
		items, total, ok, err := ix.topText(ctx, text, filter, limit)
		if err != nil {
			return Result{}, fmt.Errorf("search: %w", err)
		}
		if ok {
			return Result{Items: items, Total: total}, nil
		}
	}
	items, total, err := collect(ctx, top, limit)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	return Result{Items: items, Total: total}, nil
}

// decodeStoredHit decodes the stored "hit" field of document id. The index
// writes it with json.Marshal, so it is nearly always read in one pass
// (canonjson; ten of them through encoding/json were a tenth of a search);
// anything else goes to encoding/json.
func decodeStoredHit(id string, raw []byte) (Hit, error) {
	sh, ok := canonjson.Parse(raw, storedHitFields)
	if !ok {
		if err := json.Unmarshal(raw, &sh); err != nil {
			return Hit{}, fmt.Errorf("decode hit %s: %w", id, err)
		}
	}
	hit := sh.Hit
	hit.versionSort = sh.VersionSort
	return hit, nil
}

// storedHitFields is storedHit's encoding in struct order (a test holds it
// to the struct's tags).
var storedHitFields = []canonjson.Field[storedHit]{
	canonjson.NewField(`"cookbook_id":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Str(&h.CookbookID) }),
	canonjson.NewField(`"version":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Str(&h.Version) }),
	canonjson.NewField(`"entry_id":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Str(&h.EntryID) }),
	canonjson.NewField(`"entry_type":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Str(&h.EntryType) }),
	canonjson.NewField(`"title":`, true, func(p *canonjson.Scanner, h *storedHit) bool { return p.Set(&h.Title) }),
	canonjson.NewField(`"connector_id":`, true, func(p *canonjson.Scanner, h *storedHit) bool { return p.Set(&h.ConnectorID) }),
	canonjson.NewField(`"verb":`, true, func(p *canonjson.Scanner, h *storedHit) bool { return p.Set(&h.Verb) }),
	canonjson.NewField(`"tags":`, true, func(p *canonjson.Scanner, h *storedHit) bool { return p.List(&h.Tags) }),
	canonjson.NewField(`"latest":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Bool(&h.Latest) }),
	canonjson.NewField(`"score":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Float(&h.Score) }),
	canonjson.NewField(`"vs":`, false, func(p *canonjson.Scanner, h *storedHit) bool { return p.Str(&h.VersionSort) }),
}

// textQuery matches text against the latest versions' words (title, text)
// and, with allVersions, the older versions' too (old_title, old_text). The
// exact-id clauses use fields every version shares; for the latest versions
// alone each excludes older ones itself, which costs only when the id
// matches at all.
func textQuery(text string, allVersions bool) query.Query {
	match := func(field string, boost float64) query.Query { return matchQuery(text, field, boost) }
	exact := func(field string, boost float64) query.Query {
		return &exactQuery{term: text, field: field, boost: boost, allVersions: allVersions}
	}
	clauses := []query.Query{
		match("title", boostTitle),
		match("text", boostText),
		exact("entry_id", boostExactID),
		exact("verb", boostExactField),
		exact("cookbook_id", boostExactField),
		exact("tags", boostExactField),
	}
	if allVersions {
		clauses = append(clauses, match("old_title", boostTitle), match("old_text", boostText))
	}
	return query.NewDisjunctionQuery(clauses)
}

// matchQuery is text matched against the words of field.
func matchQuery(text, field string, boost float64) query.Query {
	m := query.NewMatchQuery(text)
	m.SetField(field)
	m.SetBoost(boost)
	return m
}

// exactQuery is a text query's clause matching the whole text as one
// keyword of field (an id, a verb, a tag), limited to the latest versions
// unless allVersions. It is bleve's boolean of that term and "not an older
// version" when the term is in the index, and the bare term otherwise,
// which matches nothing either way: a text of several words never names
// an id, so this is most searches' case, and it saved four of the six
// clauses their boolean, conjunction and second term reader. The bare term
// weighs what the boolean does (the boolean's weight is its one must
// clause's, the conjunction's its one term's), so the query norm, and with
// it every score, is the same to the bit.
type exactQuery struct {
	term, field string
	boost       float64
	allVersions bool
}

func (q *exactQuery) Searcher(ctx context.Context, r index.IndexReader, m mapping.IndexMapping, opts search.SearcherOptions) (search.Searcher, error) {
	t := query.NewTermQuery(q.term)
	t.SetField(q.field)
	t.SetBoost(q.boost)
	ts, err := t.Searcher(ctx, r, m, opts)
	if err != nil || q.allVersions || ts.Count() == 0 {
		return ts, err
	}
	if err := ts.Close(); err != nil {
		return nil, err
	}
	older := query.NewTermQuery("0")
	older.SetField("latest")
	return query.NewBooleanQuery([]query.Query{t}, nil, []query.Query{older}).Searcher(ctx, r, m, opts)
}

// filteredQuery is a scored text query whose matches must also match an
// unscored filter: what bleve's boolean with a must clause and a filter
// does, without the boolean and conjunction it puts around the text (each
// adds the one score to zero and passes on the same query norm, so scores
// are the same to the bit). As there, the text's matches drive and the
// filter is advanced to each.
type filteredQuery struct {
	text, filter query.Query
}

func (q *filteredQuery) Searcher(ctx context.Context, r index.IndexReader, m mapping.IndexMapping, opts search.SearcherOptions) (search.Searcher, error) {
	ts, err := q.text.Searcher(ctx, r, m, opts)
	if err != nil {
		return nil, err
	}
	fs, err := q.filter.Searcher(ctx, r, m, search.SearcherOptions{Score: "none"})
	if err != nil {
		ts.Close()
		return nil, err
	}
	fc := &filterCursor{s: fs}
	accept := func(sctx *search.SearchContext, d *search.DocumentMatch) bool {
		// An error ends the filter's matches, as in bleve's boolean.
		keep, _ := fc.accepts(sctx, d.IndexInternalID)
		return keep
	}
	return &closeBoth{FilteringSearcher: searcher.NewFilteringSearcher(ctx, ts, accept), other: fs}, nil
}

// filterCursor is a filter's searcher advanced along the documents it is
// asked about, in increasing order (filteredQuery's and topText's); without
// a searcher it accepts all. An error ends its matches.
type filterCursor struct {
	s    search.Searcher
	ref  *search.DocumentMatch
	done bool
}

func (f *filterCursor) accepts(sctx *search.SearchContext, doc index.IndexInternalID) (bool, error) {
	switch {
	case f.s == nil:
		return true, nil
	case f.done:
		return false, nil
	case f.ref == nil || f.ref.IndexInternalID.Compare(doc) < 0:
		if f.ref != nil {
			sctx.DocumentMatchPool.Put(f.ref)
		}
		var err error
		if f.ref, err = f.s.Advance(sctx, doc); err != nil || f.ref == nil {
			f.done = true
			return false, err
		}
	}
	return f.ref.IndexInternalID.Equals(doc), nil
}

// closeBoth is a filtering searcher that also closes its filter's
// searcher when it is closed.
type closeBoth struct {
	*searcher.FilteringSearcher
	other search.Searcher
}

func (c *closeBoth) Close() error { return errors.Join(c.FilteringSearcher.Close(), c.other.Close()) }

func (c *closeBoth) DocumentMatchPoolSize() int {
	return c.FilteringSearcher.DocumentMatchPoolSize() + c.other.DocumentMatchPoolSize()
}

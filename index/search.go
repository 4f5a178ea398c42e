package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
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
	// MaxQueryBytes and MaxQueryTerms bound the free text: each term costs a
	// searcher on several fields.
	MaxQueryBytes = 1024
	MaxQueryTerms = 32
)

// QueryTerms counts the words of text as the analyzer splits them (runs of
// letters and digits).
func QueryTerms(text string) int {
	return len(strings.FieldsFunc(text, notWordRune))
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// ClipQuery shortens text to MaxQueryTerms words within MaxQueryBytes.
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

// Field boosts: an entry-title word counts three times a text-field word;
// an exact id or verb ranks first. The cookbook description is not searched
// (it would match every entry of the cookbook).
const (
	boostTitle      = 3.0
	boostText       = 1.0
	boostExactID    = 6.0
	boostExactField = 4.0
)

// sortOrder: score when scored, then higher version (version_sort), then
// cookbook_id, entry_id, compared as strings (bleve might take an id for a
// number). Each search gets its own copy, since bleve fills sort fields.
func sortOrder(scored bool) search.SortOrder {
	var order search.SortOrder
	if scored {
		order = append(order, &search.SortScore{Desc: true})
	}
	return append(order,
		&search.SortField{Field: "version_sort", Type: search.SortFieldAsString, Desc: true},
		&search.SortField{Field: "cookbook_id", Type: search.SortFieldAsString},
		&search.SortField{Field: "entry_id", Type: search.SortFieldAsString},
	)
}

// Search runs q. Hits are ordered by score, then higher version, then
// cookbook_id, entry_id; a query without text lists every match in that
// order (score 0). Searching latest versions only filters on the latest
// flag and never changes a score.
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
	var filters []query.Query
	add := func(field, value string) {
		if value != "" {
			t := query.NewTermQuery(value)
			t.SetField(field)
			filters = append(filters, t)
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
	switch len(filters) {
	case 0:
	case 1:
		filter = filters[0]
	default:
		filter = query.NewConjunctionQuery(filters)
	}
	text := strings.TrimSpace(q.Text)
	bq := query.NewBooleanQuery(nil, nil, nil)
	switch {
	case text != "":
		bq.AddMust(textQuery(text))
		if filter != nil {
			// A filter is not scored: the scores are the text's alone.
			bq.AddFilter(filter)
		}
	case filter != nil:
		// Unscored: the filters themselves drive the iteration.
		bq.AddMust(filter)
	default:
		bq.AddMust(query.NewMatchAllQuery())
	}
	if !q.AllVersions {
		// Only the latest versions: older ones (the few documents with
		// latest false) excluded, which adds nothing to a score.
		older := query.NewBoolFieldQuery(false)
		older.SetField("latest")
		bq.AddMustNot(older)
	}
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	req.Fields = []string{"hit"}
	if text == "" {
		req.Score = "none"
	}
	req.SortByCustom(sortOrder(text != ""))
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	items := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		raw, _ := h.Fields["hit"].(string)
		hit, err := decodeStoredHit(h.ID, []byte(raw))
		if err != nil {
			return Result{}, err
		}
		if text != "" {
			hit.Score = h.Score
		}
		items = append(items, hit)
	}
	return Result{Items: items, Total: res.Total}, nil
}

// decodeStoredHit decodes the stored "hit" field of document id.
func decodeStoredHit(id string, raw []byte) (Hit, error) {
	var hit Hit
	if err := json.Unmarshal(raw, &hit); err != nil {
		return Hit{}, fmt.Errorf("decode hit %s: %w", id, err)
	}
	return hit, nil
}

// textQuery matches text against title and text-field words, and as one
// keyword against entry ids, verbs, cookbook ids and tags.
func textQuery(text string) query.Query {
	match := func(field string, boost float64) query.Query {
		m := query.NewMatchQuery(text)
		m.SetField(field)
		m.SetBoost(boost)
		return m
	}
	exact := func(field string, boost float64) query.Query {
		t := query.NewTermQuery(text)
		t.SetField(field)
		t.SetBoost(boost)
		return t
	}
	return query.NewDisjunctionQuery([]query.Query{
		match("title", boostTitle),
		match("text", boostText),
		exact("entry_id", boostExactID),
		exact("verb", boostExactField),
		exact("cookbook_id", boostExactField),
		exact("tags", boostExactField),
	})
}

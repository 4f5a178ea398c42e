package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
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
)

// Result is a page of hits in rank order. Total counts every match.
type Result struct {
	Items []Hit  `json:"items"`
	Total uint64 `json:"total"`
}

// Field boosts: a word in an entry title counts most, then ids and verbs
// (as words), then descriptions; the cookbook title counts least. The
// cookbook description is not searched: it would make every entry of a
// cookbook match words that describe only some of them.
const (
	boostTitle      = 3.0
	boostKeywords   = 2.0
	boostDesc       = 1.5
	boostCBTitle    = 1.0
	boostExactID    = 6.0
	boostExactField = 4.0
)

// Search runs q. Hits are ordered by score (descending), then higher
// version, then cookbook_id, then entry_id, so equal-scoring results always
// come back in the same order. A query without text lists every match in
// that tie-break order (score 0).
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
	if text != "" {
		bq.AddMust(textQuery(text))
	}
	var filters []query.Query
	term := func(field, value string) {
		if value == "" {
			return
		}
		t := query.NewTermQuery(value)
		t.SetField(field)
		filters = append(filters, t)
	}
	if !q.AllVersions {
		term("latest", "1")
	}
	term("cookbook_id", q.CookbookID)
	term("connector_id", q.ConnectorID)
	term("verb", q.Verb)
	term("entry_type", q.EntryType)
	for _, tag := range q.Tags {
		term("tags", tag)
	}
	if len(filters) > 0 {
		bq.AddFilter(query.NewConjunctionQuery(filters))
	} else if text == "" {
		bq.AddMust(query.NewMatchAllQuery())
	}
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	req.Fields = []string{"hit"}
	req.SortBy([]string{"-_score", "-version_sort", "cookbook_id", "entry_id"})
	if text == "" {
		req.Score = "none"
	}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	out := Result{Items: make([]Hit, 0, len(res.Hits)), Total: res.Total}
	for _, h := range res.Hits {
		raw, _ := h.Fields["hit"].(string)
		var hit Hit
		if err := json.Unmarshal([]byte(raw), &hit); err != nil {
			return Result{}, fmt.Errorf("decode hit %s: %w", h.ID, err)
		}
		if text != "" {
			hit.Score = h.Score
		}
		out.Items = append(out.Items, hit)
	}
	return out, nil
}

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
		match("keywords", boostKeywords),
		match("description", boostDesc),
		match("cookbook_title", boostCBTitle),
		exact("entry_id", boostExactID),
		exact("verb", boostExactField),
		exact("cookbook_id", boostExactField),
		exact("connector_id", boostExactField),
		exact("tags", boostExactField),
	})
}

package routing

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
)

// InputsResolver is optionally implemented by a Searcher to derive a hit's
// required inputs lazily, for the chosen candidate only.
type InputsResolver interface {
	RequiredInputs(ctx context.Context, h Hit) ([]string, error)
}

// catalogSearcher adapts the catalog's bleve index (D7: latest version of
// each cookbook only) to the fallback.
type catalogSearcher struct{ c *catalog.Service }

// CatalogSearcher returns the fallback searcher over c, or nil when c is nil.
func CatalogSearcher(c *catalog.Service) Searcher {
	if c == nil {
		return nil
	}
	return catalogSearcher{c: c}
}

func (s catalogSearcher) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	// The fallback derives its text from the request (up to 16 KiB): it
	// searches the first words rather than fail the resolution.
	res, err := s.c.Search(ctx, index.Query{Text: index.ClipQuery(q.Text), Tags: q.Tags, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(res.Items))
	for _, h := range res.Items {
		out = append(out, Hit{CookbookID: h.CookbookID, Version: h.Version, EntryID: h.EntryID, EntryType: h.EntryType,
			Title: h.Title, ConnectorID: h.ConnectorID, Verb: h.Verb, Tags: h.Tags})
	}
	return out, nil
}

// RequiredInputs are the entry's bindings that are required and have no
// default (recipes have none).
func (s catalogSearcher) RequiredInputs(ctx context.Context, h Hit) ([]string, error) {
	_, e, err := s.c.EntryOf(ctx, h.CookbookID, h.Version, h.EntryID)
	if err != nil {
		return nil, err
	}
	var out []string
	if e == nil {
		// An entry the index still lists but the bundle no longer has:
		// none, as a bundle without that entry always gave.
		return normList(out), nil
	}
	for _, b := range e.Bindings {
		if b.IsRequired() && !b.HasDefault() && b.InputKey != "" {
			out = append(out, b.InputKey)
		}
	}
	return normList(out), nil
}

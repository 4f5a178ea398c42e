package catalog

import (
	"context"
	"errors"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Search runs a recipe search (D7); by default only each cookbook's latest
// version is searched.
func (s *Service) Search(ctx context.Context, q index.Query) (index.Result, error) {
	if n := len(q.Text); n > index.MaxQueryBytes {
		return index.Result{}, apperr.Validation("query", "query must be at most %d bytes, got %d", index.MaxQueryBytes, n).
			With("max_bytes", index.MaxQueryBytes)
	}
	if n := index.QueryTerms(q.Text); n > index.MaxQueryTerms {
		return index.Result{}, apperr.Validation("query", "query must have at most %d words, got %d", index.MaxQueryTerms, n).
			With("max_terms", index.MaxQueryTerms)
	}
	if err := s.fresh(ctx); err != nil {
		return index.Result{}, apperr.Internal("refresh catalog index", err)
	}
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	if s.idx == nil {
		return index.Result{}, apperr.Internal("search recipes", errors.New("catalog index is closed"))
	}
	res, err := s.idx.Search(ctx, q)
	if err != nil {
		return index.Result{}, apperr.Internal("search recipes", err)
	}
	return res, nil
}

package remote

import (
	"context"
	"errors"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// FromCatalog adapts the catalog to an install: Stage validates with its
// rules; Commit is Upsert with the lock record written in the same
// transaction.
func FromCatalog(c *catalog.Service) Catalog { return catalogAdapter{c} }

type catalogAdapter struct{ c *catalog.Service }

func (a catalogAdapter) Stage(raw []byte) (*Staged, error) {
	b, err := catalog.DecodeBundle(raw)
	if err != nil {
		return nil, err
	}
	_, hash, err := catalog.Prepare(b)
	if err != nil {
		return nil, err
	}
	return &Staged{CookbookID: b.CookbookID, Version: b.Version, ContentHash: hash, Bundle: b}, nil
}

func (a catalogAdapter) Commit(ctx context.Context, st *Staged, policy string, hook func(tx store.Tx, storedHash string) error) (*Committed, error) {
	b, ok := st.Bundle.(*catalog.Bundle)
	if !ok {
		return nil, apperr.Internal("remote install", errors.New("staged bundle is not a catalog bundle"))
	}
	res, err := a.c.Upsert(ctx, b, catalog.UpsertOptions{
		Policy: policy,
		InTx: func(tx store.Tx, res *catalog.UpsertResult) error {
			return hook(tx, res.Cookbook.ContentHash)
		},
	})
	if err != nil {
		return nil, err
	}
	return &Committed{Cookbook: res.Cookbook, Changed: res.CreatedOrUpdated, Policy: res.ConflictPolicy, Outcome: res.Outcome}, nil
}

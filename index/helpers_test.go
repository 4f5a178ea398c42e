package index

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// openBuilt builds an index of docs at revision rev at path and opens it;
// the index is closed when the test ends.
func openBuilt(t *testing.T, path string, rev uint64, docs []Doc) *Index {
	t.Helper()
	require.NoError(t, Build(context.Background(), path, Source{Total: len(docs), Rev: rev, Each: func(yield func(Doc) error) error {
		for _, d := range docs {
			if err := yield(d); err != nil {
				return err
			}
		}
		return nil
	}}, nil))
	ix, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return ix
}

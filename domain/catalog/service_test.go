package catalog

import (
	"context"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/stretchr/testify/require"
)

func TestUpsertGetSearchSmoke(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	start := time.Now()
	for i := range 20 {
		mustUpsert(t, e.svc, sample("cb"+string(rune('a'+i)), "1.0.0", 5), "")
	}
	t.Log("20 upserts", time.Since(start))
	st, err := e.svc.Get(ctx, "cba", "")
	require.NoError(t, err)
	require.Equal(t, "1.0.0", st.Bundle.Version)
	res, err := e.svc.Search(ctx, index.Query{Text: "recipe number"})
	require.NoError(t, err)
	t.Log(res.Total, res.Items[:3])
	res, err = e.svc.Search(ctx, index.Query{ConnectorID: "conn1", Limit: 3})
	require.NoError(t, err)
	t.Log(res.Total, res.Items)
}

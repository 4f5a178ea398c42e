package routing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/routing"
	"github.com/accordsai/accords-mcp/test/benchcat"
	"github.com/accordsai/accords-mcp/test/workload"
)

// BenchmarkResolveLoadCorpus resolves requests over catalogs of 100, 1,000
// and 10,000 bundles of the load tool's corpus (five entries each),
// complementing BenchmarkResolveRegistry and
// BenchmarkResolveSearchFallback10k (one fixed request, single-entry
// bundles): "registry" cycles through requests the route registry matches;
// "search" uses varied requests built from catalog words, which fall back
// to the bleve index. search-share reports how many of the latter really
// were resolved by search. Targets: registry p50 < 1 ms; with search
// fallback at 10,000 bundles p50 < 5 ms.
//
//	go test -run '^$' -bench BenchmarkResolveLoadCorpus -benchtime 1000x ./routing/
func BenchmarkResolveLoadCorpus(b *testing.B) {
	reg, err := routing.Default()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			c := benchcat.Build(b, b.TempDir(), n)
			defer c.Close()
			r := routing.New(reg, routing.CatalogSearcher(c.Svc))
			b.Run("registry", func(b *testing.B) {
				var lat benchcat.Latencies
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					req := routing.Request{Text: workload.RouteTexts[i%len(workload.RouteTexts)], AllowSearch: true}
					i++
					lat.Time(func() { r.Resolve(ctx, req) })
				}
				lat.Report(b)
			})
			b.Run("search", func(b *testing.B) {
				rng := rand.New(rand.NewPCG(7, 8))
				var lat benchcat.Latencies
				viaSearch, total := 0, 0
				b.ReportAllocs()
				for b.Loop() {
					req := routing.Request{Text: benchcat.Corpus.SearchRouteText(rng, n), AllowSearch: true}
					var res routing.Result
					lat.Time(func() { res = r.Resolve(ctx, req) })
					total++
					if strings.HasPrefix(res.Route.RouteID, "search:") || res.Status == routing.StatusAmbiguous {
						viaSearch++
					}
				}
				lat.Report(b)
				b.ReportMetric(float64(viaSearch)/float64(total), "search-share")
			})
		})
	}
}

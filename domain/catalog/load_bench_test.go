package catalog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/test/benchcat"
)

// revision numbers overwrites across benchmark runs.
var revision atomic.Int64

// benchSizes are the catalog sizes of the targets.
var benchSizes = []int{100, 1000, 10000}

// BenchmarkLoadCorpus measures the catalog in-process on the load tool's
// corpus (accords-bench: English titles and descriptions, five entries a
// bundle) at 100, 1,000 and 10,000 bundles, so in-process figures and the
// over-the-wire figures of accords-bench describe the same catalog. It
// complements bench_test.go (synthetic vocabulary, open and reindex) with
// template rendering and the 100-bundle size. Upserts overwrite existing
// bundles, so the catalog size stays fixed and flatness across sizes shows.
// Targets at 10,000: search p50 < 2 ms, upsert p50 < 10 ms.
//
//	go test -run '^$' -bench BenchmarkLoadCorpus -benchtime 1000x ./catalog/
func BenchmarkLoadCorpus(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			c := benchcat.Build(b, b.TempDir(), n)
			defer c.Close()
			ctx := context.Background()

			b.Run("search", func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					args := benchcat.Corpus.SearchQuery(r, n)
					q := index.Query{Text: args["query"].(string), Limit: 10}
					if cid, ok := args["connector_id"].(string); ok {
						q.ConnectorID = cid
					}
					lat.Time(func() {
						if _, err := c.Svc.Search(ctx, q); err != nil {
							b.Fatal(err)
						}
					})
				}
				lat.Report(b)
			})

			b.Run("render", func(b *testing.B) {
				r := rand.New(rand.NewPCG(3, 4))
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					_, info := benchcat.Corpus.Bundle(r.IntN(n), "1.0.0")
					tc := info.Templates[r.IntN(len(info.Templates))]
					lat.Time(func() {
						if _, err := c.Svc.Render(ctx, catalog.RenderRequest{CookbookID: info.CookbookID, TemplateID: tc.TemplateID, Inputs: tc.Inputs}); err != nil {
							b.Fatal(err)
						}
					})
				}
				lat.Report(b)
			})

			// The same template again and again, as an agent renders the
			// one it resolved: served from the template cache.
			b.Run("render-again", func(b *testing.B) {
				_, info := benchcat.Corpus.Bundle(n/2, "1.0.0")
				tc := info.Templates[0]
				req := catalog.RenderRequest{CookbookID: info.CookbookID, TemplateID: tc.TemplateID, Inputs: tc.Inputs}
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					lat.Time(func() {
						if _, err := c.Svc.Render(ctx, req); err != nil {
							b.Fatal(err)
						}
					})
				}
				lat.Report(b)
			})

			// A cookbook's latest version, as vaultclaw_cookbook_get answers.
			b.Run("get", func(b *testing.B) {
				r := rand.New(rand.NewPCG(9, 10))
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					id := benchcat.Corpus.CookbookID(r.IntN(n))
					lat.Time(func() {
						if _, err := c.Svc.Export(ctx, id, ""); err != nil {
							b.Fatal(err)
						}
					})
				}
				lat.Report(b)
			})

			// A page of 50 cookbooks carrying a tag, as the load tool lists.
			b.Run("list", func(b *testing.B) {
				r := rand.New(rand.NewPCG(7, 8))
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					f := catalog.ListFilter{Tag: benchcat.Corpus.ListTag(r), Limit: 50}
					lat.Time(func() {
						if _, err := c.Svc.ListPage(ctx, f); err != nil {
							b.Fatal(err)
						}
					})
				}
				lat.Report(b)
			})

			b.Run("upsert", func(b *testing.B) {
				r := rand.New(rand.NewPCG(5, 6))
				var lat benchcat.Latencies
				b.ReportAllocs()
				for b.Loop() {
					// The revision counter outlives this run (-count, b.N
					// ramp-up) so every overwrite really changes content.
					k := revision.Add(1)
					raw, _ := benchcat.Corpus.Bundle(r.IntN(n), "1.0.0")
					raw["title"] = fmt.Sprintf("%s, revision %d", raw["title"], k)
					bd, err := catalog.BundleFromValue(raw)
					if err != nil {
						b.Fatal(err)
					}
					lat.Time(func() {
						res, err := c.Svc.Upsert(ctx, bd, catalog.UpsertOptions{Policy: "OVERWRITE"})
						if err != nil {
							b.Fatal(err)
						}
						if !res.CreatedOrUpdated {
							b.Fatalf("overwrite of %s did not write", bd.CookbookID)
						}
					})
				}
				lat.Report(b)
			})

		})
	}
}

package index

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkApplyVersionHeavy: one write's index update on a cookbook that
// holds many versions (five entries each) among 200 others: every version
// is re-sent, the new one and the one it displaced change.
func BenchmarkApplyVersionHeavy(b *testing.B) {
	for _, versions := range []int{10, 30} {
		b.Run(fmt.Sprint("versions=", versions), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "x.index")
			entries := func(cb string, v int, latest bool) []Doc {
				var out []Doc
				for e := range 5 {
					out = append(out, Doc{CookbookID: cb, Version: fmt.Sprintf("%d.0.0", v), VersionSort: versionSort(v), Latest: latest,
						EntryID: fmt.Sprintf("entry_%d", e), EntryType: "recipe.verb.v1", Title: "Send the weekly report",
						Description: "Collects the figures and sends them", ConnectorID: "google", Verb: "google.gmail.send", Tags: []string{"mail"}})
				}
				return out
			}
			var all []Doc
			for c := range 200 {
				for v := 1; v <= versions; v++ {
					all = append(all, entries(fmt.Sprint("cb", c), v, v == versions)...)
				}
			}
			if err := Build(ctx, path, Source{Rev: 1, Each: func(yield func(Doc) error) error {
				for _, d := range all {
					if err := yield(d); err != nil {
						return err
					}
				}
				return nil
			}}, nil); err != nil {
				b.Fatal(err)
			}
			ix, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			top := map[string]int{}
			b.ResetTimer()
			for i := range b.N {
				cb := fmt.Sprint("cb", i%200)
				if top[cb] == 0 {
					top[cb] = versions
				}
				top[cb]++
				var docs []Doc
				for v := top[cb] - versions + 1; v <= top[cb]; v++ {
					docs = append(docs, entries(cb, v, v == top[cb])...)
				}
				// The oldest version goes, so the cookbook keeps its size.
				if err := ix.Apply(ctx, Update{Cookbooks: []string{cb}, Docs: docs, Rev: uint64(2 + i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

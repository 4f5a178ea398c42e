package remote

import (
	"fmt"
	"testing"
)

// BenchmarkParseIndex parses a 5,000-item index (about 1.3 MB), the work
// behind every listing that is not answered by a 304.
func BenchmarkParseIndex(b *testing.B) {
	var items []item
	for i := range 5000 {
		items = append(items, item{"cookbook_id": fmt.Sprintf("cookbook.%d", i/5), "version": fmt.Sprintf("1.%d.0", i%5),
			"title": "A cookbook title", "summary": "Some summary text for the cookbook index benchmark",
			"tags": []string{"a", "b"}, "download_url": fmt.Sprintf("https://catalog.example.com/b/%d.json", i),
			"sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
	}
	raw := indexJSON(items...)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		idx, err := ParseIndex(raw, "s")
		if err != nil || len(idx.Items) != 5000 {
			b.Fatal(err, len(idx.Items))
		}
	}
}

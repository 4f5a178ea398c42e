package index

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeStoredHitAnswersAsStored: the hits the index stores decode to
// the document's fields and version sort key, strings that need escapes
// included; broken bytes are an error naming the document.
func TestDecodeStoredHitAnswersAsStored(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"", "List inbox", "gmail", "é café", "0"}
	odd := []string{"a<b>&c", `say "hi"`, "tab\there", "x\u2028y"}
	w := func() string {
		if r.IntN(12) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return words[r.IntN(len(words))]
	}
	for i := range 2000 {
		d := Doc{CookbookID: fmt.Sprintf("cb%d", i), Version: "1.2.3", VersionSort: versionSort(1 + i%20), EntryID: "e" + w(),
			EntryType: "recipe.verb.v1", Title: w(), ConnectorID: w(), Verb: w(), Latest: r.IntN(2) == 0}
		for range r.IntN(3) {
			d.Tags = append(d.Tags, w())
		}
		raw := []byte(toBleve(d).Hit)
		got, err := decodeStoredHit("x", raw)
		require.NoError(t, err)
		want := Hit{CookbookID: d.CookbookID, Version: d.Version, EntryID: d.EntryID, EntryType: d.EntryType,
			Title: d.Title, ConnectorID: d.ConnectorID, Verb: d.Verb, Tags: d.Tags, Latest: d.Latest}
		require.Equal(t, want, got, "%s", raw)
	}

	_, err := decodeStoredHit("broken", []byte(`{"cookbook_id":`))
	require.ErrorContains(t, err, "decode hit broken")
}

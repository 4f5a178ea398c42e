package index

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/canonjson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoredHitFieldsFollowTheStruct: the one-pass reader's table lists
// Hit's encoded fields in order, so a field added to Hit cannot be skipped
// by it.
func TestStoredHitFieldsFollowTheStruct(t *testing.T) {
	var tags []string
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for f := range rt.Fields() {
			switch {
			case f.Anonymous:
				walk(f.Type)
			case f.IsExported():
				tags = append(tags, f.Tag.Get("json"))
			}
		}
	}
	walk(reflect.TypeFor[Hit]())
	require.Len(t, storedHitFields, len(tags))
	for i, tag := range tags {
		name, opts, _ := strings.Cut(tag, ",")
		assert.Equal(t, `"`+name+`":`, storedHitFields[i].Key)
		assert.Equal(t, opts == "omitempty", storedHitFields[i].Omit, name)
	}
}

// TestDecodeStoredHitAnswersAsEncodingJSON: the hits the index stores
// decode to what encoding/json makes of them, through the one-pass reader
// when they need no escapes and through encoding/json when they do.
func TestDecodeStoredHitAnswersAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"", "List inbox", "gmail", "é café", "0"}
	odd := []string{"a<b>&c", `say "hi"`, "tab\there", "x\u2028y"}
	w := func() string {
		if r.IntN(12) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return words[r.IntN(len(words))]
	}
	fast := 0
	for i := range 2000 {
		d := Doc{CookbookID: fmt.Sprintf("cb%d", i), Version: "1.2.3", VersionSort: versionSort(1 + i%20), EntryID: "e" + w(),
			EntryType: "recipe.verb.v1", Title: w(), ConnectorID: w(), Verb: w(), Latest: r.IntN(2) == 0}
		for range r.IntN(3) {
			d.Tags = append(d.Tags, w())
		}
		raw := []byte(toBleve(d).Hit)
		var want Hit
		require.NoError(t, json.Unmarshal(raw, &want))
		got, err := decodeStoredHit("x", raw)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", raw)
		if _, ok := canonjson.Parse(raw, storedHitFields); ok {
			fast++
		}
	}
	// About two thirds of these hits hold no string that needs an escape.
	assert.Greater(t, fast, 1000)
	assert.Less(t, fast, 1900)

	_, err := decodeStoredHit("broken", []byte(`{"cookbook_id":`))
	require.ErrorContains(t, err, "decode hit broken")
}

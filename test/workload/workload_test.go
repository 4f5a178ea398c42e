package workload

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBundleIsDeterministicAndWellFormed(t *testing.T) {
	c := Corpus{Seed: 42}
	a, ia := c.Bundle(7, "1.0.0")
	b, ib := c.Bundle(7, "1.0.0")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	require.Equal(t, string(ja), string(jb), "same seed and index give the same bundle")
	require.Equal(t, ia, ib)
	assert.Equal(t, c.CookbookID(7), ia.CookbookID)

	other, _ := Corpus{Seed: 43}.Bundle(7, "1.0.0")
	jo, _ := json.Marshal(other)
	assert.NotEqual(t, string(ja), string(jo), "another seed gives another catalog")

	safe := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	ids := map[string]bool{}
	for i := range 2000 {
		bundle, info := c.Bundle(i, "1.0.0")
		require.True(t, safe.MatchString(info.CookbookID), info.CookbookID)
		require.False(t, ids[info.CookbookID], "cookbook ids are unique: %s", info.CookbookID)
		ids[info.CookbookID] = true
		require.Equal(t, "accords.cookbook.bundle.v1", bundle["type"])
		require.NotEmpty(t, bundle["title"])
		entries := bundle["entries"].([]any)
		require.Len(t, entries, 5)
		seen := map[string]bool{}
		types := map[string]int{}
		for _, e := range entries {
			m := e.(map[string]any)
			id := m["entry_id"].(string)
			require.False(t, seen[id], "entry ids unique within bundle %s: %s", info.CookbookID, id)
			seen[id] = true
			types[m["entry_type"].(string)]++
			for _, bd := range asSlice(m["bindings"]) {
				bm := bd.(map[string]any)
				require.True(t, strings.HasPrefix(bm["target_path"].(string), "/"))
				require.NotEmpty(t, bm["input_key"])
			}
		}
		require.Equal(t, map[string]int{"recipe.verb.v1": 1, "recipe.plan.v1": 1, "template.verb.v1": 2, "template.plan.v1": 1}, types)
		require.Len(t, info.Templates, 3)
		for _, tc := range info.Templates {
			require.True(t, seen[tc.TemplateID], "template %s exists in the bundle", tc.TemplateID)
			// Every required binding of the template has an input.
			for _, e := range entries {
				m := e.(map[string]any)
				if m["entry_id"] != tc.TemplateID {
					continue
				}
				for _, bd := range asSlice(m["bindings"]) {
					bm := bd.(map[string]any)
					if req, ok := bm["required"].(bool); ok && !req {
						continue
					}
					assert.Contains(t, tc.Inputs, bm["input_key"], "template %s input %s", tc.TemplateID, bm["input_key"])
				}
			}
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestCorpusVariety(t *testing.T) {
	c := Corpus{Seed: DefaultSeed}
	titles := map[string]bool{}
	words := map[string]bool{}
	for i := range 1000 {
		_, info := c.Bundle(i, "1.0.0")
		titles[info.Title] = true
		for w := range strings.FieldsSeq(strings.ToLower(info.Title)) {
			words[w] = true
		}
	}
	assert.Greater(t, len(titles), 900, "titles are varied")
	assert.Greater(t, len(words), 100, "titles draw on a wide vocabulary")

	r := rand.New(rand.NewPCG(1, 2))
	q := c.SearchQuery(r, 1000)
	require.NotEmpty(t, q["query"])
	assert.Len(t, strings.Fields(q["query"].(string)), 2)
	assert.NotEmpty(t, c.SearchRouteText(r, 1000))
}

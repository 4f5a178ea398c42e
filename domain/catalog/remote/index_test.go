package remote

import (
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseIndexSkipsBadItems(t *testing.T) {
	good := strings.Repeat("ab", 32)
	raw := []byte(`{"type":" accords.cookbook.index.v1 ","generated_at_unix_ms":17,"items":[
	 {"cookbook_id":"a","version":"1.0.0","title":" A ","tags":[" x ",""],"download_url":"https://h/a.json","sha256":"` + strings.ToUpper(good) + `"},
	 {"cookbook_id":"","version":"1.0.0","download_url":"https://h/b.json"},
	 {"cookbook_id":"c","version":"1.0.0","download_url":"ftp://h/c.json"},
	 {"cookbook_id":"d","version":"latest","download_url":"https://h/d.json"},
	 {"cookbook_id":"e","version":"1.0.0","download_url":"https://h/e.json","sha256":"bad"},
	 {"cookbook_id":"f","version":"1.0.0","download_url":"https://h/f.json","tags":"notalist"},
	 {"cookbook_id":"a","version":"1.0.0","download_url":"https://h/a2.json"},
	 "not an object",
	 {"cookbook_id":"../x","version":"1.0.0","download_url":"https://h/x.json"},
	 {"cookbook_id":"g","version":"2.0.0-rc.1","download_url":"http://h:8080/g.json"}
	]}`)
	idx, err := ParseIndex(raw, "src")
	require.NoError(t, err)
	assert.Equal(t, IndexType, idx.Type)
	assert.Equal(t, "src", idx.SourceID, "source_id defaults to the configured one")
	assert.EqualValues(t, 17, idx.GeneratedAtUnixMS)
	require.Len(t, idx.Items, 2)
	assert.Equal(t, "a", idx.Items[0].CookbookID)
	assert.Equal(t, "A", idx.Items[0].Title)
	assert.Equal(t, []string{"x"}, idx.Items[0].Tags)
	assert.Equal(t, good, idx.Items[0].SHA256, "digest lowercased")
	assert.Equal(t, "g", idx.Items[1].CookbookID)

	byPos := map[int]BadItem{}
	for _, b := range idx.Invalid {
		byPos[b.Position] = b
	}
	require.Len(t, idx.Invalid, 8)
	assert.Equal(t, "cookbook_id", byPos[1].Field)
	assert.Equal(t, "remote index item missing required fields", byPos[1].Reason)
	assert.Equal(t, "remote download_url must be http(s)", byPos[2].Reason)
	assert.Equal(t, "version", byPos[3].Field)
	assert.Equal(t, "d", byPos[3].CookbookID)
	assert.Equal(t, "sha256", byPos[4].Field)
	assert.Equal(t, "tags", byPos[5].Field)
	assert.Equal(t, "f", byPos[5].CookbookID, "ids salvaged for the report")
	assert.Contains(t, byPos[6].Reason, "duplicate of item 0")
	assert.Contains(t, byPos[7].Reason, "not a valid index item")
	assert.Equal(t, "cookbook_id", byPos[8].Field)
}

func TestParseIndexWholeDocumentErrors(t *testing.T) {
	for name, c := range map[string]struct{ raw, msg string }{
		"not json":       {`{"type":`, "failed decoding remote index"},
		"array":          {`[]`, "failed decoding remote index"},
		"wrong type":     {`{"type":"accords.cookbook.index.v2","items":[]}`, "remote index type is invalid"},
		"items not list": {`{"type":"accords.cookbook.index.v1","items":{}}`, "failed decoding remote index"},
		"bad generated":  {`{"type":"accords.cookbook.index.v1","generated_at_unix_ms":1.5}`, "remote index generated_at_unix_ms must be an integer"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseIndex([]byte(c.raw), "s")
			ae := requireCode(t, err, apperr.CodeRemoteFetchFailed)
			assert.Equal(t, c.msg, ae.Message)
			assert.False(t, ae.Retryable)
			assert.Equal(t, apperr.CatNetwork, ae.Category)
		})
	}
	idx, err := ParseIndex([]byte(`{"type":"accords.cookbook.index.v1","source_id":"theirs"}`), "mine")
	require.NoError(t, err)
	assert.Empty(t, idx.Items, "missing items is an empty index")
	assert.NotNil(t, idx.Items)
	assert.Equal(t, "theirs", idx.SourceID)
}

func TestIndexFilter(t *testing.T) {
	idx, err := ParseIndex(indexJSON(
		item{"cookbook_id": "google.workspace", "version": "1.3.0", "title": "Gmail", "summary": "Mail recipes", "tags": []string{"email"}, "download_url": "https://h/1"},
		item{"cookbook_id": "weather", "version": "0.1.0", "title": "Forecast", "download_url": "https://h/2"},
	), "s")
	require.NoError(t, err)
	ids := func(q string) []string {
		var out []string
		for _, it := range idx.Filter(q) {
			out = append(out, it.CookbookID)
		}
		return out
	}
	assert.Equal(t, []string{"google.workspace", "weather"}, ids("  "))
	assert.Equal(t, []string{"google.workspace"}, ids("EMAIL"))
	assert.Equal(t, []string{"google.workspace"}, ids("mail rec"))
	assert.Equal(t, []string{"weather"}, ids("0.1"))
	assert.Empty(t, ids("gmail mail"), "a query never spans two fields")
}

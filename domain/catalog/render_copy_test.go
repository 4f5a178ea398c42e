package catalog

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeepCopyMatchesTheJSONRoundTrip: the direct copy gives what the
// encode/decode round trip gave (numbers as float64) and shares nothing
// with its source.
func TestDeepCopyMatchesTheJSONRoundTrip(t *testing.T) {
	src := map[string]any{"s": "x", "f": 1.5, "b": true, "n": nil, "i": 7, "num": json.Number("12"),
		"list": []any{map[string]any{"k": "v"}, 2.0, []any{"deep"}}, "obj": map[string]any{"a": []any{}}}
	got, err := deepCopyObject(src)
	require.NoError(t, err)
	raw, _ := json.Marshal(src)
	var want map[string]any
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Equal(t, want, got)

	got["list"].([]any)[0].(map[string]any)["k"] = "changed"
	got["obj"].(map[string]any)["a"] = "changed"
	require.Equal(t, "v", src["list"].([]any)[0].(map[string]any)["k"])
	require.Equal(t, []any{}, src["obj"].(map[string]any)["a"])
}

// TestDecodeBundleEntryDecodesOnlyTheAskedEntry: the header and the first
// entry with the id; nil for an id the bundle lacks.
func TestDecodeBundleEntryDecodesOnlyTheAskedEntry(t *testing.T) {
	raw := []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"cb","version":"1.2.3","entries":[
		{"entry_id":"a","entry_type":"recipe.verb.v1","title":"A"},
		{"entry_id":"b","entry_type":"template.verb.v1","title":"B"}]}`)
	id, ver, e, err := decodeBundleEntry(raw, "b")
	require.NoError(t, err)
	require.Equal(t, "cb", id)
	require.Equal(t, "1.2.3", ver)
	require.NotNil(t, e)
	require.Equal(t, "B", e.Title)
	full, err := decodeBundle(raw)
	require.NoError(t, err)
	require.Equal(t, *full.Entry("b"), *e, "the same entry as the full decode")

	_, _, e, err = decodeBundleEntry(raw, "missing")
	require.NoError(t, err)
	require.Nil(t, e)
}

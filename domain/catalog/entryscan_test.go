package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/test/workload"
)

// entryAnswer is decodeBundleEntry's whole answer, errors as text.
type entryAnswer struct {
	CookbookID, Version string
	Entry               *Entry
	Err                 string
}

func answerOf(f func([]byte, string) (string, string, *Entry, error), raw []byte, id string) entryAnswer {
	cid, ver, e, err := f(raw, id)
	a := entryAnswer{CookbookID: cid, Version: ver, Entry: e}
	if err != nil {
		a.Err = err.Error()
	}
	return a
}

// odd stored bytes: everything the one-pass reader declines or must get
// right, next to the plain forms it takes.
var oddBundles = []string{
	`{"cookbook_id":"cb","version":"1.0.0","entries":[{"entry_id":"a","entry_type":"recipe.verb.v1","title":"A"},{"entry_id":"a","title":"second a"}]}`,
	`{"entries":[{"title":"no id"},{"entry_id":"","title":"empty id"}],"cookbook_id":"cb"}`,
	`{"cookbook_id":"cb","cookbook_id":"other","entries":[]}`,
	`{"cookbook_id":"c\u0062","version":"1.0.0","entries":[{"entry_id":"a"}]}`,
	`{"cookbook_id":"cb","entri\u0065s":[{"entry_id":"a","title":"hidden"}],"entries":[{"entry_id":"a","title":"shown"}]}`,
	`{"cookbook_id":"cb","entries":[{"ENTRY_ID":"a","title":"folded"}]}`,
	`{"cookbook_id":"cb","entries":[{"entry_ıd":"a"},{"entry_id":"a","title":"next"}]}`,
	`{"cookbook_id":"cb","entries":[{"entry_id":"\u0061","title":"escaped id"}]}`,
	`{"cookbook_id":"cb","entries":[{"entry_id":"a","entry_id":"b"}]}`,
	`{"cookbook_id":"cb","entries":[1,"x",null,{"entry_id":"a","title":"after scalars"}]}`,
	`{"cookbook_id":"cb","entries":null}`,
	`{"cookbook_id":null,"version":7,"entries":[]}`,
	`{"cookbook_id":"cb","entries":{"entry_id":"a"}}`,
	`{"x":{"entries":[{"entry_id":"a"}]},"y":[1,{"z":"]}\"{"}],"s":"\\\"","entries":[ {"entry_id" : "a" , "title" : "spaced"} ]}`,
	`{"cookbook_id":"cb","entries":[{"entry_id":"a","title":7}]}`,
	`{"cookbook_id":"cb","entries":[{"entry_id":"a","request":{"entry_id":"b"}},{"entry_id":"b","title":"real b"}]}`,
	` { "cookbook_id" : "cb" , "entries" : [ ] } `,
	`{"cookbook_id":"cb","entries":[{"entry_id":"a"}]} trailing`,
	"{\"cookbook_id\":\"c\x8fb\",\"entries\":[{\"entry_id\":\"a\xff\"},{\"entry_id\":\"a\"}]}",
	`{"cookbook_id":"cb","entries":[{"entry_id":"a"}`, `[]`, `null`, `"x"`, ``, `{}`,
	// Entries decodePlainEntry must take or leave exactly as decodeEntry would.
	`{"entries":[{"entry_id":"a","Title":"folded extra","title":"t"}]}`,
	`{"entries":[{"entry_id":"a","extra":{"x":1},"tags":null,"request":null}]}`,
	`{"entries":[{"entry_id":"a","bindings":[null,{"input_key":"k"}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"input_key":"k","input_key":"j"}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"Input_Key":"k"}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"input_k\u0065y":"k"}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"input_key":"k","required":null,"default":null,"note":"x"}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"target_path":"/a","required":false,"default":{"d":[1,2.5e3]}}]}]}`,
	`{"entries":[{"entry_id":"a","bindings":{"input_key":"k"}}]}`,
	`{"entries":[{"entry_id":"a","bindings":null,"plan":[1]}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"required":"yes"}]}]}`,
	`{"entries":[{"entry_id":"a","tags":["x",7]}]}`,
	`{"entries":[{"entry_id":"a","tags":[],"title":"t","title":"u"}]}`,
	`{"entries":[{"entry_id":"a","input_schema":{"type":"object"},"base_request":{"request":{"a":null}}}]}`,
	// Values segmentio's decoder and encoding/json might read apart.
	`{"entries":[{"entry_id":"a","request":{"lone":"\ud800","low":"\udc00x","pair":"\ud83d\ude00","nul":"\u0000","html":"\u003c\u0026"}}]}`,
	`{"entries":[{"entry_id":"a","request":{"big":1e400}}]}`,
	`{"entries":[{"entry_id":"a","request":{"tiny":1e-400,"neg":-0,"exp":1E+2,"long":123456789012345678901234567890}}]}`,
	`{"entries":[{"entry_id":"a","request":{"k":1,"k":{"x":[true,false,null]},"K":2}}]}`,
	`{"entries":[{"entry_id":"a","title":"\ud800 lone","description":"tab\tquote\"slash\/"}]}`,
	"{\"entries\":[{\"entry_id\":\"a\",\"request\":{\"bad\":\"\xff\xfe\"},\"title\":\"\xc3\"}]}",
	`{"entries":[{"entry_id":"a","plan":{"deep":[[[[[[[[[[{"x":"y"}]]]]]]]]]]}}]}`,
	`{"entries":[{"entry_id":"a","bindings":[{"input_key":"k","default":"\ud800"}]}]}`,
}

// decodeBundleEntry answers as the full decoding does, for the built-in
// cookbooks, the load tool's corpus and odd bytes, for every entry id and
// ids no entry has; and it reads canonical bundles in one pass.
func TestDecodeBundleEntryMatchesFullDecoding(t *testing.T) {
	var canonical [][]byte
	files, err := filepath.Glob(filepath.Join("builtin", "cookbooks", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		b, err := DecodeBundle(raw)
		require.NoError(t, err, f)
		c, _, err := Prepare(b)
		require.NoError(t, err, f)
		canonical = append(canonical, c)
	}
	for i := range 200 {
		v, _ := workload.Corpus{Seed: 5}.Bundle(i, fmt.Sprintf("1.0.%d", i%3))
		b, err := BundleFromValue(v)
		require.NoError(t, err)
		c, _, err := Prepare(b)
		require.NoError(t, err)
		canonical = append(canonical, c)
	}
	check := func(raw []byte, ids []string) {
		for _, id := range ids {
			want := answerOf(decodeBundleEntrySlow, raw, id)
			got := answerOf(decodeBundleEntry, raw, id)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("entry %q of %.200s:\nfull decoding %+v\none pass      %+v", id, raw, want, got)
			}
		}
	}
	for _, raw := range canonical {
		b, err := decodeBundle(raw)
		require.NoError(t, err)
		ids := []string{"missing", ""}
		for _, e := range b.Entries {
			ids = append(ids, e.EntryID)
			loc, ok := locateEntry(raw, e.EntryID)
			require.True(t, ok, "a canonical bundle is read in one pass")
			plain, ok := decodePlainEntry(loc.entry)
			extra := e.Extra != nil
			for _, bd := range e.Bindings {
				extra = extra || bd.Extra != nil
			}
			if extra {
				require.False(t, ok, "keys the format does not know are left to decodeEntry: %s", e.EntryID)
				continue
			}
			require.True(t, ok, "a canonical entry is decoded in one pass: %s", e.EntryID)
			require.Equal(t, e, plain)
		}
		check(raw, ids)
	}
	for _, s := range oddBundles {
		check([]byte(s), []string{"a", "b", "", "missing"})
	}
}

func FuzzDecodeBundleEntryMatchesFullDecoding(f *testing.F) {
	for _, s := range oddBundles {
		f.Add([]byte(s), "a")
	}
	f.Add([]byte(`{"cookbook_id":"cb","version":"1.0.0","entries":[{"entry_id":"t","entry_type":"template.verb.v1","title":"T","connector_id":"c","verb":"v","base_request":{"request":{}}}]}`), "t")
	f.Fuzz(func(t *testing.T, raw []byte, id string) {
		want := answerOf(decodeBundleEntrySlow, raw, id)
		got := answerOf(decodeBundleEntry, raw, id)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("entry %q of %q:\nfull decoding %+v\none pass      %+v", id, raw, want, got)
		}
	})
}

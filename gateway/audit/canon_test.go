package audit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// canonSeeds are arguments as clients send them and the odd ones the
// one-pass canonicalizer must decline or get exactly right.
var canonSeeds = []string{
	`{}`, `{"b":1,"a":"x"}`, ` { "a" : "x", "b" : [1, 2.50, -0, 1e3, 1E-3] } `,
	`{"a":1,"a":2}`, `{"a":{"x":1},"a":{"y":2},"b":null}`, `{"":true,"z":false}`,
	`{"k":"<&>"}`, `{"<":"é","\u00e9":"\u2028","x":"\ud83d\ude00","y":"\ud800"}`,
	"{\"bad\":\"\xff\xfe\",\"tab\":\"a\\tb\\u0001\\/\"}", `{"a":"\x7f"}`,
	`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1,}`, `{,}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":"x}`, `{"a":1} trailing`, `{"a":1}}`,
	`[1,2]`, `"s"`, `5`, `null`, `true`, ``, `{`,
	`{"bundle":{"type":"accords.cookbook.bundle.v1","cookbook_id":"a.b","version":"1.0.0","entries":[{"entry_id":"e","bindings":[{"input_key":"k","required":false,"default":{"z":1,"a":[{}]}}]}]}}`,
	`{"a":` + strings.Repeat(`[`, 1100) + strings.Repeat(`]`, 1100) + `}`,
	`{"a":` + strings.Repeat(`{"b":`, 900) + `1` + strings.Repeat(`}`, 900) + `}`,
}

func FuzzCanonicalObjectMatchesDecoding(f *testing.F) {
	for _, s := range canonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkCanonical(t, raw)
	})
}

func TestCanonicalObjectMatchesDecoding(t *testing.T) {
	taken := 0
	for _, s := range canonSeeds {
		if checkCanonical(t, []byte(s)) {
			taken++
		}
	}
	require.Greater(t, taken, 8, "the one pass takes the plain arguments")
}

// checkCanonical requires canonicalObject, when it answers, to give the
// bytes decoding and encoding again give; it reports whether it answered.
func checkCanonical(t *testing.T, raw []byte) bool {
	t.Helper()
	got, ok := canonicalObject(raw)
	want, wantOK := decodedCanonical(raw)
	if !ok {
		return false
	}
	require.True(t, wantOK, "canonicalObject took %q, which does not decode", raw)
	require.Equal(t, string(want), string(got), "%q", raw)
	return true
}

// BenchmarkSumArgs digests a render's arguments and an upsert's (a
// five-entry bundle), by the one pass and by decoding.
func BenchmarkSumArgs(b *testing.B) {
	h, err := NewHasher([]byte(strings.Repeat("k", 32)))
	require.NoError(b, err)
	render := []byte(`{"cookbook_id":"bench.asana-tasks.invoice-02768","inputs":{"body":"See attached.","subject":"Invoice 42","to":["ops@example.com"]},"template_id":"invoice_send_template"}`)
	entry := `{"entry_id":"e%d","entry_type":"template.verb.v1","title":"Send the overdue invoice to a contact","description":"Sends it by e-mail with an optional note.","tags":["email","invoice"],"connector_id":"google.gmail","verb":"messages.send","base_request":{"connector_id":"google.gmail","verb":"messages.send","request":{"to":[],"subject":"","text_plain":"","format":"plain"}},"bindings":[{"target_path":"/request/to","input_key":"to"},{"target_path":"/request/subject","input_key":"subject"},{"target_path":"/request/format","input_key":"format","required":false,"default":"plain"}],"input_schema":{"type":"object","properties":{"to":{"type":"array","items":{"type":"string"}},"subject":{"type":"string"}},"required":["to","subject"]}}`
	var entries []string
	for i := range 5 {
		entries = append(entries, strings.Replace(entry, "%d", string(rune('0'+i)), 1))
	}
	upsert := []byte(`{"bundle":{"type":"accords.cookbook.bundle.v1","cookbook_id":"bench.x","version":"1.0.0","title":"T","entries":[` + strings.Join(entries, ",") + `]}}`)
	for name, raw := range map[string][]byte{"render": render, "upsert": upsert} {
		b.Run(name+"/one-pass", func(b *testing.B) {
			for b.Loop() {
				_ = h.SumArgs(raw)
			}
		})
		b.Run(name+"/decoding", func(b *testing.B) {
			for b.Loop() {
				canon, _ := decodedCanonical(raw)
				_ = h.Sum(canon)
			}
		})
	}
}

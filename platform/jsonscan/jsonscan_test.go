package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScanFindsTextThatDecodingWouldReplace(t *testing.T) {
	for _, c := range []struct {
		raw  string
		bad  bool
		path string
	}{
		{`{"a":"plain","b":["é","😀"]}`, false, ""},
		{`{"a":"\ud83d\ude00 \u00e9 \"quoted\\"}`, false, ""},
		{"{\"a\":\"x\xffy\"}", true, "a"},
		{"{\"a\":{\"b\":[1,\"ok\",\"\xc3\"]}}", true, "a.b[2]"},
		{`{"a":"\ud83d"}`, true, "a"},
		{`{"a":"\ude00x"}`, true, "a"},
		{`{"a":"\ud83d\u0041"}`, true, "a"},
		{"{\"k\xff\":1}", true, "k\uFFFD"},
		{`[{"x":1},{"y":["\udfff"]}]`, true, "[1].y[0]"},
	} {
		r := Scan([]byte(c.raw))
		assert.Equal(t, c.bad, r.BadText >= 0, c.raw)
		if c.bad {
			assert.Equal(t, c.path, PathAt([]byte(c.raw), r.BadText), c.raw)
		}
	}
}

func TestScanCountsValues(t *testing.T) {
	assert.Equal(t, 1, Scan([]byte(`"x"`)).Values)
	assert.Equal(t, 5, Scan([]byte(`{"a":1,"b":2}`)).Values)
	assert.Equal(t, 4, Scan([]byte(`[1,2,3]`)).Values)
	assert.Equal(t, 3, Scan([]byte(`{"a,b:{[":"]"}`)).Values, "punctuation inside strings is not counted")
	many := "[" + strings.Repeat("{},", 999) + "{}]"
	assert.Equal(t, 2001, Scan([]byte(many)).Values)
}

// FuzzScan checks Scan against encoding/json: a valid document has a
// replacement character after decoding exactly when Scan reports bad text
// (or the document already spelled one).
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}", `["\udc00"]`, `{"a":[1,{"b":"c"}]}`, `"\ufffd"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := Scan(raw)
		if r.BadText >= 0 {
			_ = PathAt(raw, r.BadText)
		}
		if !json.Valid(raw) {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		out, _ := json.Marshal(v)
		replaced := bytes.Contains(out, []byte("\ufffd"))
		spelled := bytes.Contains(raw, []byte("\ufffd")) || bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`))
		if r.BadText >= 0 && !replaced {
			t.Fatalf("Scan reports bad text at %d, but decoding replaced nothing: %q", r.BadText, raw)
		}
		if r.BadText < 0 && replaced && !spelled {
			t.Fatalf("decoding replaced text Scan accepted: %q", raw)
		}
	})
}

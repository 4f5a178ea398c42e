package canonjson

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample has a field of every kind the scanner reads.
type sample struct {
	ID    string   `json:"id"`
	Note  string   `json:"note,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	On    bool     `json:"on"`
	N     uint64   `json:"n"`
	Score float64  `json:"score"`
}

var sampleFields = []Field[sample]{
	{Key: `"id":`, Read: func(p *Scanner, v *sample) bool { return p.Str(&v.ID) }},
	{Key: `"note":`, Omit: true, Read: func(p *Scanner, v *sample) bool { return p.Set(&v.Note) }},
	{Key: `"tags":`, Omit: true, Read: func(p *Scanner, v *sample) bool { return p.List(&v.Tags) }},
	{Key: `"on":`, Read: func(p *Scanner, v *sample) bool { return p.Bool(&v.On) }},
	{Key: `"n":`, Read: func(p *Scanner, v *sample) bool { return p.Uint(&v.N) }},
	{Key: `"score":`, Read: func(p *Scanner, v *sample) bool { return p.Float(&v.Score) }},
}

// Whatever json.Marshal writes for values without escapes is taken and
// decodes to the value written.
func TestParseTakesWhatMarshalWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "gmail.send", "é", "日本", "x y", "0"}
	floats := []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-7, 1e21, 123456789, -2.5e-300, math.MaxFloat64}
	for range 3000 {
		v := sample{ID: words[r.IntN(len(words))], Note: words[r.IntN(len(words))], On: r.IntN(2) == 0,
			N: r.Uint64() >> r.IntN(64), Score: floats[r.IntN(len(floats))]}
		for range r.IntN(3) {
			v.Tags = append(v.Tags, words[r.IntN(len(words))])
		}
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		got, ok := Parse(raw, sampleFields)
		require.True(t, ok, "%s", raw)
		require.Equal(t, v, got, "%s", raw)
	}
}

// Anything json.Marshal would not have written for the value it denotes
// is declined.
func TestParseDeclinesOtherForms(t *testing.T) {
	for _, raw := range []string{
		``, `{}`, `[]`, `{"id":"a","on":true,"n":1,"score":0} `,
		` {"id":"a","on":true,"n":1,"score":0}`,
		`{"on":true,"id":"a","n":1,"score":0}`,
		`{"id":"a", "on":true,"n":1,"score":0}`,
		`{"id":"a","note":"","on":true,"n":1,"score":0}`,
		`{"id":"a","tags":[],"on":true,"n":1,"score":0}`,
		`{"id":"a\"b","on":true,"n":1,"score":0}`,
		`{"id":"\u0061","on":true,"n":1,"score":0}`,
		`{"id":"a<b","on":true,"n":1,"score":0}`,
		"{\"id\":\"a\xffb\",\"on\":true,\"n\":1,\"score\":0}",
		"{\"id\":\"a\u2028\",\"on\":true,\"n\":1,\"score\":0}",
		`{"id":"a","on":1,"n":1,"score":0}`,
		`{"id":"a","on":true,"n":01,"score":0}`,
		`{"id":"a","on":true,"n":-1,"score":0}`,
		`{"id":"a","on":true,"n":1,"score":0.0}`,
		`{"id":"a","on":true,"n":1,"score":1e2}`,
		`{"id":"a","on":true,"n":1,"score":0,"x":1}`,
		`{"id":"a","on":true,"n":1,"score":0`,
	} {
		_, ok := Parse([]byte(raw), sampleFields)
		assert.False(t, ok, "%s", raw)
	}
}

// FuzzParse: what Parse takes, encoding/json decodes to the same value,
// and encodes back to the same bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"id":"a","on":true,"n":1,"score":0}`, `{"id":"","note":"x","tags":["a","b"],"on":false,"n":18446744073709551615,"score":1e-7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := Parse(raw, sampleFields)
		if !ok {
			return
		}
		var want sample
		require.NoError(t, json.Unmarshal(raw, &want), "%q", raw)
		require.True(t, reflect.DeepEqual(want, got), "%q: %+v != %+v", raw, got, want)
		back, err := json.Marshal(got)
		require.NoError(t, err)
		require.Equal(t, string(raw), string(back))
	})
}

func TestAppendFloatIsEncodingJSONs(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 1e-6, 9.99e-7, 1e20, 1e21, 1.5e-10, 123.456, math.SmallestNonzeroFloat64} {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(AppendFloat(nil, f)))
	}
	assert.False(t, strings.Contains(string(AppendFloat(nil, 1e-7)), "e-0"))
}

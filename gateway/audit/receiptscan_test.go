package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomReceipt sets every field, the optional ones only sometimes, with
// text json.Marshal writes as it stands (ASCII and other UTF-8).
func randomReceipt(r *rand.Rand) Receipt {
	words := []string{"local", "stdio", "vaultclaw_status", "hmac-sha256:0f3a", "ok", "denied", "é café", "日本", "a b", "x=1;y?"}
	w := func() string { return words[r.IntN(len(words))] }
	opt := func() string {
		if r.IntN(2) == 0 {
			return ""
		}
		return w()
	}
	list := func() []string {
		var out []string
		for range r.IntN(3) {
			out = append(out, w())
		}
		return out
	}
	floats := []float64{0, 0.125, 1, 12.5, 3.0000001, 1e-7, 2.5e-9, 1e21, 123456789.25, -0.5, math.SmallestNonzeroFloat64, math.MaxFloat64}
	seqs := []uint64{0, 1, 9, 10, 4096, math.MaxUint64}
	rc := Receipt{
		Seq: seqs[r.IntN(len(seqs))], Type: TypeToolCall, CallID: fmt.Sprintf("call_%d", r.Int64()),
		Timestamp: time.Unix(r.Int64N(1<<32), r.Int64N(1e9)).UTC().Format(time.RFC3339Nano),
		Caller:    w(), Transport: w(), Session: opt(), Scope: w(), Tool: w(), CapabilityUsed: w(),
		ParamsHash: w(), ResultHash: w(), Outcome: w(), DurationMS: floats[r.IntN(len(floats))],
		RulesEvaluated: list(), RulesMatched: list(), Note: opt(), TaskRef: opt(), ParentCallID: opt(),
		PrevHash: Genesis, Hash: opt(),
	}
	if r.IntN(3) == 0 {
		rc.DurationMS = r.Float64() * 1000
	}
	if r.IntN(3) == 0 {
		rc.Count = seqs[1+r.IntN(len(seqs)-1)]
	}
	return rc
}

func TestParseCanonicalTakesEveryCanonicalReceipt(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		want := randomReceipt(r)
		raw, err := json.Marshal(want)
		require.NoError(t, err)
		got, ok := parseCanonical(raw)
		require.True(t, ok, "declined %s", raw)
		require.Equal(t, want, got)
		slow, canonical, err := decodeStrictSlow(raw)
		require.NoError(t, err)
		require.True(t, canonical)
		require.Equal(t, slow, got)
	}
}

func TestParseCanonicalDeclinesWhatIsNotExactlyCanonical(t *testing.T) {
	base := receipt(1, "default", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	base.Seq, base.Type, base.PrevHash = 1, TypeToolCall, Genesis
	canon, err := json.Marshal(base)
	require.NoError(t, err)
	_, ok := parseCanonical(canon)
	require.True(t, ok)
	edit := func(old, new string) []byte {
		out := bytes.Replace(canon, []byte(old), []byte(new), 1)
		require.NotEqual(t, canon, out, "edit %q did not apply", old)
		return out
	}
	cases := map[string][]byte{
		"leading space":        append([]byte(" "), canon...),
		"trailing newline":     append(append([]byte{}, canon...), '\n'),
		"space after colon":    edit(`"seq":1`, `"seq": 1`),
		"fields reordered":     edit(`{"seq":1,"type":"mcp_tool_call"`, `{"type":"mcp_tool_call","seq":1`),
		"escaped letter":       edit(`"local"`, `"loc\u0061l"`),
		"unescaped html":       edit(`"local"`, `"<local>"`),
		"control character":    edit(`"local"`, "\"lo\tcal\""),
		"invalid utf-8":        edit(`"local"`, "\"lo\xffcal\""),
		"line separator":       edit(`"local"`, "\"lo\u2028cal\""),
		"empty optional":       edit(`,"scope"`, `,"session":"","scope"`),
		"empty list":           edit(`,"prev_hash"`, `,"rules_evaluated":[],"prev_hash"`),
		"zero count":           edit(`,"prev_hash"`, `,"count":0,"prev_hash"`),
		"list with a space":    edit(`,"prev_hash"`, `,"rules_evaluated":["a", "b"],"prev_hash"`),
		"float not shortest":   edit(`"duration_ms":0.125`, `"duration_ms":0.1250`),
		"float as exponent":    edit(`"duration_ms":0.125`, `"duration_ms":1.25e-1`),
		"integer as float":     edit(`"seq":1`, `"seq":1.0`),
		"leading zero":         edit(`"seq":1`, `"seq":01`),
		"negative seq":         edit(`"seq":1`, `"seq":-1`),
		"seq overflow":         edit(`"seq":1`, `"seq":18446744073709551616`),
		"unknown field":        edit(`,"prev_hash"`, `,"extra":"x","prev_hash"`),
		"duplicate field":      edit(`,"scope"`, `,"transport":"stdio","scope"`),
		"string as number":     edit(`"duration_ms":0.125`, `"duration_ms":"0.125"`),
		"truncated":            canon[:len(canon)-1],
		"second value":         append(append([]byte{}, canon...), canon...),
		"upper-case key":       edit(`"seq"`, `"Seq"`),
		"null string":          edit(`"caller":"local"`, `"caller":null`),
		"unterminated string":  []byte(`{"seq":1,"type":"mcp_tool_call`),
		"nothing":              nil,
		"not an object":        []byte(`[1]`),
		"infinite float":       edit(`"duration_ms":0.125`, `"duration_ms":1e999`),
		"exponent of 1e-7 pad": edit(`"duration_ms":0.125`, `"duration_ms":1e-07`),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, ok := parseCanonical(raw)
			assert.False(t, ok, "%s", raw)
			// decodeStrict's answer is the slow path's.
			r1, c1, err1 := decodeStrict(raw)
			r2, c2, err2 := decodeStrictSlow(raw)
			assert.Equal(t, r2, r1)
			assert.Equal(t, c2, c1)
			assert.Equal(t, err2 == nil, err1 == nil)
		})
	}
}

// FuzzParseCanonicalMatchesDecodeStrict: what the one-pass parser takes,
// encoding/json decodes strictly to the same receipt and finds canonical;
// and every canonical receipt without escapes is taken.
func FuzzParseCanonicalMatchesDecodeStrict(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		raw, err := json.Marshal(randomReceipt(r))
		require.NoError(f, err)
		f.Add(raw)
	}
	f.Add([]byte(`{"seq":1,"type":"a","call_id":"b","timestamp":"c","caller":"d","transport":"e","scope":"f","tool":"g","capability_used":"h","params_hash":"i","result_hash":"j","outcome":"k","duration_ms":1e-7,"prev_hash":"l"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := parseCanonical(raw)
		slow, canonical, err := decodeStrictSlow(raw)
		if ok {
			require.NoError(t, err, "%s", raw)
			require.True(t, canonical, "%s", raw)
			require.Equal(t, slow, fast)
			return
		}
		if err == nil && canonical && !bytes.ContainsRune(raw, '\\') {
			t.Fatalf("declined a canonical receipt without escapes: %s", raw)
		}
	})
}

// BenchmarkDecodeStrict is the per-receipt decode of verification.
func BenchmarkDecodeStrict(b *testing.B) {
	rc := receipt(123456, "default", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rc.Seq, rc.Type, rc.PrevHash = 123456, TypeToolCall, Genesis
	raw, err := seal(&rc)
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		fn   func([]byte) (Receipt, bool, error)
	}{{"encoding-json", decodeStrictSlow}, {"one-pass", decodeStrict}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := c.fn(raw); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// TestReceiptFieldsFollowTheStruct: the one-pass parser's layout is
// Receipt's, so a field added to Receipt cannot be skipped by it.
func TestReceiptFieldsFollowTheStruct(t *testing.T) {
	rt := reflect.TypeFor[Receipt]()
	require.Equal(t, rt.NumField(), len(receiptFields))
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		assert.Equal(t, `"`+name+`":`, receiptFields[i].Key, "field %d", i)
		assert.Equal(t, opts == "omitempty", receiptFields[i].Omit, "field %s", name)
	}
}

// TestSealWritesTheCanonicalEncoding: seal builds the stored bytes from the
// hashed encoding instead of encoding the receipt a second time; they must
// be exactly what encoding/json writes for the sealed receipt.
func TestSealWritesTheCanonicalEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	odd := receipt(1, "ten<ant>&\u2028", time.Now())
	odd.Tool = "bad\xff\xfeutf8\x00\n\"quoted\""
	for i := range 2000 {
		rc := randomReceipt(r)
		if i == 0 {
			rc = odd
		}
		rc.Hash = ""
		raw, err := seal(&rc)
		require.NoError(t, err)
		want, err := json.Marshal(rc)
		require.NoError(t, err)
		require.Equal(t, string(want), string(raw))
		require.Equal(t, rc.Hash, chainHashRaw(raw, rc.Hash))
	}
}

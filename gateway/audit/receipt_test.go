package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/compact"

	"github.com/accordsai/accords-mcp/store"
)

// storedBefore is a chain of receipts exactly as an earlier release stored
// them, with the hashes it gave them: every optional field, strings that
// need escapes (HTML, U+2028, control characters, quotes), non-ASCII text,
// the replacement character, and floats in both of json.Marshal's forms.
// Logs written then must keep verifying, so neither the stored encoding
// nor the digest may change.
var storedBefore = []struct{ raw, hash string }{
	{raw: "{\"seq\":1,\"type\":\"mcp_tool_call\",\"call_id\":\"call_0f0f0f0f0f0f0f0f0f0f0f0f\",\"timestamp\":\"2026-05-01T12:00:00.123456789Z\",\"caller\":\"local\",\"transport\":\"stdio\",\"session\":\"stdio-1111111111111111\",\"scope\":\"default\",\"tool\":\"vaultclaw_recipes_search\",\"capability_used\":\"catalog_view\",\"params_hash\":\"hmac-sha256:6f1e\",\"result_hash\":\"hmac-sha256:09ab\",\"outcome\":\"ok\",\"duration_ms\":0.412,\"rules_evaluated\":[\"mail-inside\",\"office-hours\"],\"rules_matched\":[\"mail-inside\"],\"prev_hash\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\",\"hash\":\"sha256:04bed5f283621a24eafabf169d66efb78ef9ba750b08051d60e319498ac61924\"}",
		hash: "sha256:04bed5f283621a24eafabf169d66efb78ef9ba750b08051d60e319498ac61924"},
	{raw: "{\"seq\":2,\"type\":\"mcp_task\",\"call_id\":\"call_2\",\"timestamp\":\"2026-05-01T12:00:01Z\",\"caller\":\"alice \\u003ca\\u0026b\\u003e\",\"transport\":\"http\",\"scope\":\"ten\\u003cant\\u003e\\u0026\\u2028\\u2029 é 日本 😀\",\"tool\":\"bad��utf8\\u0000\\n\\t\\\"quoted\\\"\\\\/\",\"capability_used\":\"vault_execute\",\"params_hash\":\"\",\"result_hash\":\"\",\"outcome\":\"MCP_POLICY_VIOLATION\",\"duration_ms\":1e-7,\"note\":\"line\\u0001\\u001f\x7f\",\"task_ref\":\"hmac-sha256:aa\",\"parent_call_id\":\"call_1\",\"prev_hash\":\"sha256:04bed5f283621a24eafabf169d66efb78ef9ba750b08051d60e319498ac61924\",\"hash\":\"sha256:ecba46648a649ed59b314e214fe4024e43a517c38e53c6f84dc13373d8464ff0\"}",
		hash: "sha256:ecba46648a649ed59b314e214fe4024e43a517c38e53c6f84dc13373d8464ff0"},
	{raw: "{\"seq\":3,\"type\":\"mcp_refusals\",\"call_id\":\"call_3\",\"timestamp\":\"2026-05-01T12:00:59.8Z\",\"caller\":\"mallory\",\"transport\":\"http\",\"scope\":\"mallory-corp\",\"tool\":\"unknown tools\",\"capability_used\":\"session_admin\",\"params_hash\":\"\",\"result_hash\":\"\",\"outcome\":\"MCP_PERMISSION_DENIED\",\"duration_ms\":123456789.25,\"note\":\"7990 more calls refused\",\"count\":7990,\"prev_hash\":\"sha256:ecba46648a649ed59b314e214fe4024e43a517c38e53c6f84dc13373d8464ff0\",\"hash\":\"sha256:80e83bbe2fcb51cc2440ad40bafa8ebca25783bdab3c0b8cfbf91be10c5b4659\"}",
		hash: "sha256:80e83bbe2fcb51cc2440ad40bafa8ebca25783bdab3c0b8cfbf91be10c5b4659"},
	{raw: "{\"seq\":4,\"type\":\"mcp_tool_call\",\"call_id\":\"call_4\",\"timestamp\":\"2026-05-01T12:01:00Z\",\"caller\":\"local\",\"transport\":\"stdio\",\"scope\":\"default\",\"tool\":\"t\",\"capability_used\":\"c\",\"params_hash\":\"\",\"result_hash\":\"\",\"outcome\":\"ok\",\"duration_ms\":1e+21,\"prev_hash\":\"sha256:80e83bbe2fcb51cc2440ad40bafa8ebca25783bdab3c0b8cfbf91be10c5b4659\",\"hash\":\"sha256:51b714cc28685466a27e7e4015e59b1225f69ba0064f1e48608085ab3f9b5ff5\"}",
		hash: "sha256:51b714cc28685466a27e7e4015e59b1225f69ba0064f1e48608085ab3f9b5ff5"},
}

// storeRaw writes stored receipt bytes into the log of db as the writer
// would: the receipts, their tree hashes, a signed checkpoint over them
// all and the head.
func storeRaw(t *testing.T, db *store.DB, raws []string) {
	t.Helper()
	l := open(t, db, Options{}) // a fresh log: origin, buckets
	origin := l.Origin()
	require.NoError(t, l.Close())
	rng := factory.NewEmptyRange(0)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		var head Head
		for _, raw := range raws {
			r, _, err := decodeStrict([]byte(raw))
			if err != nil {
				return err
			}
			if err := b.receipts.Put(store.U64(r.Seq), []byte(raw)); err != nil {
				return err
			}
			var perr error
			if err := rng.Append(LeafHash([]byte(raw)), func(id compact.NodeID, h []byte) {
				if perr == nil {
					perr = b.tree.Put(store.U64(nodeKey(id)), h)
				}
			}); err != nil {
				return err
			}
			if perr != nil {
				return perr
			}
			head = Head{Seq: r.Seq, Hash: r.Hash, Timestamp: r.Timestamp}
		}
		cp, err := signCheckpoint(testKey(t), origin, rng.End(), rootOf(rng))
		if err != nil {
			return err
		}
		if err := b.checkpoints.Put(store.U64(cp.Size), cp.Note); err != nil {
			return err
		}
		return store.PutJSON(b.root, keyHead, head)
	}))
}

// TestReceiptsWrittenBeforeStillVerify: receipts stored by an earlier
// release decode as canonical, keep their digests and chain, are what the
// writer stores today for the same receipt, and a log of them verifies
// and takes new receipts.
func TestReceiptsWrittenBeforeStillVerify(t *testing.T) {
	prev := Genesis
	var raws []string
	for _, s := range storedBefore {
		r, canonical, err := decodeStrict([]byte(s.raw))
		require.NoError(t, err)
		require.True(t, canonical, "%s", s.raw)
		assert.Equal(t, s.hash, r.Hash)
		got, err := digest(r)
		require.NoError(t, err)
		assert.Equal(t, s.hash, got, "digest of receipt %d", r.Seq)
		assert.Equal(t, prev, r.PrevHash)
		prev = r.Hash

		r.Hash = ""
		again, err := seal(&r)
		require.NoError(t, err)
		assert.Equal(t, s.raw, string(again), "stored encoding of receipt %d", r.Seq)
		raws = append(raws, s.raw)
	}

	db := openDB(t)
	storeRaw(t, db, raws)
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, len(storedBefore), rep.Count)

	l := open(t, db, Options{})
	assert.Nil(t, integrity(t, l))
	appendOK(t, l, receipt(5, "default", time.Now()))
	require.NoError(t, l.Close())
	rep = verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, len(storedBefore)+1, rep.Count)
}

// TestAnEditedOldReceiptIsCaught: the stored receipts above, edited in
// one byte, fail verification.
func TestAnEditedOldReceiptIsCaught(t *testing.T) {
	raws := make([]string, len(storedBefore))
	for i, s := range storedBefore {
		raws[i] = s.raw
	}
	raws[2] = strings.Replace(raws[2], `"count":7990`, `"count":7991`, 1)
	db := openDB(t)
	storeRaw(t, db, raws)
	rep := verifyDB(t, db)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemAltered, rep.Problem.Kind)
	assert.Equal(t, uint64(3), rep.Problem.Seq)
}

// TestDecodeStrictRefusesWhatIsNotExactlyTheEncoding: any stored bytes
// other than json.Marshal's encoding of the receipt they decode to are
// an error or not canonical.
func TestDecodeStrictRefusesWhatIsNotExactlyTheEncoding(t *testing.T) {
	base := receipt(1, "default", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	base.Seq, base.Type, base.PrevHash = 1, TypeToolCall, Genesis
	canon, err := json.Marshal(base)
	require.NoError(t, err)
	_, ok, err := decodeStrict(canon)
	require.NoError(t, err)
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
			_, canonical, err := decodeStrict(raw)
			assert.False(t, err == nil && canonical, "%s", raw)
		})
	}
}

// randomReceipt sets every field, the optional ones only sometimes, with
// text json.Marshal writes as it stands (ASCII and other UTF-8) and text
// it escapes.
func randomReceipt(r *rand.Rand) Receipt {
	words := []string{"local", "stdio", "vaultclaw_status", "hmac-sha256:0f3a", "ok", "denied", "é café", "日本", "a b", "x=1;y?", "<&>", "tab\there", "\u2028", `q"\`}
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
		PrevHash: Genesis,
	}
	if r.IntN(3) == 0 {
		rc.DurationMS = r.Float64() * 1000
	}
	if r.IntN(3) == 0 {
		rc.Count = seqs[1+r.IntN(len(seqs)-1)]
	}
	return rc
}

// TestSealedReceiptsDecodeAsWritten: what seal stores, decodeStrict finds
// canonical, decodes to the sealed receipt, and its digest matches; one
// changed field no longer matches the stored hash.
func TestSealedReceiptsDecodeAsWritten(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		want := randomReceipt(r)
		raw, err := seal(&want)
		require.NoError(t, err)
		got, canonical, err := decodeStrict(raw)
		require.NoError(t, err)
		require.True(t, canonical, "%s", raw)
		require.Equal(t, want, got)
		require.True(t, digestMatches(got))
		got.Outcome += "x"
		require.False(t, digestMatches(got))
	}
}

// TestSumArgsDigestsAsBefore: the digests of arguments recorded in
// params_hash stay what an earlier release computed (key: 32 zero bytes).
func TestSumArgsDigestsAsBefore(t *testing.T) {
	h, err := NewHasher(make([]byte, 32))
	require.NoError(t, err)
	for _, c := range []struct{ args, want string }{
		{"{\"b\":1,\"a\":\"x\"}", "hmac-sha256:fe8efa2c6e6955200115feaeb459a71437c68561a7eff945283cf397dc5fbb98"},
		{" { \"z\" : {\"y\":[1, 2.50, -0, 1E3]}, \"a\":\"<&>\\u2028\", \"a\":\"dup\", \"\\u00e9\":\"\\ud83d\\ude00\\ud800\" } ", "hmac-sha256:5622eb48f7b8221167b93154b88dd43275f85fd3ba8e5a64bbabc7d7e9bb40df"},
		{"{\"bad\":\"\xff\"}", "hmac-sha256:154d3150ea2c20fc39a523db1e210c3e74718d01863051a2ce22c6421433526e"},
		{"[1,2]", "hmac-sha256:899f8e77fb95d325c8b767ce7703b6d7ac2e23e3c2244b6c2e07522a3e345f11"},
		{"not json", "hmac-sha256:d451ab1a36476896454a790644a980570491ea5e54e37d34e9eb798e4d2413b2"},
		{"", "hmac-sha256:22f8eea909400af98adf3681a9f31923ef6b7fcba4abb553d92823a3e9d5c25e"},
	} {
		assert.Equal(t, c.want, h.SumArgs([]byte(c.args)), "%q", c.args)
	}
}

// BenchmarkDecodeStrict is the per-receipt decode of verification.
func BenchmarkDecodeStrict(b *testing.B) {
	rc := receipt(123456, "default", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rc.Seq, rc.Type, rc.PrevHash = 123456, TypeToolCall, Genesis
	raw, err := seal(&rc)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := decodeStrict(raw); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkVerifyReceipt is verification's whole check of one stored
// receipt: decoded, found canonical, its digest matching.
func BenchmarkVerifyReceipt(b *testing.B) {
	rc := receipt(123456, "default", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rc.Seq, rc.Type, rc.PrevHash = 123456, TypeToolCall, Genesis
	raw, err := seal(&rc)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		r, ok, err := decodeStrict(raw)
		if err != nil || !ok || !digestMatches(r) {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkSumArgs digests a render's arguments and an upsert's (a
// five-entry bundle).
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
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h.SumArgs(raw)
			}
		})
	}
}

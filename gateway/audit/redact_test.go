package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactRules(t *testing.T) {
	t.Parallel()
	in := `{"token":"tok-123","base_url":"http://vault.local","headers":{"Authorization":"Bearer abc","X-Trace":"t1"},
		"nested":{"client_secret":"s","api-key":"k","idempotency_key":"idem-1","spinner":"on","pin":"1234"},
		"note":"Basic dXNlcjpwYXNz","jwt":"eyJhbGciOi.eyJzdWIiOi.c2ln","dsn":"postgres://u:pw@db/x",
		"mark":"visible","n":12.50,"ok":true,"none":null}`
	got := Redact([]byte(in), []string{"mark"})
	var m map[string]any
	require.NoError(t, json.Unmarshal(got, &m))
	assert.Equal(t, Redacted, m["token"])
	assert.Equal(t, "http://vault.local", m["base_url"])
	h := m["headers"].(map[string]any)
	assert.Equal(t, Redacted, h["Authorization"])
	assert.Equal(t, "t1", h["X-Trace"])
	n := m["nested"].(map[string]any)
	assert.Equal(t, Redacted, n["client_secret"])
	assert.Equal(t, Redacted, n["api-key"])
	assert.Equal(t, Redacted, n["pin"])
	assert.Equal(t, "idem-1", n["idempotency_key"], "an idempotency key is not a secret")
	assert.Equal(t, "on", n["spinner"])
	for _, k := range []string{"note", "jwt", "dsn", "mark"} {
		assert.Equal(t, Redacted, m[k], k)
	}
	assert.Contains(t, string(got), `"n":12.50`, "numbers stay as written")
	assert.Equal(t, true, m["ok"])
	assert.NotContains(t, string(got), "tok-123")
	assert.NotContains(t, string(got), "abc")
}

func TestRedactBoundsSizesWithMarkers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxLoggedString) // 2 bytes a rune
	items := make([]int, MaxLoggedItems+5)
	deep := strings.Repeat(`{"a":`, MaxLoggedDepth+2) + "1" + strings.Repeat("}", MaxLoggedDepth+2)
	raw, err := json.Marshal(map[string]any{"long": long, "items": items, "deep": json.RawMessage(deep)})
	require.NoError(t, err)
	got := string(Redact(raw, nil))
	assert.Contains(t, got, "[cut: 512 more bytes]")
	assert.Contains(t, got, "[cut: 5 more items]")
	assert.Contains(t, got, "[cut: nested deeper than 8]")
	assert.True(t, json.Valid([]byte(got)))

	huge, err := json.Marshal(map[string]any{"a": strings.Repeat("x", MaxLoggedString)})
	require.NoError(t, err)
	assert.NotContains(t, string(Redact(huge, nil)), CutMarker+":", "a value at the bound is kept whole")

	var big []string
	for range MaxLoggedItems {
		big = append(big, strings.Repeat("y", MaxLoggedString))
	}
	raw, err = json.Marshal(big)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(Redact(raw, nil)), `"[cut: `), "a value over MaxLoggedBytes is replaced by a marker")
	assert.Equal(t, `"[cut: not JSON, 5 bytes]"`, string(Redact([]byte("{nope"), nil)))
	assert.Nil(t, Redact(nil, nil))
}

// Receipts carrying the logged-data, tag and external-event fields chain,
// verify and prove like any other; the digests do not depend on them.
func TestReceiptsWithLoggedDataVerifyAndProve(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	l := open(t, db, Options{})
	appendOK(t, l, receipt(1, "default", time.Now()))
	r := receipt(2, "default", time.Now())
	r.Client, r.Tags = "n8n/2.41.0", []string{"catalog", "reads_local", "mcp", "tool-call"}
	r.Params = Redact([]byte(`{"query":"<mail> & \u2028","token":"t"}`), nil)
	r.Result = Redact([]byte(`{"items":[1,2]}`), nil)
	appendOK(t, l, r)
	ev := receipt(3, "default", time.Now())
	ev.Type, ev.EventType, ev.Scroll, ev.BodyHash = TypeExternal, "workflow.step", "automation", "hmac-sha256:22"
	ev.Body = Redact([]byte(`{"step":"send","password":"p"}`), nil)
	ref, err := l.AppendSync(ev)
	require.NoError(t, err)
	require.NoError(t, l.Checkpoint())
	rep := verifyDB(t, db)
	require.Nil(t, rep.Problem)
	p, err := Prove(db, ref.Seq)
	require.NoError(t, err)
	_, err = VerifyProof(p, testKey(t).Verifier(), "")
	require.NoError(t, err)
	got, err := FindCall(db, "call_3")
	require.NoError(t, err)
	assert.Equal(t, TypeExternal, got.Type)
	assert.JSONEq(t, `{"step":"send","password":"[redacted]"}`, string(got.Body))
	require.NoError(t, l.Close())
}

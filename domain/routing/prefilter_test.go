package routing

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prefilterSeeds hold every keyword the prefilter tests for, in odd cases
// and places, and the non-ASCII letters that (?i) folds to ASCII ones.
var prefilterSeeds = []string{
	"send an email to alice@example.com with subject Quarterly invoice saying the invoice is attached",
	"send an email to skl83@cornell.edu with subject 'hello' and body 'testing from vault'",
	`email bob@x.com, subject: "Q3 numbers", body: 'see attached'`,
	"SUBJECT IS big news AND BODY IS hello there", "Subject line: x", "with the subject of it and a message body hi",
	"read message 18c2f3a9b0 and thread_id=abc", "MESSAGE_ID: m1 THREAD-ID = t2", "the Message Id is ab12cd34ef",
	"show the top 5 in gmail; method: delete", "LAST 3 MAILS", "12 messages please", "latest 7",
	"make a GET request to https://api.example.com/v1/status", "Post to HTTPS://X.EXAMPLE/h.", "method = PATCH",
	"label: Receipts", "LABEL is work", "show my inbox",
	"meſſage id: abc123", "show the laſt 5 mails", "with ſubject hi and body there", "ſubject: hi", "meſſage body ſay hi",
	"thread id: \u212a123", "\u212aelvin label: x", "la\u017ft 4 me\u017f\u017fages", "http\u017f://x.example",
	"subjectbody", "bodysubject", "@", "a@b.co", "", " ", "\x00\xff",
}

// extractJSON is extract's answer as JSON, with the prefilter on or off.
func extractJSON(t testing.TB, reg *Registry, s string, on bool) string {
	t.Helper()
	old := prefilter
	prefilter = on
	defer func() { prefilter = old }()
	out, err := json.Marshal(reg.extract(newText(s)))
	require.NoError(t, err)
	return string(out)
}

// The prefilter only skips patterns that cannot match: every extraction is
// the one without it.
func TestPrefilterChangesNoExtraction(t *testing.T) {
	reg, err := Default()
	require.NoError(t, err)
	for _, s := range prefilterSeeds {
		assert.Equal(t, extractJSON(t, reg, s, false), extractJSON(t, reg, s, true), s)
	}
	// The folds are real: the prefilter must let these through.
	assert.Contains(t, extractJSON(t, reg, "meſſage id: abc123", true), `"message_id":"abc123"`)
	assert.Contains(t, extractJSON(t, reg, "show the laſt 5 mails", true), `"page_limit":5`)
	// And it does skip: a text without the keywords runs none of them.
	tx := newText("what's the weather in boston tomorrow")
	for _, w := range []string{"subject", "body", "message", "thread", "label", "http", "@"} {
		assert.False(t, tx.mayHold(w), w)
	}
	assert.True(t, newText("weather in Zürich").mayHold("subject"), "non-ASCII text runs every pattern")
}

func FuzzPrefilterChangesNoExtraction(f *testing.F) {
	for _, s := range prefilterSeeds {
		f.Add(s)
	}
	reg, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			s = s[:4096]
		}
		want, got := extractJSON(t, reg, s, false), extractJSON(t, reg, s, true)
		if want != got {
			t.Fatalf("extract of %q:\nwithout prefilter %s\nwith prefilter    %s", s, want, got)
		}
	})
}

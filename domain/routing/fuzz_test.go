package routing

import (
	"context"
	"encoding/json"
	"testing"
)

// FuzzResolve: no panic for any request text, and the same input always
// gives the same output (byte-identical JSON).
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"send an email to skl83@cornell.edu with subject 'hello' and body 'testing from vault'",
		"send email to skl83@cornell.edu about weather in boston tomorrow",
		"reply to thread_id: t123 in gmail",
		"email bob@example.com tomorrow's weather in paris",
		"send this webhook request to the partner endpoint https://x.example/h",
		"without my passport", "'s weather", "weather in", "subject and body", "", "\x00\xff",
	} {
		f.Add(s)
	}
	reg, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	search := &fakeSearch{hits: []Hit{calendarHit, partnerHit, untrashHit("1.2.0"), untrashHit("1.3.0")}}
	r := New(reg, SearcherFunc(func(ctx context.Context, q SearchQuery) ([]Hit, error) {
		return (&fakeSearch{hits: search.hits}).Search(ctx, q)
	}))
	facts := map[string]any{"weather_summary": "sunny"}
	f.Fuzz(func(t *testing.T, text string) {
		a := r.Resolve(context.Background(), Request{Text: text, Facts: facts, AllowSearch: true})
		b := r.Resolve(context.Background(), Request{Text: text, Facts: facts, AllowSearch: true})
		ja, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("nondeterministic output for %q:\n%s\n%s", text, ja, jb)
		}
		switch a.Status {
		case StatusExecutable, StatusMissingInputs, StatusNotEligible, StatusAmbiguous:
		default:
			t.Fatalf("unknown status %q", a.Status)
		}
		if (a.Status == StatusMissingInputs) != (len(a.MissingInputs) > 0) {
			t.Fatalf("status %s with missing %v", a.Status, a.MissingInputs)
		}
	})
}

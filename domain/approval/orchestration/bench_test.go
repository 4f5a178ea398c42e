package orchestration

import (
	"context"
	"fmt"
	"testing"
)

func benchProfiles(n int) []Profile {
	out := make([]Profile, n)
	for i := range out {
		out[i] = DecodeProfile(profileJSON(fmt.Sprintf("p%04d", i),
			fmt.Sprintf(`{"slot":"api_key","allowed_intents":["http.auth"],"allowed_modes":["read"],"allowed_targets":["https://api%d.example.com","https://api.example.com"]},{"slot":"s%d","allowed_modes":["read"]}`, i, i)))
	}
	return out
}

func benchReqs() []Requirement {
	reqs := []Requirement{vector1}
	for i := range 4 {
		reqs = append(reqs, Requirement{Slot: "api_key", Mode: "read", Target: fmt.Sprintf("https://api%d.example.com", i), Required: true})
	}
	return reqs
}

// BenchmarkBest scores 200 candidate profiles against 5 requirements.
func BenchmarkBest(b *testing.B) {
	profiles, reqs := benchProfiles(200), benchReqs()
	b.ReportAllocs()
	for b.Loop() {
		Best(profiles, reqs)
	}
}

func BenchmarkHash12(b *testing.B) {
	reqs := benchReqs()
	b.ReportAllocs()
	for b.Loop() {
		Hash12(reqs)
	}
}

// BenchmarkPreflightPlan resolves a 20-step plan (10 generic.http steps with
// plan_input bindings) against 50 stored profiles.
func BenchmarkPreflightPlan(b *testing.B) {
	var profiles []map[string]any
	for i := range 50 {
		profiles = append(profiles, profileJSON(fmt.Sprintf("p%02d", i), exactSlot))
	}
	steps := ""
	for i := range 20 {
		if i > 0 {
			steps += ","
		}
		if i%2 == 0 {
			steps += fmt.Sprintf(`{"step_id":"s%d","connector_id":"google","verb":"google.gmail.send.v1","request_base":{"to":["a@b"]}}`, i)
			continue
		}
		steps += fmt.Sprintf(`{"step_id":"s%d","connector_id":"generic.http","verb":"generic.http.request.v1",
		 "request_base":{"method":"GET","secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read"}]},
		 "request_bindings":[{"path":"/url","ref":{"source":"plan_input","path":"/u"}},{"path":"/secret_attachments/0/target","ref":{"source":"plan_input","path":"/t/0"}}]}`, i)
	}
	plan := planWith(steps)
	input := mustJSON(`{"u":"https://api.example.com/x","t":["https://api.example.com"]}`)
	b.ReportAllocs()
	for b.Loop() {
		f := newFake(profiles...)
		if _, _, err := NewResolver(f).PreflightPlan(context.Background(), plan, input, PlanOptions{Strict: true, PlanInputSet: true}); err != nil {
			b.Fatal(err)
		}
	}
}

package rules

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var known = []string{"vaultclaw_connector_execute", "vaultclaw_connector_execute_job", "vaultclaw_plan_execute",
	"vaultclaw_session_status", "vaultclaw_passport_email_workflow"}

// The examples of docs/gateway.md, compiled and exercised as written there.
var docExamples = []Spec{
	{ID: "mail-inside", Tools: []string{"vaultclaw_connector_execute*", "vaultclaw_plan_execute"},
		DenyIf:  `args.request.connector_id == "google" && args.request.request.to.exists(t, email_domain(t) != "acme.example")`,
		Message: "mail leaves acme.example only with a person's send", OnError: "allow"},
	{ID: "http-allowlist", Tools: []string{"vaultclaw_connector_execute*"},
		DenyIf:  `args.request.connector_id == "generic.http" && !(url_host(args.request.request.url) in ["api.acme.example", "status.acme.example"])`,
		Message: "generic HTTP only to the listed hosts", OnError: "allow"},
	{ID: "plan-size", Tools: []string{"vaultclaw_plan_execute"},
		DenyIf: `size(args.plan.steps) > 5`, Message: "plans have at most 5 steps"},
	{ID: "office-hours", Tools: []string{"vaultclaw_connector_execute*", "vaultclaw_plan_execute"},
		DenyIf:  `local_weekday(now, "Europe/Berlin") in [0, 6] || local_hour(now, "Europe/Berlin") < 8 || local_hour(now, "Europe/Berlin") >= 18`,
		Message: "no execution outside working hours (Mon-Fri 08-18 Berlin)"},
}

var tuesdayNoon = time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC) // 12:00 in Berlin

func eval(t *testing.T, s *Set, tool, args string, now time.Time) Decision {
	t.Helper()
	return s.Evaluate(Input{Tool: tool, Caller: "local", Tenant: "default", Capability: "vault_execute", Args: json.RawMessage(args), Now: now}, PhaseArgs)
}

func TestDocExamples(t *testing.T) {
	s, err := Compile(docExamples, known, nil)
	require.NoError(t, err)

	mail := func(to ...string) string {
		b, _ := json.Marshal(map[string]any{"request": map[string]any{"connector_id": "google", "verb": "gmail.send", "request": map[string]any{"to": to}}})
		return string(b)
	}
	d := eval(t, s, "vaultclaw_connector_execute", mail("bob@acme.example", "Carol <carol@ACME.example>"), tuesdayNoon)
	assert.False(t, d.Denied(), "%+v", d)
	assert.Equal(t, []string{"mail-inside", "http-allowlist", "office-hours"}, d.Evaluated)

	d = eval(t, s, "vaultclaw_connector_execute_job", mail("bob@acme.example", "eve@evil.example"), tuesdayNoon)
	require.True(t, d.Denied())
	assert.Equal(t, []string{"mail-inside"}, d.MatchedIDs())
	assert.Equal(t, "mail leaves acme.example only with a person's send", d.Matched[0].Message)

	http := func(u string) string {
		return fmt.Sprintf(`{"request":{"connector_id":"generic.http","verb":"http.request","request":{"method":"GET","url":%q}}}`, u)
	}
	assert.False(t, eval(t, s, "vaultclaw_connector_execute", http("https://api.acme.example/v1/x"), tuesdayNoon).Denied())
	for _, bad := range []string{"https://evil.example/", "https://api.acme.example@evil.example/", "https://API.acme.example.evil.example/"} {
		assert.Equal(t, []string{"http-allowlist"}, eval(t, s, "vaultclaw_connector_execute", http(bad), tuesdayNoon).MatchedIDs(), bad)
	}

	plan := func(n int) string {
		steps := make([]any, n)
		for i := range steps {
			steps[i] = map[string]any{"id": fmt.Sprintf("s%d", i)}
		}
		b, _ := json.Marshal(map[string]any{"plan": map[string]any{"steps": steps}})
		return string(b)
	}
	assert.False(t, eval(t, s, "vaultclaw_plan_execute", plan(5), tuesdayNoon).Denied())
	assert.Equal(t, []string{"plan-size"}, eval(t, s, "vaultclaw_plan_execute", plan(6), tuesdayNoon).MatchedIDs())

	saturday := time.Date(2026, 5, 9, 10, 0, 0, 0, time.UTC)
	evening := time.Date(2026, 5, 5, 17, 30, 0, 0, time.UTC) // 19:30 Berlin
	assert.Equal(t, []string{"plan-size", "office-hours"}, eval(t, s, "vaultclaw_plan_execute", plan(9), saturday).MatchedIDs(), "every matching rule is named")
	assert.Equal(t, []string{"office-hours"}, eval(t, s, "vaultclaw_plan_execute", plan(1), evening).MatchedIDs())

	// Rules not naming a tool do not run for it.
	d = eval(t, s, "vaultclaw_session_status", `{}`, saturday)
	assert.Empty(t, d.Evaluated)
	assert.False(t, d.Denied())
}

func TestEveryInputIsVisible(t *testing.T) {
	specs := []Spec{
		{ID: "tool", Tools: []string{"*"}, DenyIf: `tool == "vaultclaw_session_status"`},
		{ID: "caller", Tools: []string{"*"}, DenyIf: `caller == "intruder"`},
		{ID: "tenant", Tools: []string{"*"}, DenyIf: `tenant.startsWith("blocked-")`},
		{ID: "capability", Tools: []string{"*"}, DenyIf: `capability == "vault_execute"`},
		{ID: "args", Tools: []string{"*"}, DenyIf: `has(args.limit) && args.limit == 7`},
		{ID: "now", Tools: []string{"*"}, DenyIf: `now < timestamp("2000-01-01T00:00:00Z")`},
		{ID: "rendered", Tools: []string{"vaultclaw_plan_execute"}, DenyIf: `has(rendered.plan) && rendered.plan.steps.exists(s, s.connector_id == "generic.http")`},
	}
	s, err := Compile(specs, known, nil)
	require.NoError(t, err)
	base := Input{Tool: "vaultclaw_connector_execute", Caller: "local", Tenant: "default", Capability: "vault_read", Args: json.RawMessage(`{"limit": 6}`), Now: tuesdayNoon}
	require.False(t, s.Evaluate(base, PhaseArgs).Denied())
	for id, mod := range map[string]func(*Input){
		"tool":       func(in *Input) { in.Tool = "vaultclaw_session_status" },
		"caller":     func(in *Input) { in.Caller = "intruder" },
		"tenant":     func(in *Input) { in.Tenant = "blocked-acme" },
		"capability": func(in *Input) { in.Capability = "vault_execute" },
		"args":       func(in *Input) { in.Args = json.RawMessage(`{"limit": 7}`) },
		"now":        func(in *Input) { in.Now = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		in := base
		mod(&in)
		assert.Equal(t, []string{id}, s.Evaluate(in, PhaseArgs).MatchedIDs(), id)
	}
	// `rendered` rules wait for the rendered phase and see the request.
	in := base
	in.Tool = "vaultclaw_plan_execute"
	assert.NotContains(t, s.Evaluate(in, PhaseArgs).Evaluated, "rendered")
	assert.True(t, s.Applies("vaultclaw_plan_execute", PhaseRendered))
	assert.False(t, s.Applies("vaultclaw_connector_execute", PhaseRendered))
	in.Rendered = map[string]any{"plan": map[string]any{"steps": []any{map[string]any{"connector_id": "google"}, map[string]any{"connector_id": "generic.http"}}}}
	d := s.Evaluate(in, PhaseRendered)
	assert.Equal(t, []string{"rendered"}, d.Evaluated)
	assert.Equal(t, []string{"rendered"}, d.MatchedIDs())
}

func TestBadRulesAreRefusedAtLoad(t *testing.T) {
	cases := map[string]struct {
		spec Spec
		want string
	}{
		"syntax":        {Spec{ID: "x", Tools: []string{"*"}, DenyIf: `args.to ==`}, "deny_if: ERROR"},
		"unknown var":   {Spec{ID: "x", Tools: []string{"*"}, DenyIf: `argz.to == "a"`}, "undeclared reference to 'argz'"},
		"not boolean":   {Spec{ID: "x", Tools: []string{"*"}, DenyIf: `tool + "x"`}, "must be a boolean expression"},
		"no tools":      {Spec{ID: "x", DenyIf: `true`}, "tools: required"},
		"unknown tool":  {Spec{ID: "x", Tools: []string{"vaultclaw_nope*"}, DenyIf: `true`}, "names no tool"},
		"bad glob":      {Spec{ID: "x", Tools: []string{"[a"}, DenyIf: `true`}, "not a valid name or glob"},
		"no expression": {Spec{ID: "x", Tools: []string{"*"}}, "deny_if: required"},
		"bad id":        {Spec{ID: "has space", Tools: []string{"*"}, DenyIf: `true`}, "id:"},
		"on_error":      {Spec{ID: "x", Tools: []string{"*"}, DenyIf: `true`, OnError: "maybe"}, "on_error"},
	}
	for name, tc := range cases {
		_, err := Compile([]Spec{{ID: "ok", Tools: []string{"*"}, DenyIf: "false"}, tc.spec}, known, []int{3, 12})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.Contains(t, err.Error(), "line 12: rules[1]", name)
	}
	_, err := Compile([]Spec{{ID: "a", Tools: []string{"*"}, DenyIf: "false"}, {ID: "a", Tools: []string{"*"}, DenyIf: "true"}}, known, nil)
	require.ErrorContains(t, err, "duplicate rule id")
}

func TestEvaluationErrorsDenyUnlessAllowed(t *testing.T) {
	s, err := Compile([]Spec{
		{ID: "strict", Tools: []string{"*"}, DenyIf: `args.request.to.size() > 3`},
		{ID: "lenient", Tools: []string{"*"}, DenyIf: `args.request.to.size() > 3`, OnError: "allow"},
	}, known, nil)
	require.NoError(t, err)
	d := eval(t, s, "vaultclaw_connector_execute", `{"other": 1}`, tuesdayNoon)
	assert.Equal(t, []string{"strict"}, d.MatchedIDs())
	assert.Contains(t, d.Matched[0].Message, "could not be evaluated")
	// Arguments that are not an object are an empty object.
	d = eval(t, s, "vaultclaw_connector_execute", `[1,2]`, tuesdayNoon)
	assert.Equal(t, []string{"strict"}, d.MatchedIDs())
}

func TestNilSetAllowsEverything(t *testing.T) {
	var s *Set
	d := s.Evaluate(Input{Tool: "vaultclaw_connector_execute"}, PhaseArgs)
	assert.False(t, d.Denied())
	assert.False(t, s.Applies("x", PhaseArgs))
}

// twentyRules is a realistic rule set: every rule names the tool called.
func twentyRules() []Spec {
	var specs []Spec
	for i := range 5 {
		specs = append(specs,
			Spec{ID: fmt.Sprintf("mail-%d", i), Tools: []string{"vaultclaw_connector_execute*"},
				DenyIf: `args.request.connector_id == "google" && args.request.request.to.exists(t, email_domain(t) != "acme.example")`, OnError: "allow"},
			Spec{ID: fmt.Sprintf("host-%d", i), Tools: []string{"vaultclaw_connector_execute*"},
				DenyIf: `args.request.connector_id == "generic.http" && !(url_host(args.request.request.url) in ["api.acme.example"])`, OnError: "allow"},
			Spec{ID: fmt.Sprintf("hours-%d", i), Tools: []string{"*"},
				DenyIf: `local_weekday(now, "Europe/Berlin") in [0, 6] || local_hour(now, "Europe/Berlin") < 8 || local_hour(now, "Europe/Berlin") >= 18`},
			Spec{ID: fmt.Sprintf("who-%d", i), Tools: []string{"*"},
				DenyIf: `caller == "intruder" || tenant.startsWith("blocked-") || capability == "remote_install"`},
		)
	}
	return specs
}

// BenchmarkEvaluate20Rules is one call's rule evaluation with 20 rules that
// all apply (target: at most 20 µs).
func BenchmarkEvaluate20Rules(b *testing.B) {
	s, err := Compile(twentyRules(), known, nil)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Tool: "vaultclaw_connector_execute", Caller: "openclaw-acme", Tenant: "acme", Capability: "vault_execute",
		Args: json.RawMessage(`{"request":{"connector_id":"google","verb":"gmail.send","policy_version":"1","request":{"to":["bob@acme.example","carol@acme.example"],"subject":"hi","body":"hello"}}}`),
		Now:  tuesdayNoon}
	if d := s.Evaluate(in, PhaseArgs); d.Denied() || len(d.Evaluated) != 20 {
		b.Fatalf("unexpected decision %+v", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Evaluate(in, PhaseArgs)
	}
}

func TestTimeFunctionsAgreeWithTheStandardOnes(t *testing.T) {
	s, err := Compile([]Spec{
		{ID: "same", Tools: []string{"*"}, DenyIf: `local_hour(now, "America/New_York") != now.getHours("America/New_York") || local_weekday(now, "Asia/Tokyo") != now.getDayOfWeek("Asia/Tokyo")`},
		{ID: "bad-zone", Tools: []string{"*"}, DenyIf: `local_hour(now, "Mars/Olympus") == 3`},
	}, known, nil)
	require.NoError(t, err)
	for h := range 48 {
		d := eval(t, s, "vaultclaw_session_status", `{}`, tuesdayNoon.Add(time.Duration(h)*time.Hour))
		assert.Equal(t, []string{"bad-zone"}, d.MatchedIDs(), "hour %d", h)
	}
}

func TestPhaseAllRunsRenderedRulesOnAnEmptyRequest(t *testing.T) {
	s, err := Compile([]Spec{{ID: "r", Tools: []string{"*"}, DenyIf: `has(rendered.plan)`},
		{ID: "strict", Tools: []string{"*"}, DenyIf: `rendered.plan.steps.size() > 1`}}, known, nil)
	require.NoError(t, err)
	d := s.Evaluate(Input{Tool: "vaultclaw_connector_execute", Args: json.RawMessage(`{}`)}, PhaseAll)
	assert.Equal(t, []string{"r", "strict"}, d.Evaluated)
	assert.Equal(t, []string{"strict"}, d.MatchedIDs(), "rendered is {}: has() is false, a field access fails and denies")
}

package orchestration

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHash12Vectors(t *testing.T) {
	cases := []struct {
		reqs      []Requirement
		canonical string
		hash      string
	}{
		{[]Requirement{{Slot: "api_key", Intent: "http.auth", ExpectedSecretTypes: []string{"api-key"}, Mode: "read", Target: "https://api.example.com", Required: true}},
			`[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com","required":true}]`,
			"8042d5b7fd92"},
		{[]Requirement{{Slot: "auth", Mode: "read", Target: "https://example.com", Required: true}},
			`[{"slot":"auth","mode":"read","target":"https://example.com","required":true}]`,
			"a9f1b93254cd"},
		{[]Requirement{{Slot: "k", Mode: "read", Target: "https://x.example.com/a?b=1&c=<2>", Required: true}},
			`[{"slot":"k","mode":"read","target":"https://x.example.com/a?b=1\u0026c=\u003c2\u003e","required":true}]`,
			"dcf0f00a8818"},
	}
	for _, c := range cases {
		raw, err := json.Marshal(c.reqs)
		require.NoError(t, err)
		assert.Equal(t, c.canonical, string(raw))
		assert.Equal(t, c.hash, Hash12(c.reqs))
		assert.Equal(t, "mcp.auto."+c.hash, AutoProfileID(c.reqs))
		assert.Equal(t, "mcp-unbounded-profile-"+c.hash, AutoIdempotencyKey(c.reqs))
	}
}

func TestDeriveRequirementsNormalises(t *testing.T) {
	payload := mustJSON(`{"secret_attachments":[
		{"slot":" b ","mode":"read","target":"t2","expected_secret_types":["z"," a ","z",""],"required":false},
		{"slot":"a","mode":"write","target":"t1","intent":"http.auth"},
		{"slot":"a","mode":"read","target":"t9"},
		{"slot":"a","mode":"read","target":"t9"}]}`)
	reqs, err := DeriveRequirements(payload, "request.request")
	require.NoError(t, err)
	require.Len(t, reqs, 4, "duplicates are kept")
	assert.Equal(t, []string{"a:read:t9", "a:read:t9", "a:write:t1", "b:read:t2"}, []string{reqs[0].Key(), reqs[1].Key(), reqs[2].Key(), reqs[3].Key()})
	assert.Equal(t, []string{"a", "z"}, reqs[3].ExpectedSecretTypes)
	for _, r := range reqs {
		assert.True(t, r.Required)
	}
	// Derivation from the same attachments in another order hashes the same.
	payload2 := mustJSON(`{"secret_attachments":[{"slot":"a","mode":"read","target":"t9"},{"slot":"a","mode":"read","target":"t9"},{"slot":"b","mode":"read","target":"t2","expected_secret_types":["a","z"]},{"slot":"a","mode":"write","target":"t1","intent":"http.auth"}]}`)
	reqs2, err := DeriveRequirements(payload2, "")
	require.NoError(t, err)
	assert.Equal(t, Hash12(reqs), Hash12(reqs2))
}

func TestDeriveRequirementsEmptyAndMalformed(t *testing.T) {
	for _, p := range []string{`{}`, `{"secret_attachments":[]}`, `{"secret_attachments":"x"}`} {
		reqs, err := DeriveRequirements(mustJSON(p), "request.request")
		require.NoError(t, err)
		assert.Empty(t, reqs)
	}
	_, err := DeriveRequirements(mustJSON(`{"secret_attachments":[{"slot":"a","mode":"read"}]}`), "request.request")
	ae := requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "secret_attachments[0] requires slot/mode/target", ae.Message)
	assert.Equal(t, "request.request.secret_attachments[0].target", ae.Details["field"])

	_, err = DeriveRequirements(mustJSON(`{"secret_attachments":[{"slot":"a","mode":"read","target":"x"},"oops"]}`), "request.request")
	ae = requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "secret_attachments[1] must be object", ae.Message)
	assert.Equal(t, "request.request.secret_attachments[1]", ae.Details["field"])
}

func TestNormalizeRequirements(t *testing.T) {
	_, err := NormalizeRequirements([]Requirement{}, "requirements")
	assert.Equal(t, "requirements must be a non-empty array", requireCode(t, err, apperr.CodeValidation).Message)
	_, err = NormalizeRequirements(nil, "requirements")
	requireCode(t, err, apperr.CodeValidation)
	// A non-array or a non-object entry is refused by the tool's schema
	// before this runs (tools: TestTypedArgumentErrors).
	reqs, err := NormalizeRequirements([]Requirement{{Slot: "a"}, {Slot: " b ", Mode: "read", Target: "x",
		ExpectedSecretTypes: []string{" t2", "t1", "", "t2"}}}, "requirements")
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	assert.Equal(t, "b", reqs[0].Slot)
	assert.Equal(t, []string{"t1", "t2"}, reqs[0].ExpectedSecretTypes)
	assert.True(t, reqs[0].Required, "every requirement is required")
}

func requireCode(t *testing.T, err error, code string) *apperr.Error {
	t.Helper()
	require.Error(t, err)
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, code, ae.Code, ae.Message)
	return ae
}

var vector1 = Requirement{Slot: "api_key", Intent: "http.auth", ExpectedSecretTypes: []string{"api-key"}, Mode: "read", Target: "https://api.example.com", Required: true}

func profileJSON(id string, slot string) map[string]any {
	return mustJSON(`{"type":"connector.unbounded.profile.v1","profile_id":"` + id + `","connector_id":"generic.http","verb":"generic.http.request.v1","slots":[` + slot + `]}`)
}

const exactSlot = `{"slot":"api_key","allowed_intents":["http.auth"],"expected_secret_types":["api-key"],"allowed_modes":["read"],"allowed_targets":["https://api.example.com"]}`

func TestScoreAndMissing(t *testing.T) {
	p := DecodeProfile(profileJSON("p", exactSlot))
	m := Score(p, []Requirement{vector1})
	assert.Equal(t, 5, m.Score)
	assert.Equal(t, []string{"api_key:read:https://api.example.com"}, m.Satisfied)
	assert.Nil(t, m.Missing)

	// Unrestricted slot: intent and target points still earned; types not compared.
	open := DecodeProfile(profileJSON("o", `{"slot":"api_key"}`))
	assert.Equal(t, 4, Score(open, []Requirement{vector1}).Score)

	cases := map[string]string{
		`{"slot":"other"}`: "api_key:read:https://api.example.com:slot_missing",
		`{"slot":"api_key","allowed_intents":["x"],"allowed_modes":["write"]}`:                   "api_key:read:https://api.example.com:intent",
		`{"slot":"api_key","expected_secret_types":["password"],"allowed_modes":["write"]}`:      "api_key:read:https://api.example.com:expected_secret_types",
		`{"slot":"api_key","allowed_modes":["write"]}`:                                           "api_key:read:https://api.example.com:mode",
		`{"slot":"api_key","allowed_modes":["READ "],"allowed_targets":["https://api.example"]}`: "api_key:read:https://api.example.com:target",
	}
	for slot, want := range cases {
		m := Score(DecodeProfile(profileJSON("p", slot)), []Requirement{vector1})
		assert.Equal(t, []string{want}, m.Missing, slot)
		assert.False(t, m.Qualifies())
		assert.Nil(t, m.AsMap()["satisfied_requirements"])
	}
}

func TestBestTieBreakAndScore(t *testing.T) {
	profiles := []Profile{
		DecodeProfile(profileJSON("zz-last", exactSlot)),
		DecodeProfile(profileJSON("aa-first", exactSlot)),
		DecodeProfile(profileJSON("bad", `{"slot":"api_key","allowed_modes":["write"]}`)),
	}
	best, matches := Best(profiles, []Requirement{vector1})
	require.Equal(t, 1, best)
	assert.Equal(t, "aa-first", matches[best].ProfileID)

	// A higher score beats a smaller id.
	profiles = []Profile{
		DecodeProfile(profileJSON("a-open", `{"slot":"api_key"}`)),
		DecodeProfile(profileJSON("b-exact", exactSlot)),
	}
	best, _ = Best(profiles, []Requirement{vector1})
	assert.Equal(t, "b-exact", profiles[best].ProfileID)

	best, _ = Best([]Profile{DecodeProfile(profileJSON("bad", `{"slot":"x"}`))}, []Requirement{vector1})
	assert.Equal(t, -1, best)
}

func TestResolveExistingProfile(t *testing.T) {
	f := newFake(profileJSON("zz-last", exactSlot), profileJSON("aa-first", exactSlot))
	res, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, true)
	require.NoError(t, err)
	assert.Equal(t, "aa-first", res.ProfileID)
	assert.False(t, res.Created)
	assert.Equal(t, 5, res.Match.Score)
	assert.Equal(t, "list?connector_id=generic.http&verb=generic.http.request.v1", f.calls[0])
	assert.Empty(t, f.upserts)
}

func TestResolveAutoCreateVector1(t *testing.T) {
	f := newFake()
	res, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, true)
	require.NoError(t, err)
	assert.True(t, res.Created)
	assert.Equal(t, "mcp.auto.8042d5b7fd92", res.ProfileID)
	require.Len(t, f.upserts, 1)
	assert.Equal(t, "mcp-unbounded-profile-8042d5b7fd92", f.upserts[0].Key)
	assert.Equal(t, `{"profile":{"type":"connector.unbounded.profile.v1","profile_id":"mcp.auto.8042d5b7fd92","connector_id":"generic.http","verb":"generic.http.request.v1","slots":[{"slot":"api_key","required":true,"allowed_intents":["http.auth"],"expected_secret_types":["api-key"],"allowed_modes":["read"],"allowed_targets":["https://api.example.com"]}]}}`, f.upserts[0].Body)
	assert.Equal(t, "get:mcp.auto.8042d5b7fd92", f.calls[len(f.calls)-1])
	assert.Equal(t, 5, res.Match.Score)
}

func TestResolveAutoCreateReadBackFails(t *testing.T) {
	f := newFake()
	f.noReadBack = true
	res, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, true)
	require.NoError(t, err)
	assert.Equal(t, "mcp.auto.8042d5b7fd92", res.ProfileID)
	assert.Equal(t, "mcp.auto.8042d5b7fd92", res.Profile.ProfileID)
}

func TestResolveAutoCreateInsufficientScope(t *testing.T) {
	f := newFake()
	f.upsertErr = &apperr.Error{Code: apperr.CodeAuthForbidden, Category: apperr.CatAuth, VaultCode: "insufficient_scope"}
	_, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, true)
	ae := requireCode(t, err, apperr.CodeUnboundedProfileRequired)
	assert.Equal(t, apperr.CatSecrets, ae.Category)
	assert.Equal(t, "mcp-unbounded-profile-8042d5b7fd92", ae.Details["idempotency_key"])
	assert.Equal(t, []Requirement{vector1}, ae.Details["requirements"])

	f.upsertErr = &apperr.Error{Code: apperr.CodeAuthForbidden, VaultCode: "FORBIDDEN"}
	_, err = NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, true)
	requireCode(t, err, apperr.CodeAuthForbidden)
}

func TestResolveNoMatchNoAutoCreate(t *testing.T) {
	f := newFake(profileJSON("w", `{"slot":"api_key","allowed_modes":["write"]}`))
	_, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, false)
	ae := requireCode(t, err, apperr.CodeUnboundedProfileRequired)
	assert.Equal(t, "no compatible unbounded profile found", ae.Message)
	assert.Empty(t, f.upserts)
	_, err = NewResolver(f).Resolve(context.Background(), nil, true)
	ae = requireCode(t, err, apperr.CodeUnboundedProfileRequired)
	assert.Equal(t, "no unbounded requirements found", ae.Message)
}

func TestResolveSkipsFailingGetAndPropagatesListError(t *testing.T) {
	f := newFake(profileJSON("aa", exactSlot), profileJSON("bb", exactSlot))
	f.getErr["aa"] = &apperr.Error{Code: apperr.CodeInternal}
	res, err := NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, false)
	require.NoError(t, err)
	assert.Equal(t, "bb", res.ProfileID)

	f.listErr = apperr.New(apperr.CodeNetwork, "down")
	_, err = NewResolver(f).Resolve(context.Background(), []Requirement{vector1}, false)
	requireCode(t, err, apperr.CodeNetwork)
}

func genericRequest(payload string) map[string]any {
	return mustJSON(`{"connector_id":"generic.http","verb":"generic.http.request.v1","request":` + payload + `}`)
}

func TestPrepareJobRequest(t *testing.T) {
	ctx := context.Background()
	f := newFake(profileJSON("zz-last", exactSlot), profileJSON("aa-first", exactSlot))
	req := genericRequest(`{"method":"GET","url":"https://api.example.com/x","secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com"}]}`)
	pf, err := NewResolver(f).PrepareJobRequest(ctx, req, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "resolved", pf["status"])
	assert.Equal(t, "aa-first", req["request"].(map[string]any)["profile_id"])
	assert.Equal(t, 5, pf["profile_match"].(map[string]any)["score"])

	// U6: profile already present.
	f2 := newFake()
	req = genericRequest(`{"profile_id":"given","secret_attachments":[{"slot":"a","mode":"r","target":"t"}]}`)
	pf, err = NewResolver(f2).PrepareJobRequest(ctx, req, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "profile_id already provided", pf["reason"])
	assert.Empty(t, f2.calls)

	// U7: no attachments.
	pf, err = NewResolver(f2).PrepareJobRequest(ctx, genericRequest(`{"url":"x"}`), DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "no unbounded requirements derived", pf["reason"])
	assert.Empty(t, f2.calls)

	// U8: malformed attachment is a validation error (D2).
	_, err = NewResolver(f2).PrepareJobRequest(ctx, genericRequest(`{"secret_attachments":[{"slot":"a","mode":"r"}]}`), DefaultOptions())
	requireCode(t, err, apperr.CodeValidation)

	// Not generic / disabled / request not object.
	pf, err = NewResolver(f2).PrepareJobRequest(ctx, mustJSON(`{"connector_id":"google","verb":"google.gmail.send.v1","request":{}}`), DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"orchestrated": false, "reason": "connector is not generic.http.request.v1"}, pf)
	pf, err = NewResolver(f2).PrepareJobRequest(ctx, genericRequest(`{}`), Options{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"orchestrated": false}, pf)
	_, err = NewResolver(f2).PrepareJobRequest(ctx, genericRequest(`"x"`), DefaultOptions())
	ae := requireCode(t, err, apperr.CodeValidation)
	assert.Equal(t, "request.request object is required", ae.Message)

	// U2 auto-create; U4 auto-create disabled.
	f3 := newFake()
	req = genericRequest(`{"secret_attachments":[{"slot":"api_key","intent":"http.auth","expected_secret_types":["api-key"],"mode":"read","target":"https://api.example.com"}]}`)
	pf, err = NewResolver(f3).PrepareJobRequest(ctx, req, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "created", pf["status"])
	assert.Equal(t, "mcp.auto.8042d5b7fd92", req["request"].(map[string]any)["profile_id"])
	f4 := newFake()
	_, err = NewResolver(f4).PrepareJobRequest(ctx, genericRequest(`{"secret_attachments":[{"slot":"a","mode":"r","target":"t"}]}`), Options{UnboundedProfiles: true})
	requireCode(t, err, apperr.CodeUnboundedProfileRequired)
	assert.Empty(t, f4.upserts)
}

func TestDefaultOptions(t *testing.T) {
	// The orchestration argument's defaults and type checks are the tool
	// schema's (tools: TestOrchestrationArgumentDefaults).
	assert.Equal(t, Options{UnboundedProfiles: true, AutoCreate: true}, DefaultOptions())
}

package vaultsim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin the simulator's checks one by one (status, code, message
// and details), including which check wins when an input breaks several.

func planErr(code, path, msg, expected, actual string) *apiError {
	return &apiError{status: 400, code: code, message: msg, details: map[string]any{"errors": []any{
		map[string]any{"path": path, "code": code, "message": msg, "expected": expected, "actual": actual}}}}
}

func TestCheckPlanFailures(t *testing.T) {
	s := New(Options{NoSeed: true})
	step := func(kv ...any) map[string]any {
		m := map[string]any{"step_id": "a", "connector_id": "google", "verb": "google.gmail.send.v1"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	plan := func(steps ...any) map[string]any {
		return map[string]any{"type": PlanType, "steps": steps}
	}
	bind := func(path string, ref any) []any { return []any{map[string]any{"path": path, "ref": ref}} }
	withStart := func(p map[string]any, start string) map[string]any { p["start_step_id"] = start; return p }
	for i, c := range []struct {
		plan map[string]any
		want *apiError
	}{
		{nil, planErr("PLAN_INVALID", "/plan", "plan object is required", "object", "missing")},
		{map[string]any{"type": "x", "steps": "bad"}, planErr("PLAN_INVALID", "/plan/type", "plan type must be "+PlanType, PlanType, "x")},
		{map[string]any{"type": PlanType, "steps": "bad"}, planErr("PLAN_INVALID", "/plan/steps", "plan needs at least one step", "non-empty array", "string")},
		{map[string]any{"type": PlanType, "steps": []any{}}, planErr("PLAN_INVALID", "/plan/steps", "plan needs at least one step", "non-empty array", "array")},
		{plan(step(), "x"), planErr("PLAN_STEP_INVALID", "/plan/steps/1", "step must be an object", "object", "string")},
		{plan(step(), step()), planErr("PLAN_STEP_INVALID", "/plan/steps/1/step_id", "step_id must be non-empty and unique", "unique id", "a")},
		{plan(step("step_id", "", "connector_id", "nope")), planErr("PLAN_STEP_INVALID", "/plan/steps/0/step_id", "step_id must be non-empty and unique", "unique id", "")},
		{plan(step("connector_id", "nope", "verb", "nope")), planErr("PLAN_STEP_INVALID", "/plan/steps/0/connector_id", "unknown connector", "generic.http|google|identity", "nope")},
		{plan(step("verb", "google.gmail.fly", "policy_version", "9")), planErr("PLAN_STEP_INVALID", "/plan/steps/0/verb", "verb is not defined by connector google", "known verb", "google.gmail.fly")},
		{plan(step("policy_version", "9", "request_base", "x")), planErr("PLAN_POLICY_DRIFT", "/plan/steps/0/policy_version", "step policy_version does not match the connector policy", "1", "9")},
		{plan(step("request_base", "x", "request_bindings", []any{"x"})), planErr("PLAN_STEP_INVALID", "/plan/steps/0/request_base", "request_base must be an object", "object", "string")},
		{plan(step("request_base", nil, "request_bindings", []any{"x"})), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/path", "binding path must be a JSON pointer", "/...", "")},
		{plan(step("request_bindings", bind("to", nil))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/path", "binding path must be a JSON pointer", "/...", "to")},
		{plan(step("request_bindings", bind("/to", nil))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref", "binding ref is required", "object", "missing")},
		{plan(step("request_bindings", bind("/to", map[string]any{"source": "plan_input", "path": "to"}))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/path", "plan_input path must be a JSON pointer", "/...", "to")},
		{plan(step("request_bindings", bind("/to", map[string]any{"source": "step_output"}))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/step_id", "step_output ref needs step_id", "step id", "")},
		{plan(step("request_bindings", bind("/to", map[string]any{"source": "const"}))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/value", "literal ref needs value", "value", "missing")},
		{plan(step("request_bindings", bind("/to", map[string]any{}))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/value", "literal ref needs value", "value", "missing")},
		{plan(step("request_bindings", bind("/to", map[string]any{"source": "env"}))), planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/source", "unsupported ref source", "plan_input|step_output|literal", "env")},
		{plan(step("default_success_next_step_id", "b", "success_branches", []any{map[string]any{"next_step_id": "c"}})),
			planErr("PLAN_INVALID", "/plan/steps/0/default_success_next_step_id", "next step does not exist", "step id", "b")},
		{plan(step("success_branches", []any{map[string]any{"next_step_id": "a"}, "x"})),
			planErr("PLAN_INVALID", "/plan/steps/0/success_branches/1/next_step_id", "next step does not exist", "step id", "")},
		{withStart(plan(step("request_bindings", bind("/to", map[string]any{"source": "step_output", "step_id": "z"}))), "q"),
			planErr("PLAN_BINDING_INVALID", "/plan/steps/0/request_bindings/0/ref/step_id", "step_output ref names an unknown step", "step id", "z")},
		{withStart(plan(step()), "q"), planErr("PLAN_INVALID", "/plan/start_step_id", "start step does not exist", "step id", "q")},
	} {
		assert.Equal(t, c.want, s.checkPlan(c.plan), "case %d", i)
	}
	ok := plan(step("policy_version", "1", "request_base", map[string]any{}, "default_success_next_step_id", "b", "request_bindings", []any{
		map[string]any{"path": "/a", "ref": map[string]any{"source": "plan_input", "path": ""}},
		map[string]any{"path": "/b", "ref": map[string]any{"source": "plan_input", "path": "/x"}},
		map[string]any{"path": "/c", "ref": map[string]any{"source": "step_output", "step_id": "b"}},
		map[string]any{"path": "/d", "ref": map[string]any{"source": "literal", "value": nil}},
		map[string]any{"path": "/e", "ref": map[string]any{"source": "value", "value": 1}},
	}), step("step_id", "b", "connector_id", "identity", "verb", "identity.profile.read.v1", "success_branches", []any{map[string]any{"next_step_id": "a"}}))
	assert.Nil(t, s.checkPlan(withStart(ok, "b")))
}

func TestValidateSchemaViolations(t *testing.T) {
	sc := schema{"type": "object", "required": []any{"to", "n", "gone"}, "additionalProperties": false,
		"x-deprecated": map[string]any{"old": "use new"},
		"properties": map[string]any{
			"to":    schema{"type": "array", "minItems": 2.0, "items": schema{"type": "string", "format": "email"}},
			"n":     integer(1, 5),
			"f":     schema{"type": "number", "minimum": 0.5},
			"s":     schema{"type": "string", "minLength": 1.0, "format": "uri"},
			"e":     enum("A", "B"),
			"gone":  str(),
			"any":   anyValue(),
			"inner": schema{"type": "object", "properties": map[string]any{}, "additionalProperties": schema{"type": "boolean"}},
			"open":  schema{"type": "object", "properties": map[string]any{}, "additionalProperties": true},
		}}
	var errs []FieldError
	validate(sc, map[string]any{
		"to": []any{"not an address"}, "n": 7.0, "f": 0.25, "s": " ", "e": "C", "gone": nil, "any": []any{1.0},
		"inner": map[string]any{"x": true, "y": "no"}, "open": map[string]any{"z": 1.0},
		"old": 1.0, "bogus": "x", "a/b~c": nil,
	}, "", &errs)
	assert.Equal(t, []FieldError{
		{Path: "/gone", Code: FieldRequired, Message: "gone is required", Expected: "string", Actual: "missing"},
		{Path: "/a~1b~0c", Code: FieldUnknown, Message: "a~1b~0c is not a known field", Expected: "absent", Actual: "null"},
		{Path: "/bogus", Code: FieldUnknown, Message: "bogus is not a known field", Expected: "absent", Actual: "string"},
		{Path: "/e", Code: FieldEnumMismatch, Message: "e must be one of A, B", Expected: "A|B", Actual: "C"},
		{Path: "/f", Code: FieldOutOfRange, Message: "f must be at least 0.5", Expected: ">=0.5", Actual: "0.25"},
		{Path: "/inner/y", Code: FieldTypeMismatch, Message: "inner.y must be a boolean", Expected: "boolean", Actual: "string"},
		{Path: "/n", Code: FieldOutOfRange, Message: "n must be at most 5", Expected: "<=5", Actual: "7"},
		{Path: "/old", Code: FieldUnknown, Message: "old is not supported (deprecated): use new", Expected: "absent", Actual: "integer"},
		{Path: "/s", Code: FieldTooShort, Message: "s must not be empty", Expected: "non-empty string", Actual: "empty string"},
		{Path: "/s", Code: FieldFormatInvalid, Message: "s must be an absolute http(s) URL", Expected: "uri", Actual: " "},
		{Path: "/to", Code: FieldTooShort, Message: "to must have at least 2 item(s)", Expected: "array with >=2 items", Actual: "array with 1 items"},
		{Path: "/to/0", Code: FieldFormatInvalid, Message: "to.0 must be an e-mail address", Expected: "email", Actual: "not an address"},
	}, errs)

	// A type mismatch stops there; an integer passes as a number; the root
	// path reads "/" and the field "request"; an enum check does not stop
	// the value's own checks.
	errs = nil
	validate(schema{"type": "object", "properties": map[string]any{}}, "x", "", &errs)
	validate(schema{"type": "number", "maximum": 1.0}, 2.0, "/m", &errs)
	validate(schema{"type": "integer"}, 1.5, "/i", &errs)
	validate(schema{"enum": []any{"a"}, "minLength": 5.0}, "b", "/z", &errs)
	validate(schema{"type": "string", "format": "uri"}, "ftp://x", "/u", &errs)
	validate(schema{"type": "string", "format": "email"}, "Ada <ada@example.com>", "/m2", &errs)
	validate(nil, 1.0, "/none", &errs)
	assert.Equal(t, []FieldError{
		{Path: "/", Code: FieldTypeMismatch, Message: "request must be an object", Expected: "object", Actual: "string"},
		{Path: "/m", Code: FieldOutOfRange, Message: "m must be at most 1", Expected: "<=1", Actual: "2"},
		{Path: "/i", Code: FieldTypeMismatch, Message: "i must be an integer", Expected: "integer", Actual: "number"},
		{Path: "/z", Code: FieldEnumMismatch, Message: "z must be one of a", Expected: "a", Actual: "b"},
		{Path: "/z", Code: FieldTooShort, Message: "z must not be empty", Expected: "non-empty string", Actual: "empty string"},
		{Path: "/u", Code: FieldFormatInvalid, Message: "u must be an absolute http(s) URL", Expected: "uri", Actual: "ftp://x"},
		{Path: "/m2", Code: FieldFormatInvalid, Message: "m2 must be an e-mail address", Expected: "email", Actual: "Ada <ada@example.com>"},
	}, errs)
}

func TestResolveAttachments(t *testing.T) {
	const target = "https://api.example/v1"
	s := New(Options{NoSeed: true})
	s.PutSecret("sec_a", "AAA")
	s.PutSecret("sec_b", "BBB")
	s.bindings = []*binding{
		{ConnectorID: "generic.http", Verb: "generic.http.request.v1", Slot: "a", SecretID: "sec_old"},
		{ConnectorID: "generic.http", Verb: "generic.http.request.v1", Slot: "a", SecretID: "sec_a"},
		{ConnectorID: "generic.http", Verb: "generic.http.request.v1", Slot: "b", SecretID: "sec_b", Revoked: true},
		{ConnectorID: "google", Verb: "generic.http.request.v1", Slot: "c", SecretID: "sec_b"},
		{ConnectorID: "generic.http", Verb: "generic.http.request.v1", Slot: "w", SecretID: "sec_gone"},
	}
	slot := func(name string, kv ...any) map[string]any {
		m := map[string]any{"slot": name}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	s.profiles["up"] = map[string]any{"state": "ACTIVE", "profile": map[string]any{"slots": []any{
		slot("a", "allowed_modes", []any{"READ", "write"}, "allowed_targets", []any{"HTTPS://API.EXAMPLE/V1"}, "allowed_intents", []any{"fetch"}),
		slot("b"), slot("c"), slot("w"), "not a slot",
	}}}
	s.profiles["gone"] = map[string]any{"state": "REVOKED", "profile": map[string]any{}}
	att := func(kv ...any) map[string]any {
		m := map[string]any{"slot": "a", "mode": "read", "target": "https://api.example/v1"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	req := func(kv ...any) map[string]any {
		m := map[string]any{"profile_id": "up"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	violation := func(i int, slot, what string) *apiError {
		return errf(403, "UNBOUNDED_PROFILE_SLOT_VIOLATION", "secret_attachments[%d] violates profile up slot %s: %s", i, slot, what).with("slot", slot).with("constraint", what)
	}
	for i, c := range []struct {
		p       map[string]any
		url     string
		hasBody bool
		want    map[string]string
		err     *apiError
	}{
		{req("token_secret_id", "sec_b"), target, false, map[string]string{"Authorization": "Bearer BBB"}, nil},
		{req("token_secret_id", "nope", "secret_attachments", "x"), target, false, nil,
			errf(409, "SECRET_SLOT_UNRESOLVED", "secret nope does not exist").with("secret_id", "nope")},
		{map[string]any{"secret_attachments": []any{att()}}, target, false, nil,
			errf(400, "UNBOUNDED_PROFILE_REQUIRED_FIELDS_MISSING", "profile_id is required when secret_attachments are present").with("field", "profile_id")},
		{req("profile_id", "missing", "secret_attachments", []any{att()}), target, false, nil,
			errf(404, "UNBOUNDED_PROFILE_NOT_FOUND", "unbounded profile missing not found").with("profile_id", "missing")},
		{req("profile_id", "gone", "secret_attachments", []any{att()}), target, false, nil,
			errf(404, "UNBOUNDED_PROFILE_NOT_FOUND", "unbounded profile gone not found").with("profile_id", "gone")},
		{req("secret_attachments", []any{att(), att("slot", "zz")}), target, false, nil,
			errf(409, "UNBOUNDED_PROFILE_SLOT_UNRESOLVED", "profile up has no slot zz").with("slot", "zz").with("index", 1)},
		{req("secret_attachments", []any{att("mode", "admin", "target", "https://else")}), target, false, nil, violation(0, "a", "mode")},
		{req("secret_attachments", []any{att("target", "https://else", "intent", "nope")}), target, false, nil, violation(0, "a", "target")},
		{req("secret_attachments", []any{att("intent", "nope")}), "https://else/v1", false, nil, violation(0, "a", "intent")},
		{req("secret_attachments", []any{att()}), "https://api.example/v2", true, nil, violation(0, "a", "url outside target")},
		{req("secret_attachments", []any{att()}), target + "/x", true, nil,
			errf(403, "ERR_GENERIC_HTTP_SECRET_ATTACHED_BODY_NOT_ALLOWED", "a read-mode secret cannot be attached to a request with a body").with("slot", "a")},
		{req("secret_attachments", []any{att("slot", "b", "target", target)}), target, false, nil,
			errf(409, "SECRET_SLOT_UNRESOLVED", "slot b has no bound secret; bind one with /v0/connectors/secrets/slots/bind").with("slot", "b")},
		{req("secret_attachments", []any{att("slot", "c", "target", target)}), target, false, nil,
			errf(409, "SECRET_SLOT_UNRESOLVED", "slot c has no bound secret; bind one with /v0/connectors/secrets/slots/bind").with("slot", "c")},
		{req("secret_attachments", []any{att("slot", "w", "target", target)}), target, false, nil,
			errf(409, "SECRET_SLOT_UNRESOLVED", "slot w has no bound secret; bind one with /v0/connectors/secrets/slots/bind").with("slot", "w")},
		{req("token_secret_id", "sec_b", "secret_attachments", []any{
			att("intent", "FETCH"),
			att("mode", "WRITE", "header", "X-Key"),
			att("mode", "write", "header", "x-api", "scheme", "Token"),
			att("mode", "write", "header", "authorization"),
		}), target + "/items?q=1", false, map[string]string{"Authorization": "Bearer AAA", "X-Key": "AAA", "x-api": "Token AAA", "authorization": "Bearer AAA"}, nil},
		{req("secret_attachments", []any{}), target, false, map[string]string{}, nil},
	} {
		got, err := s.resolveAttachments(c.p, c.url, c.hasBody)
		assert.Equal(t, c.err, err, "case %d", i)
		assert.Equal(t, c.want, got, "case %d", i)
	}
}

func TestRunGmailVerbs(t *testing.T) {
	s := New(Options{NoSeed: true})
	s.mu.Lock()
	defer s.mu.Unlock()
	run := func(verb string, p map[string]any) (map[string]any, *apiError) { return s.runGmail(verb, p, nil) }
	notFound := func(kind, id string) *apiError {
		return errf(404, "NOT_FOUND", "%s %s not found", kind, id).with(kind+"_id", id)
	}
	for _, verb := range []string{"google.gmail.messages.get", "google.gmail.messages.get_content", "google.gmail.messages.modify",
		"google.gmail.messages.trash", "google.gmail.messages.untrash"} {
		_, err := run(verb, map[string]any{"message_id": "msg_x"})
		assert.Equal(t, notFound("message", "msg_x"), err, verb)
	}
	_, err := run("google.gmail.drafts.send", map[string]any{"draft_id": "d_x"})
	assert.Equal(t, notFound("draft", "d_x"), err)
	for _, verb := range []string{"google.gmail.thread.get.v1", "google.gmail.thread.modify.v1"} {
		_, err := run(verb, map[string]any{"thread_id": "thr_x"})
		assert.Equal(t, notFound("thread", "thr_x"), err, verb)
	}
	_, err = run("google.gmail.fly", nil)
	assert.Equal(t, errf(400, "INVALID_ARGUMENT", "unsupported gmail verb google.gmail.fly"), err)
	for _, verb := range []string{"google.gmail.send.v1", "google.gmail.drafts.create"} {
		_, err := run(verb, map[string]any{"document_attachments": []any{map[string]any{"type_id": "identity.none"}}})
		assert.Equal(t, errf(409, "DOCUMENT_SLOT_UNRESOLVED", "no identity.none document on file for self (document_attachments[0])").
			with("type_id", "identity.none").with("subject_id", "self"), err, verb)
	}

	sent, err := run("google.gmail.send.v1", map[string]any{"to": []any{"a@example.com"}, "subject": "s"})
	require.Nil(t, err)
	id, tid := sent["message_id"].(string), sent["thread_id"].(string)
	assert.Equal(t, map[string]any{"status": "SENT", "message_id": id, "thread_id": tid, "label_ids": []string{"SENT"}, "to": []string{"a@example.com"}, "attachments": 0}, sent)
	d, err := run("google.gmail.drafts.create", map[string]any{"to": []any{"b@example.com"}, "subject": "d"})
	require.Nil(t, err)
	assert.Equal(t, "CREATED", d["status"])
	assert.Equal(t, "d", d["subject"])
	ds, err := run("google.gmail.drafts.send", map[string]any{"draft_id": d["draft_id"]})
	require.Nil(t, err)
	assert.Equal(t, d["draft_id"], ds["draft_id"])
	assert.Equal(t, "SENT", ds["status"])
	assert.Empty(t, s.mailbox.drafts)

	th, err := run("google.gmail.thread.modify.v1", map[string]any{"thread_id": tid, "add_label_ids": []any{"STARRED"}})
	require.Nil(t, err)
	msgs := th["thread"].(map[string]any)["messages"].([]any)
	require.Len(t, msgs, 1)
	assert.Equal(t, tid, th["thread"].(map[string]any)["id"])
	assert.ElementsMatch(t, []string{"SENT", "STARRED"}, s.mailbox.messages[id].LabelIDs)
	th, err = run("google.gmail.thread.get.v1", map[string]any{"thread_id": tid, "add_label_ids": []any{"X"}})
	require.Nil(t, err)
	assert.Len(t, th["thread"].(map[string]any)["messages"], 1)
	assert.NotContains(t, s.mailbox.messages[id].LabelIDs, "X", "get does not modify")

	c, err := run("google.gmail.messages.get_content", map[string]any{"message_id": id})
	require.Nil(t, err)
	assert.Equal(t, map[string]any{"message_id": id, "subject": "s", "text_plain": "", "text_html": ""}, c)
	m, err := run("google.gmail.messages.modify", map[string]any{"message_id": id, "add_label_ids": []any{"A"}, "remove_label_ids": []any{"STARRED"}})
	require.Nil(t, err)
	assert.ElementsMatch(t, []string{"SENT", "A"}, m["label_ids"])
	labels, err := run("google.gmail.labels.list", nil)
	require.Nil(t, err)
	assert.Len(t, labels["labels"], len(s.mailbox.labels))

	// Listing: the default limit, a page limit, trash and spam hidden unless asked.
	l, err := run("google.gmail.messages.list", map[string]any{"page_limit": 1.0})
	require.Nil(t, err)
	assert.Len(t, l["messages"], 1)
	total := l["result_size_estimate"].(int)
	_, err = run("google.gmail.messages.trash", map[string]any{"message_id": id})
	require.Nil(t, err)
	l, err = run("google.gmail.messages.list", map[string]any{"page_limit": -1.0})
	require.Nil(t, err)
	assert.Equal(t, total-1, l["result_size_estimate"])
	l, err = run("google.gmail.messages.list", map[string]any{"include_spam_trash": true})
	require.Nil(t, err)
	assert.Equal(t, total, l["result_size_estimate"])
	u, err := run("google.gmail.messages.untrash", map[string]any{"message_id": id})
	require.Nil(t, err)
	assert.NotContains(t, u["label_ids"], "TRASH")
	g, err := run("google.gmail.messages.get", map[string]any{"message_id": id, "format": "metadata"})
	require.Nil(t, err)
	assert.Equal(t, id, g["message"].(map[string]any)["id"])
	assert.Equal(t, fmt.Sprint(msgFull(s.mailbox.messages[id], "metadata")), fmt.Sprint(g["message"]))
}

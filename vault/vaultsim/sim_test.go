package vaultsim_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type env struct {
	srv *vaultsim.Server
	c   *vault.Client
	s   vault.Endpoint
	ctx context.Context
}

func start(t *testing.T, opts vaultsim.Options) *env {
	t.Helper()
	srv, err := vaultsim.Start("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return &env{srv: srv, c: vault.New(vault.Options{}), s: vault.Endpoint{BaseURL: srv.BaseURL(), Token: srv.AgentToken(), Timeout: 5 * time.Second}, ctx: context.Background()}
}

func obj(r *vault.Response) map[string]any { return r.Object() }

func fieldErrors(t *testing.T, err error) []map[string]any {
	t.Helper()
	require.Error(t, err)
	list, _ := vault.ErrorVaultDetails(err)["errors"].([]any)
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i] = e.(map[string]any)
	}
	return out
}

func gmailSend(hash string, payload map[string]any) map[string]any {
	req := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1", "request": payload}
	if hash != "" {
		req["module_hash"] = hash
	}
	return req
}

func TestConnectorsAndPolicyHash(t *testing.T) {
	e := start(t, vaultsim.Options{})
	resp, err := e.c.ListConnectors(e.ctx, e.s)
	require.NoError(t, err)
	items := obj(resp)["items"].([]any)
	require.Len(t, items, 3)
	ids := []string{}
	for _, it := range items {
		m := it.(map[string]any)
		ids = append(ids, m["id"].(string))
		assert.NotEmpty(t, m["policy_hash"])
	}
	assert.Equal(t, []string{"generic.http", "google", "identity"}, ids)

	resp, err = e.c.GetConnector(e.ctx, e.s, "google")
	require.NoError(t, err)
	body := obj(resp)
	assert.Equal(t, e.srv.PolicyHash("google"), body["policy_hash"])
	verbs := body["policy"].(map[string]any)["verbs"].(map[string]any)
	assert.Contains(t, verbs, "google.gmail.drafts.send")
	assert.NotNil(t, verbs["google.gmail.send.v1"].(map[string]any)["input_schema_v1"])

	_, err = e.c.GetConnector(e.ctx, e.s, "nope")
	assert.Equal(t, "CONNECTOR_NOT_FOUND", vault.ErrorVaultCode(err))
	assert.Equal(t, 404, vault.ErrorStatus(err))
}

func TestGmailValidation(t *testing.T) {
	e := start(t, vaultsim.Options{})
	hash := e.srv.PolicyHash("google")
	_, err := e.c.Validate(e.ctx, e.s, gmailSend(hash, map[string]any{"to": "a@example.com", "body_text": "x", "text_plain": "hi",
		"document_attachments": []any{map[string]any{"filename": "p.pdf", "extra": 1}}}))
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeValidation, ae.Code)
	assert.Equal(t, "INVALID_ARGUMENT", ae.VaultCode)
	fe := fieldErrors(t, err)
	byPath := map[string]map[string]any{}
	for _, f := range fe {
		byPath[f["path"].(string)] = f
	}
	require.Contains(t, byPath, "/to")
	assert.Equal(t, map[string]any{"path": "/to", "code": "TYPE_MISMATCH", "message": "to must be an array", "expected": "array", "actual": "string"}, byPath["/to"])
	assert.Equal(t, "UNKNOWN_FIELD", byPath["/body_text"]["code"])
	assert.Contains(t, byPath["/body_text"]["message"], "text_plain")
	assert.Equal(t, "REQUIRED", byPath["/document_attachments/0/type_id"]["code"])
	assert.Equal(t, "UNKNOWN_FIELD", byPath["/document_attachments/0/extra"]["code"])

	// Module hash: missing, then stale.
	fe = fieldErrors(t, func() error {
		_, err := e.c.Validate(e.ctx, e.s, gmailSend("", map[string]any{"to": []any{"a@example.com"}}))
		return err
	}())
	require.Len(t, fe, 1)
	assert.Equal(t, "/module_hash", fe[0]["path"])
	assert.Equal(t, "MODULE_HASH_REQUIRED", fe[0]["code"])
	_, err = e.c.Validate(e.ctx, e.s, gmailSend("ph_stale", map[string]any{"to": []any{"a@example.com"}}))
	assert.True(t, vault.IsModuleHashRejection(err))

	resp, err := e.c.Validate(e.ctx, e.s, gmailSend(hash, map[string]any{"to": []any{"a@example.com"}, "text_plain": "hi"}))
	require.NoError(t, err)
	assert.Equal(t, true, obj(resp)["validated"])
	assert.Equal(t, true, obj(resp)["approval_required"])

	// Gmail list needs a query AST.
	_, err = e.c.Validate(e.ctx, e.s, map[string]any{"connector_id": "google", "verb": "google.gmail.messages.list", "module_hash": hash, "request": map[string]any{}})
	assert.Equal(t, "/query_ast_v1", fieldErrors(t, err)[0]["path"])
}

func TestExecuteJobApprovalLifecycle(t *testing.T) {
	e := start(t, vaultsim.Options{})
	hash := e.srv.PolicyHash("google")
	req := gmailSend(hash, map[string]any{"to": []any{"bob@example.com"}, "subject": "Hi", "text_plain": "Hello"})
	resp, err := e.c.ExecuteJob(e.ctx, e.s, req, "")
	require.NoError(t, err)
	assert.Equal(t, 202, resp.Status)
	job := obj(resp)["job"].(map[string]any)
	assert.Equal(t, "PENDING", job["status"])
	assert.Equal(t, "CONNECTOR_APPROVAL_DECISION_REQUIRED", job["error"].(map[string]any)["code"])
	pa := job["pending_approval"].(map[string]any)
	assert.NotContains(t, pa, "pending_id")
	challenge := pa["challenge"].(map[string]any)["challenge_id"].(string)
	assert.NotZero(t, job["pending_expires_at_unix_ms"])

	// Pending-id resolution as the MCP does it.
	resp, err = e.c.PendingApprovals(e.ctx, e.s, vault.PendingQuery(challenge, 0))
	require.NoError(t, err)
	rows := obj(resp)["items"].([]any)
	require.Len(t, rows, 1)
	row := rows[0].(map[string]any)
	assert.Equal(t, job["job_id"], row["job_id"])
	assert.Equal(t, "WAITING", row["state"])
	pendingID := row["pending_id"].(string)
	assert.Empty(t, e.srv.SentMessages())

	require.NoError(t, e.srv.Approve(pendingID))
	resp, err = e.c.JobGet(e.ctx, e.s, job["job_id"].(string))
	require.NoError(t, err)
	got := obj(resp)["job"].(map[string]any)
	assert.Equal(t, "SUCCEEDED", got["status"])
	assert.NotContains(t, got, "pending_approval")
	sent := e.srv.SentMessages()
	require.Len(t, sent, 1)
	assert.Equal(t, []string{"bob@example.com"}, sent[0].To)
	assert.Equal(t, "Hello", sent[0].TextPlain)

	var nw *vaultsim.ErrNotWaiting
	assert.ErrorAs(t, e.srv.Approve(pendingID), &nw)

	// Deny.
	resp, err = e.c.ExecuteJob(e.ctx, e.s, req, "")
	require.NoError(t, err)
	jobID := obj(resp)["job"].(map[string]any)["job_id"].(string)
	pid := e.srv.PendingApprovals()[0].PendingID
	require.NoError(t, e.srv.Deny(pid))
	resp, _ = e.c.JobGet(e.ctx, e.s, jobID)
	got = obj(resp)["job"].(map[string]any)
	assert.Equal(t, "DENIED", got["status"])
	assert.Equal(t, "CONNECTOR_APPROVAL_RULE_DENIED", got["error"].(map[string]any)["code"])
	assert.Len(t, e.srv.SentMessages(), 1)
}

func TestApprovalExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := start(t, vaultsim.Options{Now: clock, ApprovalTTL: time.Minute, IncludePendingIDInJob: true})
	resp, err := e.c.ExecuteJob(e.ctx, e.s, gmailSend(e.srv.PolicyHash("google"), map[string]any{"to": []any{"x@example.com"}}), "")
	require.NoError(t, err)
	job := obj(resp)["job"].(map[string]any)
	pid := job["pending_approval"].(map[string]any)["pending_id"].(string)
	assert.EqualValues(t, now.Add(time.Minute).UnixMilli(), job["pending_expires_at_unix_ms"])
	mu.Lock()
	now = now.Add(61 * time.Second)
	mu.Unlock()
	resp, _ = e.c.JobGet(e.ctx, e.s, job["job_id"].(string))
	got := obj(resp)["job"].(map[string]any)
	assert.Equal(t, "EXPIRED", got["status"])
	assert.Equal(t, "APPROVAL_DECISION_EXPIRED", got["error"].(map[string]any)["code"])
	resp, _ = e.c.PendingApprovals(e.ctx, e.s, url.Values{"states": {"EXPIRED"}})
	assert.Len(t, obj(resp)["items"].([]any), 1)
	assert.Error(t, e.srv.Approve(pid))
}

func TestSyncExecuteApprovalAndRules(t *testing.T) {
	e := start(t, vaultsim.Options{})
	hash := e.srv.PolicyHash("google")
	_, err := e.c.Execute(e.ctx, e.s, gmailSend(hash, map[string]any{"to": []any{"a@example.com"}}), "")
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeApprovalRequired, ae.Code)
	assert.Equal(t, 409, vault.ErrorStatus(err))
	pa := vault.ErrorVaultDetails(err)["pending_approval"].(map[string]any)
	assert.NotEmpty(t, pa["pending_id"])
	assert.NotEmpty(t, pa["challenge"].(map[string]any)["challenge_id"])

	e.srv.SetApprovalRule(vaultsim.ApprovalRule{ConnectorID: "google", Verb: "google.gmail.send*", Action: vaultsim.ActionDeny})
	_, err = e.c.Execute(e.ctx, e.s, gmailSend(hash, map[string]any{"to": []any{"a@example.com"}}), "")
	assert.Equal(t, apperr.CodeApprovalDenied, apperr.As(err).Code)

	e.srv.SetApprovalRules()
	resp, err := e.c.Execute(e.ctx, e.s, gmailSend(hash, map[string]any{"to": []any{"a@example.com"}, "text_plain": "now"}), "")
	require.NoError(t, err)
	assert.Equal(t, "SUCCEEDED", obj(resp)["status"])
	assert.Len(t, e.srv.SentMessages(), 1)

	// Gmail list with the default AST returns the seeded inbox.
	resp, err = e.c.Execute(e.ctx, e.s, map[string]any{"connector_id": "google", "verb": "google.gmail.messages.list", "module_hash": hash,
		"request": map[string]any{"user_id": "me", "page_limit": 2}, "query_ast_v1": map[string]any{"pred": map[string]any{"field": "label", "op": "eq", "value": map[string]any{"kind": "enum", "enum": "inbox"}}}}, "")
	require.NoError(t, err)
	res := obj(resp)["result"].(map[string]any)
	assert.Len(t, res["messages"].([]any), 2)
	assert.EqualValues(t, 3, res["result_size_estimate"])
}

func statusPlan() map[string]any {
	return map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "create_draft", "steps": []any{
		map[string]any{"step_id": "create_draft", "connector_id": "google", "verb": "google.gmail.drafts.create", "policy_version": "1",
			"default_success_next_step_id": "send_draft", "request_base": map[string]any{"user_id": "me", "subject": "Status"},
			"request_bindings": []any{
				map[string]any{"path": "/to", "ref": map[string]any{"source": "plan_input", "path": "/email/to"}},
				map[string]any{"path": "/text_plain", "ref": map[string]any{"source": "literal", "value": "All green."}},
			}},
		map[string]any{"step_id": "send_draft", "connector_id": "google", "verb": "google.gmail.drafts.send", "policy_version": "1",
			"request_base":     map[string]any{"user_id": "me", "draft_id": "draft_placeholder"},
			"request_bindings": []any{map[string]any{"path": "/draft_id", "ref": map[string]any{"source": "step_output", "step_id": "create_draft", "path": "/draft_id"}}}},
	}}
}

func TestPlanRunWithApproval(t *testing.T) {
	e := start(t, vaultsim.Options{})
	resp, err := e.c.PlanValidate(e.ctx, e.s, statusPlan())
	require.NoError(t, err)
	assert.Equal(t, true, obj(resp)["valid"])

	resp, err = e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": statusPlan(), "plan_input": map[string]any{"email": map[string]any{"to": []any{"ops@example.com"}}}}, "")
	require.NoError(t, err)
	assert.Equal(t, 202, resp.Status)
	body := obj(resp)
	run := body["run"].(map[string]any)
	assert.Equal(t, "PENDING_APPROVAL", run["state"])
	assert.Equal(t, "PLAN_APPROVAL_REQUIRED", run["last_error_code"])
	assert.Equal(t, run["run_id"], body["run_id"])
	assert.Equal(t, "PENDING", body["job"].(map[string]any)["status"])
	assert.NotEmpty(t, body["pending_approval"].(map[string]any)["challenge"].(map[string]any)["challenge_id"])
	require.Len(t, e.srv.Drafts(), 1, "the create step ran before the approval gate")

	pend := e.srv.PendingApprovals()
	require.Len(t, pend, 1)
	assert.Equal(t, "PLAN_RUN", pend[0].Kind)
	require.NoError(t, e.srv.Approve(pend[0].PendingID))

	resp, err = e.c.PlanRunGet(e.ctx, e.s, run["run_id"].(string))
	require.NoError(t, err)
	run = obj(resp)["run"].(map[string]any)
	assert.Equal(t, "SUCCEEDED", run["state"])
	assert.Len(t, run["steps"].([]any), 2)
	sent := e.srv.SentMessages()
	require.Len(t, sent, 1)
	assert.Equal(t, []string{"ops@example.com"}, sent[0].To)
	assert.Equal(t, "All green.", sent[0].TextPlain)
	assert.Empty(t, e.srv.Drafts())

	_, err = e.c.PlanRunGet(e.ctx, e.s, "run_missing")
	assert.Equal(t, apperr.CodePlanRunNotFound, apperr.As(err).Code)

	bad := statusPlan()
	bad["steps"].([]any)[1].(map[string]any)["request_bindings"].([]any)[0].(map[string]any)["ref"].(map[string]any)["step_id"] = "ghost"
	_, err = e.c.PlanValidate(e.ctx, e.s, bad)
	assert.Equal(t, "PLAN_BINDING_INVALID", vault.ErrorVaultCode(err))
	assert.Equal(t, apperr.CodeValidation, apperr.As(err).Code)
}

func passportPlan() map[string]any {
	slots := []any{"given_name", "family_name", "passport_number", "passport_expiry_date", "passport_issuing_country"}
	exists := []any{}
	for _, s := range slots {
		exists = append(exists, map[string]any{"op": "exists", "ref": map[string]any{"source": "step_output", "step_id": "read_existing_profile", "path": "/values/" + s.(string)}})
	}
	draft := func(id, readStep, next string) map[string]any {
		return map[string]any{"step_id": id, "connector_id": "google", "verb": "google.gmail.drafts.create", "policy_version": "1",
			"default_success_next_step_id": next,
			"request_base":                 map[string]any{"user_id": "me", "text_plain": "Hi,\nFirst Name: {{step_output:" + readStep + ":/values/given_name}}\nLast Name: {{step_output:" + readStep + ":/values/family_name}}"},
			"request_bindings": []any{
				map[string]any{"path": "/to", "ref": map[string]any{"source": "plan_input", "path": "/email/to"}},
				map[string]any{"path": "/subject", "ref": map[string]any{"source": "plan_input", "path": "/email/subject"}},
				map[string]any{"path": "/document_attachments", "ref": map[string]any{"source": "plan_input", "path": "/email/document_attachments"}},
			}}
	}
	send := func(id, createStep string) map[string]any {
		return map[string]any{"step_id": id, "connector_id": "google", "verb": "google.gmail.drafts.send", "policy_version": "1",
			"request_base":     map[string]any{"user_id": "me"},
			"request_bindings": []any{map[string]any{"path": "/draft_id", "ref": map[string]any{"source": "step_output", "step_id": createStep, "path": "/draft_id"}}}}
	}
	readStep := func(id, next string) map[string]any {
		return map[string]any{"step_id": id, "connector_id": "identity", "verb": "identity.profile.read.v1", "policy_version": "1",
			"default_success_next_step_id": next,
			"request_base":                 map[string]any{"subject_ref": "self", "profile_kind": "KYC"},
			"request_bindings":             []any{map[string]any{"path": "/slots", "ref": map[string]any{"source": "plan_input", "path": "/passport/slots"}}}}
	}
	first := readStep("read_existing_profile", "extract_passport_fields")
	first["success_branches"] = []any{map[string]any{"when": map[string]any{"op": "and", "args": exists}, "next_step_id": "create_draft_from_existing"}}
	return map[string]any{"type": "connector.execution.plan.v1", "start_step_id": "read_existing_profile", "steps": []any{
		first,
		map[string]any{"step_id": "extract_passport_fields", "connector_id": "identity", "verb": "identity.extraction.run.v1", "policy_version": "1",
			"default_success_next_step_id": "read_after_extract_profile",
			"request_base":                 map[string]any{"subject_ref": "self", "profile_kind": "KYC", "provider": "aws.textract.v1", "mode": "ANALYZE_AND_SAVE", "extracted_fields": map[string]any{}},
			"request_bindings": []any{
				map[string]any{"path": "/slots", "ref": map[string]any{"source": "plan_input", "path": "/passport/slots"}},
				map[string]any{"path": "/document_id", "ref": map[string]any{"source": "plan_input", "path": "/passport/document_id"}},
			}},
		readStep("read_after_extract_profile", "create_draft_after_extract"),
		draft("create_draft_from_existing", "read_existing_profile", "send_draft_from_existing"),
		send("send_draft_from_existing", "create_draft_from_existing"),
		draft("create_draft_after_extract", "read_after_extract_profile", "send_draft_after_extract"),
		send("send_draft_after_extract", "create_draft_after_extract"),
	}, "_slots": slots}
}

func TestPassportWorkflowPlanEndToEnd(t *testing.T) {
	e := start(t, vaultsim.Options{})
	resp, err := e.c.DocTypesLatest(e.ctx, e.s, "identity.passport", "")
	require.NoError(t, err)
	docID := obj(resp)["document_id"].(string)
	plan := passportPlan()
	slots := plan["_slots"]
	delete(plan, "_slots")
	input := map[string]any{
		"passport": map[string]any{"subject_ref": "self", "document_id": docID, "slots": slots},
		"email":    map[string]any{"to": []any{"consulate@example.com"}, "subject": "Passport", "document_attachments": []any{map[string]any{"type_id": "identity.passport"}}},
	}
	run := func() map[string]any {
		resp, err := e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": input}, "")
		require.NoError(t, err)
		require.Equal(t, 202, resp.Status)
		pend := e.srv.PendingApprovals()
		require.NoError(t, e.srv.Approve(pend[0].PendingID))
		resp, err = e.c.PlanRunGet(e.ctx, e.s, obj(resp)["run_id"].(string))
		require.NoError(t, err)
		return obj(resp)["run"].(map[string]any)
	}
	r := run()
	require.Equal(t, "SUCCEEDED", r["state"], r)
	var path []string
	for _, st := range r["steps"].([]any) {
		path = append(path, st.(map[string]any)["step_id"].(string))
	}
	assert.Equal(t, []string{"read_existing_profile", "extract_passport_fields", "read_after_extract_profile", "create_draft_after_extract", "send_draft_after_extract"}, path)
	sent := e.srv.SentMessages()
	require.Len(t, sent, 1)
	assert.Contains(t, sent[0].TextPlain, "First Name: Ada\nLast Name: Lovelace")
	require.Len(t, sent[0].Attachments, 1)
	assert.Equal(t, docID, sent[0].Attachments[0]["document_id"])
	assert.Equal(t, "X1234567", e.srv.KYC("self")["passport_number"])

	// Second run: the profile is complete, so the short branch is taken.
	r = run()
	path = nil
	for _, st := range r["steps"].([]any) {
		path = append(path, st.(map[string]any)["step_id"].(string))
	}
	assert.Equal(t, []string{"read_existing_profile", "create_draft_from_existing", "send_draft_from_existing"}, path)

	// Without a passport on file: latest is unresolved.
	assert.Equal(t, 1, e.srv.RemoveDocuments("identity.passport", "self"))
	_, err = e.c.DocTypesLatest(e.ctx, e.s, "identity.passport", "self")
	assert.Equal(t, "DOCUMENT_SLOT_UNRESOLVED", vault.ErrorVaultCode(err))
	assert.Equal(t, apperr.CodeInternal, apperr.As(err).Code)
}

func TestDocSuggest(t *testing.T) {
	e := start(t, vaultsim.Options{})
	resp, err := e.c.DocTypesSuggest(e.ctx, e.s, "passport", 5)
	require.NoError(t, err)
	sug := obj(resp)["suggestions"].([]any)
	require.NotEmpty(t, sug)
	first := sug[0].(map[string]any)
	assert.Equal(t, "identity.passport", first["type_id"])
	assert.EqualValues(t, 80, first["score"])
	assert.Equal(t, []any{"type_token_match", "display_name_match"}, first["reasons"])
	resp, _ = e.c.DocTypesSuggest(e.ctx, e.s, "proof of address please", 1)
	sug = obj(resp)["suggestions"].([]any)
	require.Len(t, sug, 1)
	assert.Equal(t, "utility.bill", sug[0].(map[string]any)["type_id"])
}

func TestScopesAndAuth(t *testing.T) {
	e := start(t, vaultsim.Options{})
	limited := "vc_tok_limited"
	e.srv.AddToken(limited, vaultsim.ScopeProfilesRead, vaultsim.ScopeConnectorsList)
	s := e.s
	s.Token = limited
	prof := map[string]any{"type": "connector.unbounded.profile.v1", "profile_id": "p1", "connector_id": "generic.http", "verb": "generic.http.request.v1",
		"slots": []any{map[string]any{"slot": "api_key", "allowed_modes": []any{"read"}, "allowed_targets": []any{"https://api.example.com"}}}}
	_, err := e.c.ProfileUpsert(e.ctx, s, prof, "")
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeAuthForbidden, ae.Code)
	assert.Equal(t, "INSUFFICIENT_SCOPE", ae.VaultCode)
	_, err = e.c.ListConnectors(e.ctx, s)
	assert.NoError(t, err)
	s.Token = "vc_tok_unknown"
	_, err = e.c.ListConnectors(e.ctx, s)
	assert.Equal(t, apperr.CodeAuthUnauthenticated, apperr.As(err).Code)

	resp, err := e.c.ProfileUpsert(e.ctx, e.s, prof, "")
	require.NoError(t, err)
	assert.Equal(t, true, obj(resp)["created"])
	resp, err = e.c.ProfileGet(e.ctx, e.s, "p1")
	require.NoError(t, err)
	assert.Equal(t, prof, obj(resp)["profile"])
	resp, err = e.c.ProfilesList(e.ctx, e.s, url.Values{"connector_id": {"generic.http"}})
	require.NoError(t, err)
	assert.Len(t, obj(resp)["items"].([]any), 1)
	_, err = e.c.ProfileGet(e.ctx, e.s, "nope")
	assert.Equal(t, apperr.CodeUnboundedProfileInvalid, apperr.As(err).Code)
	prof["slots"] = []any{map[string]any{"slot": "k", "allowed_modes": []any{"delete"}}}
	_, err = e.c.ProfileUpsert(e.ctx, e.s, prof, "")
	assert.Equal(t, "/profile/slots/0/allowed_modes/0", fieldErrors(t, err)[0]["path"])
}

func TestGenericHTTPWithSecretAttachment(t *testing.T) {
	var gotAuth string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"echo":"`+strings.TrimPrefix(gotAuth, "Bearer ")+`"}`)
	}))
	defer upstream.Close()
	e := start(t, vaultsim.Options{})
	e.srv.PutSecret("sec_api", "s3cr3t-value")
	_, err := e.c.SlotBind(e.ctx, e.s, map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "slot": "api_key", "secret_id": "sec_api"}, "")
	require.NoError(t, err)
	_, err = e.c.ProfileUpsert(e.ctx, e.s, map[string]any{"type": "connector.unbounded.profile.v1", "profile_id": "up", "connector_id": "generic.http",
		"verb": "generic.http.request.v1", "slots": []any{map[string]any{"slot": "api_key", "allowed_modes": []any{"read"}, "allowed_targets": []any{upstream.URL}}}}, "")
	require.NoError(t, err)
	req := map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "request": map[string]any{
		"method": "GET", "url": upstream.URL + "/v1/thing", "profile_id": "up",
		"secret_attachments": []any{map[string]any{"slot": "api_key", "mode": "read", "target": upstream.URL}}}}
	resp, err := e.c.Execute(e.ctx, e.s, req, "")
	require.NoError(t, err)
	assert.Equal(t, "Bearer s3cr3t-value", gotAuth)
	res := obj(resp)["result"].(map[string]any)
	assert.EqualValues(t, 200, res["http_status"])
	assert.Equal(t, map[string]any{"ok": true, "echo": "[REDACTED]"}, res["body_json"])
	assert.NotContains(t, string(resp.Raw), "s3cr3t-value")

	// Target outside the profile.
	req["request"].(map[string]any)["url"] = "http://elsewhere.invalid/x"
	_, err = e.c.Execute(e.ctx, e.s, req, "")
	assert.Equal(t, apperr.CodeUnboundedProfileInvalid, apperr.As(err).Code)

	// Slot bindings listing and replacement.
	e.srv.PutSecret("sec_api2", "v2")
	resp, err = e.c.SlotBind(e.ctx, e.s, map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "slot": "api_key", "secret_id": "sec_api2"}, "")
	require.NoError(t, err)
	assert.NotEmpty(t, obj(resp)["replaced_binding_id"])
	resp, _ = e.c.SlotBindings(e.ctx, e.s, "generic.http", "generic.http.request.v1", false)
	assert.Len(t, obj(resp)["items"].([]any), 1)
	resp, _ = e.c.SlotBindings(e.ctx, e.s, "generic.http", "generic.http.request.v1", true)
	assert.Len(t, obj(resp)["items"].([]any), 2)
	_, err = e.c.SlotBind(e.ctx, e.s, map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "slot": "nope", "secret_id": "sec_api"}, "")
	assert.Equal(t, apperr.CodeSecretError, apperr.As(err).Code)
}

func TestFaultsAndRequestLog(t *testing.T) {
	e := start(t, vaultsim.Options{})
	e.srv.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Status: 503, Body: "upstream down", Times: 2})
	for range 2 {
		_, err := e.c.ListConnectors(e.ctx, e.s)
		ae := apperr.As(err)
		assert.Equal(t, apperr.CodeNetwork, ae.Code)
		assert.Equal(t, "Service Unavailable", ae.Message)
	}
	_, err := e.c.ListConnectors(e.ctx, e.s)
	require.NoError(t, err)

	// Go's transport replays an idempotent request once when a reused
	// connection dies before any reply, so reset two calls.
	e.srv.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Reset: true, Times: 2})
	_, err = e.c.ListConnectors(e.ctx, e.s)
	assert.Equal(t, "NETWORK_ERROR", vault.ErrorVaultCode(err))

	e.srv.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Latency: 2 * time.Second})
	s := e.s
	s.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err = e.c.ListConnectors(e.ctx, s)
	assert.Less(t, time.Since(start), time.Second)
	assert.Equal(t, apperr.CodeNetwork, apperr.As(err).Code)

	e.srv.InjectFault(vaultsim.Fault{Path: "/v0/connectors", Status: 200, Body: "<html>not json</html>"})
	_, err = e.c.ListConnectors(e.ctx, e.s)
	assert.Equal(t, vault.CodeMalformedResponse, vault.ErrorVaultCode(err))

	log := e.srv.RequestsTo("GET", "/v0/connectors")
	require.Len(t, log, 7)
	assert.Equal(t, "status", log[0].Fault)
	assert.Equal(t, 503, log[0].Status)
	assert.Equal(t, "reset", log[3].Fault)
	assert.Equal(t, "reset", log[4].Fault)
	assert.Equal(t, "Bearer "+e.srv.AgentToken(), log[2].Header.Get("Authorization"))
	assert.Empty(t, e.srv.RequestsTo("POST", "/v0/connectors/execute"))
}

func TestIdempotencyReplay(t *testing.T) {
	e := start(t, vaultsim.Options{})
	e.srv.SetApprovalRules()
	req := gmailSend(e.srv.PolicyHash("google"), map[string]any{"to": []any{"a@example.com"}})
	r1, err := e.c.ExecuteJob(e.ctx, e.s, req, "same-key")
	require.NoError(t, err)
	r2, err := e.c.ExecuteJob(e.ctx, e.s, req, "same-key")
	require.NoError(t, err)
	assert.Equal(t, string(r1.Raw), string(r2.Raw))
	assert.Len(t, e.srv.SentMessages(), 1)
	req["request"].(map[string]any)["subject"] = "changed"
	_, err = e.c.ExecuteJob(e.ctx, e.s, req, "same-key")
	assert.Equal(t, "IDEMPOTENCY_KEY_REUSED", vault.ErrorVaultCode(err))
}

func TestUnixSocketAndAdminEndpoint(t *testing.T) {
	dir, err := os.MkdirTemp("", "vs")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	srv, err := vaultsim.StartUnix(filepath.Join(dir, "v.sock"), vaultsim.Options{AdminToken: "adm"})
	require.NoError(t, err)
	defer srv.Close()
	c := vault.New(vault.Options{})
	resp, err := c.ExecuteJob(context.Background(), vault.Endpoint{BaseURL: srv.BaseURL(), Token: srv.AgentToken()}, gmailSend(srv.PolicyHash("google"), map[string]any{"to": []any{"a@example.com"}}), "")
	require.NoError(t, err)
	jobID := obj(resp)["job"].(map[string]any)["job_id"].(string)
	pid := srv.PendingApprovals()[0].PendingID

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net_Conn, error) {
		return dialUnix(ctx, srv.Socket)
	}}}
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://localhost/_sim/approvals/"+pid+"/approve", nil)
		if token != "" {
			req.Header.Set(vaultsim.AdminTokenHeader, token)
		}
		r, err := hc.Do(req)
		require.NoError(t, err)
		r.Body.Close()
		return r.StatusCode
	}
	assert.Equal(t, 401, post(""))
	assert.Equal(t, 200, post("adm"))
	assert.Equal(t, 409, post("adm"))
	resp, err = c.JobGet(context.Background(), vault.Endpoint{BaseURL: srv.BaseURL(), Token: srv.AgentToken()}, jobID)
	require.NoError(t, err)
	assert.Equal(t, "SUCCEEDED", obj(resp)["job"].(map[string]any)["status"])
}

func TestGmailVerbsAndIdentityDirect(t *testing.T) {
	e := start(t, vaultsim.Options{})
	e.srv.SetApprovalRules()
	hash := e.srv.PolicyHash("google")
	run := func(verb string, payload map[string]any) map[string]any {
		t.Helper()
		req := map[string]any{"connector_id": "google", "verb": verb, "module_hash": hash, "request": payload}
		if strings.Contains(verb, "messages.list") {
			req["query_ast_v1"] = map[string]any{"bool": map[string]any{"op": "and", "args": []any{
				map[string]any{"pred": map[string]any{"field": "label", "op": "eq", "value": "INBOX"}},
				map[string]any{"pred": map[string]any{"field": "is_unread", "op": "eq", "value": true}},
			}}}
		}
		resp, err := e.c.Execute(e.ctx, e.s, req, "")
		require.NoError(t, err, verb)
		return obj(resp)["result"].(map[string]any)
	}
	list := run("google.gmail.messages.list.v1", map[string]any{})
	msgs := list["messages"].([]any)
	require.Len(t, msgs, 2)
	id := msgs[0].(map[string]any)["id"].(string)
	full := run("google.gmail.messages.get", map[string]any{"message_id": id, "format": "full"})["message"].(map[string]any)
	assert.NotEmpty(t, full["text_plain"])
	meta := run("google.gmail.messages.get", map[string]any{"message_id": id, "format": "metadata"})["message"].(map[string]any)
	assert.NotContains(t, meta, "text_plain")
	assert.NotEmpty(t, run("google.gmail.messages.get_content", map[string]any{"message_id": id})["text_plain"])
	assert.Contains(t, run("google.gmail.messages.trash", map[string]any{"message_id": id})["label_ids"], "TRASH")
	assert.Len(t, run("google.gmail.messages.list", map[string]any{})["messages"], 1, "trashed messages leave the inbox")
	assert.NotContains(t, run("google.gmail.messages.untrash", map[string]any{"message_id": id})["label_ids"], "TRASH")
	mod := run("google.gmail.messages.modify", map[string]any{"message_id": id, "remove_label_ids": []any{"UNREAD"}, "add_label_ids": []any{"Label_TRIAGED"}})
	assert.Contains(t, mod["label_ids"], "Label_TRIAGED")
	assert.NotContains(t, mod["label_ids"], "UNREAD")
	assert.NotEmpty(t, run("google.gmail.labels.list", map[string]any{"user_id": "me"})["labels"])
	draft := run("google.gmail.drafts.create", map[string]any{"to": []any{"x@example.com"}, "subject": "d"})
	sent := run("google.gmail.drafts.send.v1", map[string]any{"draft_id": draft["draft_id"]})
	assert.Equal(t, "SENT", sent["status"])
	_, err := e.c.Execute(e.ctx, e.s, map[string]any{"connector_id": "google", "verb": "google.gmail.drafts.send", "module_hash": hash, "request": map[string]any{"draft_id": draft["draft_id"]}}, "")
	assert.Equal(t, 404, vault.ErrorStatus(err), "a sent draft is gone")
	_, err = e.c.Execute(e.ctx, e.s, map[string]any{"connector_id": "google", "verb": "google.gmail.messages.get", "module_hash": hash, "request": map[string]any{"message_id": "msg_nope"}}, "")
	assert.Equal(t, "NOT_FOUND", vault.ErrorVaultCode(err))

	// Identity verbs need no module hash.
	resp, err := e.c.Execute(e.ctx, e.s, map[string]any{"connector_id": "identity", "verb": "identity.profile.read.v1", "request": map[string]any{"slots": []any{"given_name"}}}, "")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, obj(resp)["result"].(map[string]any)["values"])
	resp, err = e.c.Execute(e.ctx, e.s, map[string]any{"connector_id": "identity", "verb": "identity.extraction.run.v1",
		"request": map[string]any{"document_id": "doc_passport_self", "slots": []any{"given_name"}, "extracted_fields": map[string]any{"given_name": "Augusta"}}}, "")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"given_name": "Augusta"}, obj(resp)["result"].(map[string]any)["values"])
	assert.Equal(t, "Augusta", e.srv.KYC("self")["given_name"])
}

func TestPlanFailuresAndRules(t *testing.T) {
	e := start(t, vaultsim.Options{})
	// A binding source that does not exist at run time fails the run.
	plan := statusPlan()
	resp, err := e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": map[string]any{}}, "")
	require.NoError(t, err)
	run := obj(resp)["run"].(map[string]any)
	assert.Equal(t, "FAILED", run["state"])
	assert.Equal(t, "PLAN_BINDING_SOURCE_MISSING", run["last_error_code"])
	assert.Equal(t, "FAILED", obj(resp)["job"].(map[string]any)["status"])

	// A step failing Vault's schema fails the run with the step error.
	resp, err = e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": map[string]any{"email": map[string]any{"to": "scalar@example.com"}}}, "")
	require.NoError(t, err)
	run = obj(resp)["run"].(map[string]any)
	assert.Equal(t, "INVALID_ARGUMENT", run["last_error_code"])
	steps := run["steps"].([]any)
	assert.Equal(t, "FAILED", steps[0].(map[string]any)["status"])

	// A deny rule denies the run at that step.
	e.srv.SetApprovalRule(vaultsim.ApprovalRule{Verb: "google.gmail.drafts.send", Action: vaultsim.ActionDeny})
	resp, err = e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": map[string]any{"email": map[string]any{"to": []any{"a@example.com"}}}}, "")
	require.NoError(t, err)
	run = obj(resp)["run"].(map[string]any)
	assert.Equal(t, "DENIED", run["state"])
	assert.Equal(t, "CONNECTOR_APPROVAL_RULE_DENIED", run["last_error_code"])

	// Deny a plan approval: the run and the job are DENIED with PLAN_APPROVAL_DENIED.
	e.srv.SetApprovalRules(vaultsim.DefaultApprovalRules()...)
	resp, err = e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": map[string]any{"email": map[string]any{"to": []any{"a@example.com"}}}}, "")
	require.NoError(t, err)
	runID := obj(resp)["run_id"].(string)
	require.NoError(t, e.srv.Deny(e.srv.PendingApprovals()[0].PendingID))
	resp, err = e.c.PlanRunGet(e.ctx, e.s, runID)
	require.NoError(t, err)
	body := obj(resp)
	assert.Equal(t, "DENIED", body["run"].(map[string]any)["state"])
	assert.Equal(t, "PLAN_APPROVAL_DENIED", body["run"].(map[string]any)["last_error_code"])
	assert.Equal(t, "PLAN_APPROVAL_DENIED", body["job"].(map[string]any)["error"].(map[string]any)["code"])
	resp, _ = e.c.PendingApprovals(e.ctx, e.s, url.Values{"states": {"DENIED"}})
	assert.Len(t, obj(resp)["items"].([]any), 1)
	_, err = e.c.PendingApprovals(e.ctx, e.s, url.Values{"states": {"BOGUS"}})
	assert.Equal(t, apperr.CodeValidation, apperr.As(err).Code)

	// Wrong method on a known path, unknown path.
	_, err = e.c.Do(e.ctx, e.s, vault.Request{Method: "GET", Path: "/v0/connectors/execute-job"})
	assert.Equal(t, 404, vault.ErrorStatus(err), "GET of a connector named execute-job")
	_, err = e.c.Do(e.ctx, e.s, vault.Request{Method: "DELETE", Path: "/v0/jobs/x"})
	assert.Equal(t, 405, vault.ErrorStatus(err))
	_, err = e.c.Do(e.ctx, e.s, vault.Request{Method: "GET", Path: "/v0/nothing"})
	assert.Equal(t, "NOT_FOUND", vault.ErrorVaultCode(err))
}

func TestPassportExtractionFailures(t *testing.T) {
	e := start(t, vaultsim.Options{NoSeed: true})
	plan := passportPlan()
	slots := plan["_slots"]
	delete(plan, "_slots")
	e.srv.SetApprovalRules()
	runWith := func(docID string) map[string]any {
		input := map[string]any{"passport": map[string]any{"document_id": docID, "slots": slots},
			"email": map[string]any{"to": []any{"a@example.com"}, "subject": "P", "document_attachments": []any{}}}
		resp, err := e.c.PlanExecute(e.ctx, e.s, map[string]any{"plan": plan, "plan_input": input}, "")
		require.NoError(t, err)
		return obj(resp)["run"].(map[string]any)
	}
	bad := e.srv.AddDocument(vaultsim.Document{TypeID: "identity.passport", FailExtraction: "EXTRACTION_FAILED"})
	r := runWith(bad)
	assert.Equal(t, "FAILED", r["state"])
	assert.Equal(t, "EXTRACTION_FAILED", r["last_error_code"])

	partial := e.srv.AddDocument(vaultsim.Document{TypeID: "identity.passport", Fields: map[string]string{"given_name": "Ada"}})
	r = runWith(partial)
	assert.Equal(t, "FAILED", r["state"])
	assert.Equal(t, "PLAN_BINDING_SOURCE_MISSING", r["last_error_code"])
	assert.Empty(t, e.srv.SentMessages())
}

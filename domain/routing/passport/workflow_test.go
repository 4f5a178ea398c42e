package passport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixedSession struct {
	s   session.Session
	err error
}

func (f fixedSession) Resolve(context.Context, string) (session.Session, error) { return f.s, f.err }

type env struct {
	sim     *vaultsim.Server
	svc     *Service
	handles *approval.Store
}

func newEnv(t *testing.T, opts vaultsim.Options) *env {
	t.Helper()
	srv, err := vaultsim.Start("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	client := vault.New(vault.Options{})
	t.Cleanup(client.Close)
	mh := vault.NewModuleHash(client, vault.NewPolicyHashCache(db, 0))
	handles := approval.NewStore(db, 0)
	return &env{sim: srv, handles: handles, svc: &Service{
		Sessions: fixedSession{s: session.Session{BaseURL: srv.BaseURL(), Token: srv.AgentToken(), TimeoutMS: 5000}}, Vault: client, ModuleHash: mh,
		Exec:    &execution.Service{Vault: client, ModuleHash: mh, Handles: handles},
		RunWait: 2 * time.Second, PollInterval: 10 * time.Millisecond,
	}}
}

const ask = "send an email to skl83@cornell.edu with a copy of my passport and the passport fields in the body"

func code(t *testing.T, err error) string {
	t.Helper()
	require.Error(t, err)
	return apperr.As(err).Code
}

func TestRecipientRequired(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	e.svc.Sessions = fixedSession{err: apperr.New(apperr.CodeSessionNotConfigured, "no session")}
	for _, in := range []Input{
		{RequestText: "send my passport fields in the body"},
		{RecipientEmail: "x a@b.co y"}, // D11: the whole value must be an address
	} {
		_, err := e.svc.Run(context.Background(), "s", in)
		assert.Equal(t, apperr.CodeRecipientRequired, code(t, err))
		assert.Equal(t, "ASK_USER_FOR_RECIPIENT_EMAIL", apperr.As(err).Details["next_action"])
	}
	// Recipient is checked before the session (PW5: no Vault call at all).
	assert.Empty(t, e.sim.Requests())
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodeSessionNotConfigured, code(t, err))
}

func TestExecuteFalseReadyToSend(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	res, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask + " in a formal tone", Execute: new(false),
		ManualFields: map[string]any{"given_name": "  Ada ", "family_name": 7}})
	require.NoError(t, err)
	d := res.Data
	assert.Equal(t, StatusReady, d["status"])
	assert.Contains(t, d["composed_text"], "{{step_output:read_existing_profile:/values/given_name}}")
	assert.Contains(t, d["composed_text_alt"], "{{step_output:read_after_extract_profile:/values/given_name}}")
	assert.True(t, strings.HasPrefix(d["composed_text"].(string), "Hello,\n\nPlease find attached"))
	assert.Equal(t, map[string]any{"given_name": "Ada", "family_name": "", "passport_number": "", "passport_expiry_date": "", "passport_issuing_country": ""}, d["resolved_fields"])
	pi := d["plan_input"].(map[string]any)["passport"].(map[string]any)
	assert.Equal(t, "doc_passport_self", pi["document_id"])
	assert.Equal(t, map[string]any{"given_name": "Ada"}, pi["manual_fields"])
	assert.Equal(t, DefaultSubject, d["pre_send_summary"].(map[string]any)["subject"])
	// PW3: only the document lookup, no plan, no identity calls.
	for _, r := range e.sim.Requests() {
		assert.Equal(t, "/v0/docs/types/latest", r.Path)
	}
	assert.Len(t, e.sim.Requests(), 1)
}

func TestDocumentUploadRequiredAndResolutionFailed(t *testing.T) {
	e := newEnv(t, vaultsim.Options{NoSeed: true})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, Subject: "Docs"})
	assert.Equal(t, apperr.CodeDocumentUploadRequired, code(t, err))
	ae := apperr.As(err)
	assert.Equal(t, "DOCUMENT_SLOT_UNRESOLVED", ae.VaultCode)
	action := ae.Details["action"].(map[string]any)
	assert.Equal(t, "UPLOAD_DOCUMENT", action["type"])
	assert.Equal(t, map[string]any{"type_id": "identity.passport", "subject_id": "self"}, action["document_requirement"])
	assert.Equal(t, map[string]any{"recipient_email": "skl83@cornell.edu", "subject": "Docs", "body_style": ""}, action["resume_arguments"])

	e.sim.InjectFault(vaultsim.Fault{Path: "/v0/docs/types/latest", Status: 500})
	_, err = e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodeDocumentResolutionFailed, code(t, err))
	assert.NotNil(t, apperr.As(err).Details["upstream_error"])
}

func TestProfileReadFailed(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	e.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors/execute", Status: 500})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodePassportProfileReadFailed, code(t, err))
	assert.Empty(t, e.sim.RequestsTo("POST", "/v0/connectors/plans/execute"), "nothing is sent after a failed read")
}

func TestExtractionFailed(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	// The profile is empty, so extraction runs; the document id is unknown.
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, PassportDocumentID: "doc_missing"})
	assert.Equal(t, apperr.CodePassportExtractionFailed, code(t, err))
	assert.Equal(t, "doc_missing", apperr.As(err).Details["document_id"])
	assert.Empty(t, e.sim.RequestsTo("POST", "/v0/connectors/plans/execute"))
}

func TestExtractionFailedUnreadableScan(t *testing.T) {
	e := newEnv(t, vaultsim.Options{NoSeed: true})
	e.sim.AddDocument(vaultsim.Document{DocumentID: "doc_blurry", TypeID: "identity.passport", SubjectID: "self", FailExtraction: "EXTRACTION_UNREADABLE"})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodePassportExtractionFailed, code(t, err))
	assert.Equal(t, "EXTRACTION_UNREADABLE", apperr.As(err).VaultCode)
	assert.Empty(t, e.sim.RequestsTo("POST", "/v0/connectors/plans/execute"))
}

// CONFLICT from extraction means "already extracted": the fields are read
// again and the run goes on.
func TestExtractionConflictIsNotAFailure(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	e.sim.SetApprovalRules()
	var executes atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v0/connectors/execute" && executes.Add(1) == 2 {
			// The second execute is the extraction: persist it, then answer
			// CONFLICT as a Vault that had already saved it would.
			e.sim.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"CONFLICT","message":"extraction already persisted"}}`))
			return
		}
		e.sim.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	e.svc.Sessions = fixedSession{s: session.Session{BaseURL: proxy.URL, Token: e.sim.AgentToken(), TimeoutMS: 5000}}
	res, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	require.NoError(t, err)
	assert.Equal(t, StatusSent, res.Data["status"])
	assert.Equal(t, int32(3), executes.Load(), "read, extraction (CONFLICT), read again")
	assert.Equal(t, "Lovelace", res.Data["resolved_fields"].(map[string]any)["family_name"])
}

func TestManualFieldsRequiredListsOnlyMissing(t *testing.T) {
	e := newEnv(t, vaultsim.Options{NoSeed: true})
	e.sim.AddDocument(vaultsim.Document{DocumentID: "doc_partial", TypeID: "identity.passport", SubjectID: "self",
		Fields: map[string]string{"given_name": "Ada", "family_name": "Lovelace", "passport_number": "X1"}})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, ManualFields: map[string]any{"passport_issuing_country": "GBR"}})
	assert.Equal(t, apperr.CodeManualFieldsRequired, code(t, err))
	ae := apperr.As(err)
	action := ae.Details["action"].(map[string]any)
	assert.Equal(t, "COLLECT_PASSPORT_FIELDS", action["type"])
	assert.Equal(t, []any{map[string]any{"key": "passport_expiry_date", "label": "Expiry Date"}}, action["missing_fields"])
	assert.Equal(t, "doc_partial", action["resume_arguments"].(map[string]any)["passport_document_id"])
	assert.Equal(t, "GBR", ae.Details["resolved_fields"].(map[string]any)["passport_issuing_country"])

	// Supplying the missing field completes the run (approval rules off).
	e.sim.SetApprovalRules()
	res, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, ManualFields: map[string]any{"passport_expiry_date": "2030-01-01", "passport_issuing_country": "GBR"}})
	require.NoError(t, err)
	assert.Equal(t, StatusSent, res.Data["status"])
	sent := e.sim.SentMessages()
	require.Len(t, sent, 1)
	assert.Contains(t, sent[0].TextPlain, "Expiry Date: 2030-01-01")
	assert.Contains(t, sent[0].TextPlain, "Issuing Country: GBR")
}

func TestGmailDraftSendFailed(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	e.sim.InjectFault(vaultsim.Fault{Path: "/v0/connectors/plans/execute", Status: 500})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodeGmailDraftSendFailed, code(t, err))
	ae := apperr.As(err)
	assert.NotNil(t, ae.Details["pre_send_summary"])
	assert.NotNil(t, ae.Details["upstream_error"])

	// A run that is accepted but then denied is not SENT either (D11).
	e.sim.SetApprovalRules(vaultsim.ApprovalRule{ConnectorID: "google", Verb: "google.gmail.drafts.send", Action: vaultsim.ActionDeny})
	_, err = e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	assert.Equal(t, apperr.CodeGmailDraftSendFailed, code(t, err))
	assert.Equal(t, "DENIED", apperr.As(err).Details["run_status"])
	assert.Empty(t, e.sim.SentMessages())
}

func TestHappyPathToSentAfterApproval(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	ctx := context.Background()
	_, err := e.svc.Run(ctx, "scope-a", Input{RequestText: ask})
	require.Equal(t, apperr.CodeApprovalRequired, code(t, err))
	ae := apperr.As(err)
	appr := approval.ApprovalOf(err)
	require.NotNil(t, appr)
	assert.Same(t, appr, ae.Details["approval"])
	assert.Equal(t, approval.KindPlanRun, appr.Kind)
	assert.NotEmpty(t, appr.JobID)
	runID := appr.RunID
	require.NotEmpty(t, runID)
	summary := ae.Details["pre_send_summary"].(map[string]any)
	assert.Equal(t, "skl83@cornell.edu", summary["recipient"])
	assert.Equal(t, "Ada", summary["fields"].([]any)[0].(map[string]any)["value"])
	resume := ae.Details["resume_arguments"].(map[string]any)
	assert.Equal(t, runID, resume["run_id"])
	assert.Empty(t, e.sim.SentMessages(), "nothing is sent before the approval")

	// The plan: 7 steps in a fixed order, identity steps for subject self,
	// draft_id bound from the create step.
	plans := e.sim.RequestsTo("POST", "/v0/connectors/plans/execute")
	require.Len(t, plans, 1)
	plan := plans[0].Body["plan"].(map[string]any)
	var ids, verbs []string
	for _, s := range plan["steps"].([]any) {
		m := s.(map[string]any)
		ids = append(ids, m["step_id"].(string))
		verbs = append(verbs, m["verb"].(string))
		if m["connector_id"] == "identity" {
			assert.Equal(t, "self", m["request_base"].(map[string]any)["subject_ref"])
		}
	}
	assert.Equal(t, []string{"read_existing_profile", "extract_passport_fields", "read_after_extract_profile",
		"create_draft_from_existing", "send_draft_from_existing", "create_draft_after_extract", "send_draft_after_extract"}, ids)
	assert.Equal(t, []string{profileRead, extractionRun, profileRead, "google.gmail.drafts.create", "google.gmail.drafts.send",
		"google.gmail.drafts.create", "google.gmail.drafts.send"}, verbs)
	pi := plans[0].Body["plan_input"].(map[string]any)["passport"].(map[string]any)
	assert.Equal(t, "doc_passport_self", pi["document_id"])
	assert.Len(t, pi["slots"], 5)

	// The handle is durable.
	list, err := e.handles.List("scope-a", nil, 10)
	require.NoError(t, err)
	assert.NotEmpty(t, list)

	// A person approves; resuming reports SENT only now.
	pending := e.sim.PendingApprovals()
	require.Len(t, pending, 1)
	require.NoError(t, e.sim.Approve(pending[0].PendingID))
	res, err := e.svc.Run(ctx, "scope-a", Input{RequestText: ask, RunID: runID})
	require.NoError(t, err)
	assert.Equal(t, StatusSent, res.Data["status"])
	sent := e.sim.SentMessages()
	require.Len(t, sent, 1)
	assert.Equal(t, []string{"skl83@cornell.edu"}, sent[0].To)
	assert.Contains(t, sent[0].TextPlain, "First Name: Ada\nLast Name: Lovelace\nPassport Number: X1234567\nIssuing Country: GBR\nExpiry Date: 2031-05-01")
}

func TestResumeWhilePendingReturnsHandoff(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask})
	runID := approval.ApprovalOf(err).RunID
	_, err = e.svc.Run(context.Background(), "s", Input{RequestText: ask, RunID: runID})
	assert.Equal(t, apperr.CodeApprovalRequired, code(t, err))
}

func TestManualOverrideWinsOverProfile(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	e.sim.SetApprovalRules()
	res, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, ManualFields: map[string]any{"given_name": "Augusta"}})
	require.NoError(t, err)
	assert.Equal(t, StatusSent, res.Data["status"])
	assert.Equal(t, "Augusta", res.Data["resolved_fields"].(map[string]any)["given_name"])
	require.Len(t, e.sim.SentMessages(), 1)
	assert.Contains(t, e.sim.SentMessages()[0].TextPlain, "First Name: Augusta")
}

func TestValidation(t *testing.T) {
	e := newEnv(t, vaultsim.Options{})
	_, err := e.svc.Run(context.Background(), "s", Input{RequestText: ask, BodyStyle: "shouty"})
	assert.Equal(t, apperr.CodeValidation, code(t, err))
	assert.Equal(t, "body_style", apperr.As(err).Details["field"])
	_, err = e.svc.Run(context.Background(), "s", Input{RequestText: ask, ManualFields: map[string]any{"ssn": "1"}})
	assert.Equal(t, "manual_fields.ssn", apperr.As(err).Details["field"])
}

func TestParseSubjectAndStyle(t *testing.T) {
	assert.Equal(t, "Travel docs", parseSubject(`email a@b.co, subject: "Travel docs"`))
	assert.Equal(t, "Travel docs", parseSubject(`subject 'Travel docs' please`))
	assert.Equal(t, "my trip", parseSubject(`with subject my trip, thanks`))
	assert.Equal(t, "", parseSubject("no topic here"))
	assert.Equal(t, "concise", detectStyle("keep it brief"))
	assert.Equal(t, "casual", detectStyle("Casual please"))
	assert.Equal(t, "", detectStyle("nothing"))
	body := composeBody("detailed", func(s string) string { return "<" + s + ">" })
	assert.NotEqual(t, composeBody("", func(s string) string { return "<" + s + ">" }), body, "detailed differs from default")
}

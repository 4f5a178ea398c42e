package execution

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/domain/approval/orchestration"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fakeVault(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case vault.PathValidate:
			_, _ = io.WriteString(w, `{"validated":true}`)
		case vault.PathExecuteJob:
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"job":{"job_id":"job_1","status":"PENDING","error":{"code":"CONNECTOR_APPROVAL_DECISION_REQUIRED"},"pending_approval":{"challenge":{"challenge_id":"ach_1"}}}}`)
		case vault.PathPlanExecute:
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"run_id":"run_1","job":{"job_id":"job_2","status":"PENDING","pending_approval":{"pending_id":"apj_2","challenge":{"challenge_id":"ach_2"}}}}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newService(t *testing.T) (*Service, *store.DB, session.Session) {
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	c := vault.New(vault.Options{})
	svc := &Service{Vault: c, ModuleHash: vault.NewModuleHash(c, nil), Handles: approval.NewStore(db, time.Hour)}
	return svc, db, session.Session{BaseURL: fakeVault(t).URL, Token: "tok", TimeoutMS: 5000}
}

func genericRequest() map[string]any {
	return map[string]any{"connector_id": "generic.http", "verb": "generic.http.request.v1", "request": map[string]any{"method": "GET", "url": "https://x.example"}}
}

func TestExecuteJobStoresHandleAndNeverMutatesTheRequest(t *testing.T) {
	svc, db, sess := newService(t)
	defer db.Close()
	req := genericRequest()
	_, err := svc.ExecuteJob(context.Background(), "tenant", sess, req, orchestration.DefaultOptions(), "")
	ae := apperr.As(err)
	require.Equal(t, apperr.CodeApprovalRequired, ae.Code)
	assert.NotContains(t, ae.Details, "handle_stored")
	assert.Equal(t, genericRequest(), req)
	recs, err := svc.Handles.List("tenant", nil, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "job_1", recs[0].Handle.JobID)
	assert.Equal(t, "vaultclaw_connector_execute_job", recs[0].Source)
}

func TestPlanExecuteSourceAndStoreFailure(t *testing.T) {
	svc, db, sess := newService(t)
	plan := map[string]any{"steps": []any{map[string]any{"step_id": "a", "connector_id": "google", "verb": "google.gmail.send.v1"}}}
	_, err := svc.PlanExecute(context.Background(), "tenant", sess, PlanExecuteInput{Plan: plan, Source: "vaultclaw_passport_email_workflow"})
	require.Equal(t, apperr.CodeApprovalRequired, apperr.As(err).Code)
	recs, _ := svc.Handles.List("tenant", nil, 0)
	require.Len(t, recs, 1)
	assert.Equal(t, "vaultclaw_passport_email_workflow", recs[0].Source)
	assert.Equal(t, approval.Handle{Kind: "PLAN_RUN", JobID: "job_2", RunID: "run_1", ChallengeID: "ach_2", PendingID: "apj_2"}, recs[0].Handle)
	assert.NotContains(t, plan["steps"].([]any)[0].(map[string]any), "request_base", "the caller's plan is not modified")

	// A store that cannot write still hands the handle back.
	require.NoError(t, db.Close())
	_, err = svc.PlanExecute(context.Background(), "tenant", sess, PlanExecuteInput{Plan: plan})
	ae := apperr.As(err)
	require.Equal(t, apperr.CodeApprovalRequired, ae.Code)
	assert.Equal(t, false, ae.Details["handle_stored"])
	assert.Equal(t, "run_1", ae.Details["approval"].(*approval.Approval).RunID)
	assert.Equal(t, "run_1", approval.ApprovalOf(err).RunID)
}

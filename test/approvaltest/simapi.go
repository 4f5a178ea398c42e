package approvaltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/vault/vaultsim"
)

// SimAPI is approval.API served by a simulator's handler in memory: no
// sockets, so it runs inside a synctest bubble on fake time, and every
// call lands in the simulator's request log as an HTTP one would.
type SimAPI struct {
	Sim   *vaultsim.Sim
	Token string
}

// Do sends one request to the simulator.
func (a SimAPI) Do(ctx context.Context, method, path string, body any) (approval.Reply, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+a.Token)
	rec := httptest.NewRecorder()
	a.Sim.ServeHTTP(rec, req)
	if err := ctx.Err(); err != nil {
		return approval.Reply{}, err
	}
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return approval.Reply{Status: rec.Code, Body: out}, nil
}

// JobGet implements approval.API.
func (a SimAPI) JobGet(ctx context.Context, id string) (approval.Reply, error) {
	return a.Do(ctx, http.MethodGet, "/v0/jobs/"+url.PathEscape(id), nil)
}

// PlanRunGet implements approval.API.
func (a SimAPI) PlanRunGet(ctx context.Context, id string) (approval.Reply, error) {
	return a.Do(ctx, http.MethodGet, "/v0/connectors/plans/runs/"+url.PathEscape(id), nil)
}

// PendingApprovals implements approval.API.
func (a SimAPI) PendingApprovals(ctx context.Context, q url.Values) (approval.Reply, error) {
	return a.Do(ctx, http.MethodGet, "/v0/connectors/approvals/pending?"+q.Encode(), nil)
}

// PendingJob submits a Gmail send as a job, which the simulator holds for
// approval, and returns its handle.
func (a SimAPI) PendingJob(ctx context.Context) (approval.Handle, error) {
	r, err := a.Do(ctx, http.MethodPost, "/v0/connectors/execute-job", map[string]any{
		"connector_id": "google", "verb": "google.gmail.send.v1", "policy_version": "1", "module_hash": a.Sim.PolicyHash("google"),
		"request": map[string]any{"user_id": "me", "to": []any{"bob@example.com"}, "subject": "s", "text_plain": "t"},
	})
	if err != nil {
		return approval.Handle{}, err
	}
	job, _ := r.Body["job"].(map[string]any)
	id, _ := job["job_id"].(string)
	if r.Status != http.StatusAccepted || id == "" {
		return approval.Handle{}, fmt.Errorf("execute-job answered %d: %v", r.Status, r.Body)
	}
	return approval.Handle{Kind: approval.KindJob, JobID: id}, nil
}

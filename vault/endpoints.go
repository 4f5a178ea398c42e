package vault

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Vault API paths. The comments of the calls below number them E1–E17, as
// the endpoint table in docs/contract.md does.
const (
	PathConnectors        = "/v0/connectors"
	PathValidate          = "/v0/connectors/validate"
	PathExecute           = "/v0/connectors/execute"
	PathExecuteJob        = "/v0/connectors/execute-job"
	PathPlanValidate      = "/v0/connectors/plans/validate"
	PathPlanExecute       = "/v0/connectors/plans/execute"
	PathPlanRuns          = "/v0/connectors/plans/runs/"
	PathJobs              = "/v0/jobs/"
	PathPendingApprovals  = "/v0/connectors/approvals/pending"
	PathDocTypesSuggest   = "/v0/docs/types/suggest"
	PathDocTypesLatest    = "/v0/docs/types/latest"
	PathSlotBindings      = "/v0/connectors/secrets/slots/bindings"
	PathSlotBind          = "/v0/connectors/secrets/slots/bind"
	PathProfilesList      = "/v0/connectors/unbounded/profiles/list"
	PathProfileGet        = "/v0/connectors/unbounded/profiles/get"
	PathProfileUpsert     = "/v0/connectors/unbounded/profiles/upsert"
	DefaultDocSubjectID   = "self"
	DefaultDocSuggestTopK = 5
)

// idem returns key, or a fresh random key when key is blank: each call gets
// its own key unless the caller supplies a stable one (an agent's
// idempotency_key, the auto-create hash). Do adds one to every
// execute-type POST anyway; this keeps plans/validate's random key.
func idem(key string) string {
	if k := strings.TrimSpace(key); k != "" {
		return k
	}
	return NewID()
}

func requireID(field, id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", apperr.Validation(field, "%s is required", field)
	}
	return id, nil
}

func (c *Client) get(ctx context.Context, s Endpoint, path string, q url.Values) (*Response, error) {
	return c.Do(ctx, s, Request{Method: http.MethodGet, Path: path, Query: q})
}

func (c *Client) post(ctx context.Context, s Endpoint, path string, body any, idemKey string) (*Response, error) {
	return c.Do(ctx, s, Request{Method: http.MethodPost, Path: path, Body: body, IdempotencyKey: idemKey})
}

// ListConnectors is E1 GET /v0/connectors.
func (c *Client) ListConnectors(ctx context.Context, s Endpoint) (*Response, error) {
	return c.get(ctx, s, PathConnectors, nil)
}

// GetConnector is E2 GET /v0/connectors/{id} (id path-escaped, D14).
func (c *Client) GetConnector(ctx context.Context, s Endpoint, id string) (*Response, error) {
	id, err := requireID("connector_id", id)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, s, PathConnectors+"/"+url.PathEscape(id), nil)
}

// Validate is E3 POST /v0/connectors/validate (no idempotency key).
func (c *Client) Validate(ctx context.Context, s Endpoint, req map[string]any) (*Response, error) {
	return c.post(ctx, s, PathValidate, req, "")
}

// Execute is E4 POST /v0/connectors/execute; a blank idemKey gets a random
// one.
func (c *Client) Execute(ctx context.Context, s Endpoint, req map[string]any, idemKey string) (*Response, error) {
	return c.post(ctx, s, PathExecute, req, idem(idemKey))
}

// ExecuteJob is E5 POST /v0/connectors/execute-job; a blank idemKey gets a
// random one.
func (c *Client) ExecuteJob(ctx context.Context, s Endpoint, req map[string]any, idemKey string) (*Response, error) {
	return c.post(ctx, s, PathExecuteJob, req, idem(idemKey))
}

// PlanValidate is E6 POST /v0/connectors/plans/validate with body {plan}.
func (c *Client) PlanValidate(ctx context.Context, s Endpoint, plan map[string]any) (*Response, error) {
	return c.post(ctx, s, PathPlanValidate, map[string]any{"plan": plan}, idem(""))
}

// PlanExecute is E7 POST /v0/connectors/plans/execute; body is sent as
// given ({plan, plan_input?, analysis?, ...}).
func (c *Client) PlanExecute(ctx context.Context, s Endpoint, body map[string]any, idemKey string) (*Response, error) {
	return c.post(ctx, s, PathPlanExecute, body, idem(idemKey))
}

// PlanRunGet is E8 GET /v0/connectors/plans/runs/{run_id}.
func (c *Client) PlanRunGet(ctx context.Context, s Endpoint, runID string) (*Response, error) {
	runID, err := requireID("run_id", runID)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, s, PathPlanRuns+url.PathEscape(runID), nil)
}

// JobGet is E9 GET /v0/jobs/{job_id}.
func (c *Client) JobGet(ctx context.Context, s Endpoint, jobID string) (*Response, error) {
	jobID, err := requireID("job_id", jobID)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, s, PathJobs+url.PathEscape(jobID), nil)
}

// PendingApprovals is E10 GET /v0/connectors/approvals/pending; q is sent
// as given (blank values dropped, keys sorted).
func (c *Client) PendingApprovals(ctx context.Context, s Endpoint, q url.Values) (*Response, error) {
	return c.get(ctx, s, PathPendingApprovals, q)
}

// DocTypesSuggest is E11 POST /v0/docs/types/suggest (no idempotency key);
// topK <= 0 means 5.
func (c *Client) DocTypesSuggest(ctx context.Context, s Endpoint, query string, topK int) (*Response, error) {
	if topK <= 0 {
		topK = DefaultDocSuggestTopK
	}
	return c.post(ctx, s, PathDocTypesSuggest, map[string]any{"query": strings.TrimSpace(query), "top_k": topK}, "")
}

// DocTypesLatest is E12 GET /v0/docs/types/latest; a blank subjectID means
// "self".
func (c *Client) DocTypesLatest(ctx context.Context, s Endpoint, typeID, subjectID string) (*Response, error) {
	typeID, err := requireID("type_id", typeID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(subjectID) == "" {
		subjectID = DefaultDocSubjectID
	}
	return c.get(ctx, s, PathDocTypesLatest, url.Values{"type_id": {typeID}, "subject_id": {subjectID}})
}

// SlotBindings is E13 GET /v0/connectors/secrets/slots/bindings;
// include_revoked is sent only when true.
func (c *Client) SlotBindings(ctx context.Context, s Endpoint, connectorID, verb string, includeRevoked bool) (*Response, error) {
	q := url.Values{"connector_id": {connectorID}, "verb": {verb}}
	if includeRevoked {
		q.Set("include_revoked", "true")
	}
	return c.get(ctx, s, PathSlotBindings, q)
}

// SlotBind is E14 POST /v0/connectors/secrets/slots/bind with body
// {connector_id, verb, slot, secret_id}; a blank idemKey gets a random one.
func (c *Client) SlotBind(ctx context.Context, s Endpoint, body map[string]any, idemKey string) (*Response, error) {
	return c.post(ctx, s, PathSlotBind, body, idem(idemKey))
}

// ProfilesList is E15 GET /v0/connectors/unbounded/profiles/list.
func (c *Client) ProfilesList(ctx context.Context, s Endpoint, q url.Values) (*Response, error) {
	return c.get(ctx, s, PathProfilesList, q)
}

// ProfileGet is E16 GET /v0/connectors/unbounded/profiles/get?profile_id=.
func (c *Client) ProfileGet(ctx context.Context, s Endpoint, id string) (*Response, error) {
	id, err := requireID("profile_id", id)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, s, PathProfileGet, url.Values{"profile_id": {id}})
}

// ProfileUpsert is E17 POST /v0/connectors/unbounded/profiles/upsert with
// body {profile}; a blank idemKey gets a random one (auto-create passes
// its deterministic key).
func (c *Client) ProfileUpsert(ctx context.Context, s Endpoint, profile map[string]any, idemKey string) (*Response, error) {
	return c.post(ctx, s, PathProfileUpsert, map[string]any{"profile": profile}, idem(idemKey))
}

// PendingQuery builds the E10 query the pending-id resolver uses: the
// challenge, limit 200 and all seven states.
func PendingQuery(challengeID string, limit int) url.Values {
	if limit <= 0 {
		limit = 200
	}
	return url.Values{
		"challenge_id": {challengeID},
		"limit":        {strconv.Itoa(limit)},
		"states":       {strings.Join(AllPendingStates, ",")},
	}
}

// AllPendingStates are the seven pending-approval states, in the order
// the states filter sends them.
var AllPendingStates = []string{"WAITING", "READY", "RUNNING", "SUCCEEDED", "DENIED", "FAILED", "EXPIRED"}

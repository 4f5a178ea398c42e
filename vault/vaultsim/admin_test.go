package vaultsim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/vault/vaultsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adminCall sends one admin request straight to the handler. token "" sends
// no admin token header.
func adminCall(t *testing.T, sim *vaultsim.Sim, method, path, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, "http://sim"+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set(vaultsim.AdminTokenHeader, token)
	}
	rec := httptest.NewRecorder()
	sim.ServeHTTP(rec, req)
	var out map[string]any
	if method != http.MethodHead {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), "%s %s: body %q", method, path, rec.Body.String())
	}
	return rec.Code, rec.Header(), out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestAdminRoutes pins every admin route: method, path, status, error code.
func TestAdminRoutes(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AdminToken: "adm"})
	cases := []struct {
		method, path, body string
		status             int
		code               string // error.code, "" for a success body
		key                string // a key a success body carries
	}{
		{"GET", "/_sim/requests", "", 200, "", "items"},
		{"DELETE", "/_sim/requests", "", 200, "", "cleared"},
		{"POST", "/_sim/faults", `{"path":"/v0/nowhere"}`, 200, "", "injected"},
		{"POST", "/_sim/faults", `{}`, 400, "INVALID_ARGUMENT", ""},
		{"POST", "/_sim/faults", `[1]`, 400, "INVALID_ARGUMENT", ""},
		{"DELETE", "/_sim/faults", "", 200, "", "cleared"},
		{"GET", "/_sim/approvals", "", 200, "", "items"},
		{"POST", "/_sim/approvals", "", 200, "", "items"},
		{"GET", "/_sim/approvals/nope", "", 404, "NOT_FOUND", ""},
		{"POST", "/_sim/approvals/nope/approve", "", 404, "APPROVAL_NOT_WAITING", ""},
		{"POST", "/_sim/approvals/nope/deny", "", 404, "APPROVAL_NOT_WAITING", ""},
		{"GET", "/_sim/approval-rules", "", 200, "", "rules"},
		{"PUT", "/_sim/approval-rules", `{}`, 400, "INVALID_ARGUMENT", ""},
		{"PUT", "/_sim/approval-rules", `[{"connector_id":"google","verb":"x","action":"maybe"}]`, 400, "INVALID_ARGUMENT", ""},
		{"PUT", "/_sim/approval-rules", `[{"connector_id":"google","verb":"x","action":"require"}]`, 200, "", "rules"},
		{"POST", "/_sim/approval-rules", `[]`, 200, "", "rules"},
		{"POST", "/_sim/tokens", `{"token":"t1","scopes":["jobs.read.v1"]}`, 200, "", "token"},
		{"POST", "/_sim/tokens", ``, 200, "", "token"},
		{"POST", "/_sim/tokens", `not json`, 400, "INVALID_ARGUMENT", ""},
		{"DELETE", "/_sim/tokens/t1", "", 200, "", "removed"},
		{"POST", "/_sim/secrets", `{"secret_id":"s1"}`, 400, "INVALID_ARGUMENT", ""},
		{"POST", "/_sim/secrets", `{"secret_id":"s1","value":"v"}`, 200, "", "stored"},
		{"GET", "/_sim/documents", "", 200, "", "items"},
		{"POST", "/_sim/documents", `{"filename":"a.pdf"}`, 400, "INVALID_ARGUMENT", ""},
		{"POST", "/_sim/documents", `{"document_id":"doc_t1","type_id":"identity.passport"}`, 200, "", "document_id"},
		{"DELETE", "/_sim/documents/doc_t1", "", 200, "", "removed"},
		{"DELETE", "/_sim/documents/doc_t1", "", 404, "NOT_FOUND", ""},
		{"PUT", "/_sim/connectors/google/policy-hash", `{"policy_hash":"h1"}`, 200, "", "policy_hash"},
		{"POST", "/_sim/connectors/google/policy-hash", `{"policy_hash":"h2"}`, 200, "", "policy_hash"},
		{"PUT", "/_sim/connectors/nope/policy-hash", `{"policy_hash":"h"}`, 404, "CONNECTOR_NOT_FOUND", ""},
		{"GET", "/_sim/mailbox", "", 200, "", "sent"},
		{"DELETE", "/_sim/mailbox", "", 200, "", "drafts"},
		{"GET", "/_sim/kyc/self", "", 200, "", "values"},
		{"PUT", "/_sim/kyc/self", "", 200, "", "subject"},
	}
	for _, c := range cases {
		status, hdr, body := adminCall(t, sim, c.method, c.path, "adm", c.body)
		what := c.method + " " + c.path + " " + c.body
		assert.Equal(t, c.status, status, what)
		assert.Equal(t, "application/json", hdr.Get("Content-Type"), what)
		assert.Equal(t, c.code, errCode(body), what)
		if c.key != "" {
			assert.Contains(t, body, c.key, what)
		}
	}
	assert.Equal(t, "h2", sim.PolicyHash("google"))
}

// TestAdminUnknownRoutes: a path or method the admin API does not know is a
// 404 with the simulator's JSON error (never a 405 or a plain-text body),
// and it sits behind the admin token like every other admin path.
func TestAdminUnknownRoutes(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AdminToken: "adm"})
	for _, c := range []struct{ method, path string }{
		{"GET", "/_sim/"},
		{"GET", "/_sim/nosuch"},
		{"POST", "/_sim/nosuch/deeper"},
		{"PUT", "/_sim/requests"},
		{"HEAD", "/_sim/requests"},
		{"GET", "/_sim/faults"},
		{"PATCH", "/_sim/approval-rules"},
		{"DELETE", "/_sim/approvals/x"},
		{"GET", "/_sim/approvals/x/approve"},
		{"POST", "/_sim/approvals/x/frobnicate"},
		{"GET", "/_sim/tokens"},
		{"GET", "/_sim/tokens/x"},
		{"GET", "/_sim/secrets"},
		{"PUT", "/_sim/documents"},
		{"GET", "/_sim/documents/x"},
		{"GET", "/_sim/connectors/google/policy-hash"},
		{"PUT", "/_sim/connectors/google"},
		{"GET", "/_sim/kyc"},
	} {
		what := c.method + " " + c.path
		status, hdr, body := adminCall(t, sim, c.method, c.path, "adm", "")
		assert.Equal(t, 404, status, what)
		assert.Equal(t, "application/json", hdr.Get("Content-Type"), what)
		if c.method != http.MethodHead {
			assert.Equal(t, "NOT_FOUND", errCode(body), what)
			assert.Equal(t, "no admin route "+what, errMessage(body), what)
		}
		status, _, body = adminCall(t, sim, c.method, c.path, "", "")
		assert.Equal(t, 401, status, what+" without the admin token")
		if c.method != http.MethodHead {
			assert.Equal(t, "UNAUTHENTICATED", errCode(body), what)
		}
	}
	// The body is checked before the route: a non-object body is a 400 even
	// on a path that does not exist.
	status, _, body := adminCall(t, sim, "POST", "/_sim/nosuch", "adm", "not json")
	assert.Equal(t, 400, status)
	assert.Equal(t, "INVALID_ARGUMENT", errCode(body))
}

// TestAdminTokenAndOpenEndpoints: health and echo never need the admin
// token; everything else does when one is configured, and nothing does
// when none is.
func TestAdminTokenAndOpenEndpoints(t *testing.T) {
	sim := vaultsim.New(vaultsim.Options{AdminToken: "adm"})
	for _, m := range []string{"GET", "POST"} {
		status, _, body := adminCall(t, sim, m, "/_sim/health", "", "")
		assert.Equal(t, 200, status)
		assert.Equal(t, map[string]any{"ok": true, "service": "vaultsim"}, body)
	}
	status, _, body := adminCall(t, sim, "PUT", "/_sim/echo?x=1", "", "hello")
	assert.Equal(t, 200, status)
	assert.Equal(t, "PUT", body["method"])
	assert.Equal(t, "/_sim/echo", body["path"])
	assert.Equal(t, "x=1", body["query"])
	assert.Equal(t, "hello", body["body"])

	status, _, body = adminCall(t, sim, "GET", "/_sim/requests", "", "")
	assert.Equal(t, 401, status)
	assert.Equal(t, "UNAUTHENTICATED", errCode(body))
	status, _, _ = adminCall(t, sim, "GET", "/_sim/requests", "wrong", "")
	assert.Equal(t, 401, status)

	open := vaultsim.New(vaultsim.Options{})
	status, _, _ = adminCall(t, open, "GET", "/_sim/requests", "", "")
	assert.Equal(t, 200, status)
}

// TestAdminApproveDeny drives a real pending approval through the admin API.
func TestAdminApproveDeny(t *testing.T) {
	e := start(t, vaultsim.Options{})
	sim := e.srv.Sim
	for _, action := range []string{"approve", "deny"} {
		_, err := e.c.ExecuteJob(e.ctx, e.s, gmailSend(e.srv.PolicyHash("google"), map[string]any{"to": []any{"a@example.com"}}), "")
		require.NoError(t, err)
		var pid string
		for _, p := range sim.PendingApprovals() {
			if p.State == "WAITING" {
				pid = p.PendingID
			}
		}
		require.NotEmpty(t, pid)
		status, _, body := adminCall(t, sim, "GET", "/_sim/approvals/"+pid, "", "")
		assert.Equal(t, 200, status)
		assert.Equal(t, pid, body["pending_id"])
		status, _, body = adminCall(t, sim, "POST", "/_sim/approvals/"+pid+"/"+action, "", "")
		assert.Equal(t, 200, status, action)
		assert.Equal(t, pid, body["pending_id"])
		status, _, body = adminCall(t, sim, "POST", "/_sim/approvals/"+pid+"/"+action, "", "")
		assert.Equal(t, 409, status, action+" twice")
		assert.Equal(t, "APPROVAL_NOT_WAITING", errCode(body))
	}
}

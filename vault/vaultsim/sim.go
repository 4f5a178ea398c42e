// Package vaultsim is a stateful Vaultclaw simulator: the endpoints the MCP
// server uses with real state (connectors, policy hashes, jobs and plan
// runs with approvals, profiles, documents, a Gmail mailbox, KYC), token
// scopes, fault injection and a request log, for tests and `accords-mcp
// dev-vault`.
package vaultsim

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Scopes a token may hold: Vaultclaw's names where the predecessor's tests
// show them, the simulator's choice for the rest.
const (
	ScopeConnectorsList     = "connectors.list.v1"
	ScopeConnectorsGet      = "connectors.get.v1"
	ScopeConnectorsValidate = "connectors.validate.v1"
	ScopeExecute            = "connectors.execute.v1"
	ScopeExecuteJob         = "connectors.execute_job.v1"
	ScopePlansExecute       = "connectors.plans.execute.v1"
	ScopePlansRead          = "connectors.plans.read.v1"
	ScopeJobsRead           = "jobs.read.v1"
	ScopeApprovalsRead      = "connectors.approvals.pending.read.v1"
	ScopeDocsSuggest        = "docs.types.suggest"
	ScopeDocsLatest         = "docs.types.latest"
	ScopeSlotsRead          = "connectors.secrets.slots.read.v1"
	ScopeSlotsWrite         = "connectors.secrets.slots.write.v1"
	ScopeProfilesRead       = "connectors.unbounded.profiles.read"
	ScopeProfilesWrite      = "connectors.unbounded.profiles.write"
)

// AllScopes is what the default agent token holds.
var AllScopes = []string{
	ScopeConnectorsList, ScopeConnectorsGet, ScopeConnectorsValidate, ScopeExecute, ScopeExecuteJob,
	ScopePlansExecute, ScopePlansRead, ScopeJobsRead, ScopeApprovalsRead, ScopeDocsSuggest, ScopeDocsLatest,
	ScopeSlotsRead, ScopeSlotsWrite, ScopeProfilesRead, ScopeProfilesWrite,
}

// maxLogEntries bounds the request log.
const maxLogEntries = 20000

// AdminPrefix is where the simulator's control endpoints live.
const AdminPrefix = "/_sim/"

// AdminTokenHeader carries the admin token when one is configured.
const AdminTokenHeader = "X-Sim-Admin-Token"

// Options configure a simulator. The zero value is ready to use.
type Options struct {
	// AgentToken is the token holding every scope (random when empty).
	AgentToken string
	// AdminToken, when set, is required (header X-Sim-Admin-Token) on the
	// /_sim/ control endpoints.
	AdminToken string
	// Now is the clock (time.Now when nil); approvals expire against it.
	Now func() time.Time
	// ApprovalTTL is how long a pending approval waits (default 15m).
	ApprovalTTL time.Duration
	// IncludePendingIDInJob puts pending_id into job.pending_approval (by
	// default clients must resolve it through E10).
	IncludePendingIDInJob bool
	// HTTPClient performs generic.http requests (a 10 s client if nil).
	HTTPClient *http.Client
	// NoSeed starts without the default passport document and demo secret.
	NoSeed bool
	// OnPending is told about each new pending approval (after the request
	// that created it is answered); dev-vault prints them.
	OnPending func(PendingApproval)
	// Middleware wraps the Start* servers' handler; a wrapping ResponseWriter
	// must implement http.Hijacker for the reset fault.
	Middleware func(http.Handler) http.Handler
}

// Request is one logged Vault API call (admin calls are not logged).
type Request struct {
	Seq    int
	Time   time.Time
	Method string
	Path   string
	// EscapedPath is the path as sent (ids path-escaped).
	EscapedPath string
	Host        string
	RawQuery    string
	Query       url.Values
	Header      http.Header
	// Body is the decoded JSON object (nil when absent or not an object).
	Body    map[string]any
	RawBody []byte
	// Status is the response status (0 when the connection was reset).
	Status int
	// Fault names the injected fault that shaped the reply, if any.
	Fault string
}

// Fault is an injected failure for the next Times calls of Path.
type Fault struct {
	Method string `json:"method,omitempty"` // "" matches any method
	Path   string `json:"path"`
	Times  int    `json:"times,omitempty"` // <= 0 means 1
	// Latency delays the reply (the request context still cancels it).
	Latency time.Duration `json:"-"`
	// LatencyMS is Latency for the admin endpoint.
	LatencyMS int `json:"latency_ms,omitempty"`
	// Status and Body replace the reply (Body defaults to an error object
	// unless EmptyBody is set).
	Status      int    `json:"status,omitempty"`
	Body        string `json:"body,omitempty"`
	EmptyBody   bool   `json:"empty_body,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Reset drops the connection without a reply.
	Reset bool `json:"reset,omitempty"`
	// ResetAfter runs the request, then drops the connection without the reply.
	ResetAfter bool `json:"reset_after,omitempty"`
}

// Sim is the simulator. It is an http.Handler and safe for concurrent use.
type Sim struct {
	opts Options
	now  func() time.Time
	hc   *http.Client

	mu         sync.Mutex
	seq        int64
	reqSeq     int
	log        []Request
	faults     []*Fault
	tokens     map[string]map[string]bool
	connectors map[string]*connectorDef
	rules      []ApprovalRule
	jobs       map[string]*job
	runs       map[string]*run
	pendings   map[string]*pending
	bindings   []*binding
	secrets    map[string]string
	profiles   map[string]map[string]any
	docTypes   []DocType
	documents  []*Document
	kyc        map[string]map[string]any // subject → slot → value
	mailbox    *mailbox
	idem       map[string]idemEntry
	notify     []PendingApproval

	admin *http.ServeMux // the /_sim/ endpoints (admin.go)
}

type idemEntry struct {
	bodyHash string
	status   int
	body     []byte
}

// New returns a simulator with the default connectors, approval rules,
// document types and (unless NoSeed) a passport on file for "self".
func New(opts Options) *Sim {
	if opts.AgentToken == "" {
		opts.AgentToken = "vc_tok_dev_" + randHex(12)
	}
	if opts.ApprovalTTL <= 0 {
		opts.ApprovalTTL = 15 * time.Minute
	}
	s := &Sim{
		opts:       opts,
		now:        opts.Now,
		hc:         opts.HTTPClient,
		tokens:     map[string]map[string]bool{},
		connectors: defaultConnectors(),
		rules:      DefaultApprovalRules(),
		jobs:       map[string]*job{},
		runs:       map[string]*run{},
		pendings:   map[string]*pending{},
		secrets:    map[string]string{},
		profiles:   map[string]map[string]any{},
		docTypes:   defaultDocTypes(),
		kyc:        map[string]map[string]any{},
		mailbox:    newMailbox(),
		idem:       map[string]idemEntry{},
	}
	s.admin = s.adminMux()
	if s.now == nil {
		s.now = time.Now
	}
	if s.hc == nil {
		s.hc = &http.Client{Timeout: 10 * time.Second}
	}
	s.AddToken(opts.AgentToken, AllScopes...)
	if !opts.NoSeed {
		s.AddDocument(Document{DocumentID: "doc_passport_self", TypeID: "identity.passport", SubjectID: "self",
			Filename: "passport.pdf", ContentType: "application/pdf", Fields: map[string]string{
				"given_name": "Ada", "family_name": "Lovelace", "passport_number": "X1234567",
				"passport_expiry_date": "2031-05-01", "passport_issuing_country": "GBR",
			}})
		// A demo secret for generic.http walkthroughs; bind it to a slot.
		s.PutSecret("sec_demo_api_key", "sk_demo_not_a_real_secret")
	}
	return s
}

// AgentToken is the token holding every scope.
func (s *Sim) AgentToken() string { return s.opts.AgentToken }

// AddToken registers token with exactly the given scopes (replacing any).
func (s *Sim) AddToken(token string, scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := map[string]bool{}
	for _, sc := range scopes {
		set[sc] = true
	}
	s.tokens[token] = set
}

// RemoveToken makes token unknown (401).
func (s *Sim) RemoveToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
}

// Requests returns a copy of the request log.
func (s *Sim) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// RequestsTo returns the logged calls of method and path (method "" = any).
func (s *Sim) RequestsTo(method, path string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if (method == "" || r.Method == method) && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// ClearRequests empties the request log.
func (s *Sim) ClearRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// InjectFault queues f; faults on one path apply in the order injected.
func (s *Sim) InjectFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	if f.Latency == 0 && f.LatencyMS > 0 {
		f.Latency = time.Duration(f.LatencyMS) * time.Millisecond
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes all pending faults.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// PolicyHash returns a connector's current policy hash.
func (s *Sim) PolicyHash(connectorID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.connectors[connectorID]; ok {
		return c.policyHash
	}
	return ""
}

// SetPolicyHash changes a connector's policy hash (a policy rotation);
// execute requests pinned to the old hash are then rejected.
func (s *Sim) SetPolicyHash(connectorID, hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.connectors[connectorID]; ok {
		c.policyHash = hash
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Sim) nextSeq() int64 {
	s.seq++
	return s.seq
}

func (s *Sim) newID(prefix string) string {
	return fmt.Sprintf("%s%d_%s", prefix, s.nextSeq(), randHex(3))
}

// apiError is a Vaultclaw error reply.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func (e *apiError) with(k string, v any) *apiError {
	if e.details == nil {
		e.details = map[string]any{}
	}
	e.details[k] = v
	return e
}

func invalid(message string, errs []FieldError) *apiError {
	list := make([]any, len(errs))
	for i, fe := range errs {
		list[i] = map[string]any{"path": fe.Path, "code": fe.Code, "message": fe.Message, "expected": fe.Expected, "actual": fe.Actual}
	}
	return errf(400, "INVALID_ARGUMENT", "%s", message).with("errors", list)
}

func (e *apiError) body() map[string]any {
	inner := map[string]any{"code": e.code, "message": e.message}
	if e.details != nil {
		inner["details"] = e.details
	}
	return map[string]any{"error": inner}
}

// call is one in-flight API request.
type call struct {
	r       *http.Request
	body    map[string]any
	token   string
	agentID string
	host    string
}

type route struct {
	method, path string
	prefix       bool
	scope        string
	handle       func(c *call) (int, any, *apiError)
}

func (s *Sim) routes() []route {
	return []route{
		{"GET", "/v0/connectors", false, ScopeConnectorsList, s.handleListConnectors},
		{"POST", "/v0/connectors/validate", false, ScopeConnectorsValidate, s.handleValidate},
		{"POST", "/v0/connectors/execute", false, ScopeExecute, s.handleExecute},
		{"POST", "/v0/connectors/execute-job", false, ScopeExecuteJob, s.handleExecuteJob},
		{"POST", "/v0/connectors/plans/validate", false, ScopePlansExecute, s.handlePlanValidate},
		{"POST", "/v0/connectors/plans/execute", false, ScopePlansExecute, s.handlePlanExecute},
		{"GET", "/v0/connectors/plans/runs/", true, ScopePlansRead, s.handleRunGet},
		{"GET", "/v0/jobs/", true, ScopeJobsRead, s.handleJobGet},
		{"GET", "/v0/connectors/approvals/pending", false, ScopeApprovalsRead, s.handlePending},
		{"POST", "/v0/docs/types/suggest", false, ScopeDocsSuggest, s.handleDocSuggest},
		{"GET", "/v0/docs/types/latest", false, ScopeDocsLatest, s.handleDocLatest},
		{"GET", "/v0/connectors/secrets/slots/bindings", false, ScopeSlotsRead, s.handleBindings},
		{"POST", "/v0/connectors/secrets/slots/bind", false, ScopeSlotsWrite, s.handleBind},
		{"GET", "/v0/connectors/unbounded/profiles/list", false, ScopeProfilesRead, s.handleProfilesList},
		{"GET", "/v0/connectors/unbounded/profiles/get", false, ScopeProfilesRead, s.handleProfileGet},
		{"POST", "/v0/connectors/unbounded/profiles/upsert", false, ScopeProfilesWrite, s.handleProfileUpsert},
		// Registered last: the other /v0/connectors/... paths win.
		{"GET", "/v0/connectors/", true, ScopeConnectorsGet, s.handleGetConnector},
	}
}

func (s *Sim) match(method, path string) (route, bool, bool) {
	pathKnown := false
	for _, rt := range s.routes() {
		ok := rt.path == path || (rt.prefix && strings.HasPrefix(path, rt.path) && len(path) > len(rt.path))
		if !ok {
			continue
		}
		pathKnown = true
		if rt.method == method {
			return rt, true, true
		}
	}
	return route{}, false, pathKnown
}

// ServeHTTP implements http.Handler.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, AdminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var body map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		_ = json.Unmarshal(raw, &body)
	}
	s.mu.Lock()
	s.expireLocked()
	s.reqSeq++
	if len(s.log) >= maxLogEntries {
		// A long-running dev-vault keeps the most recent calls only.
		s.log = append([]Request(nil), s.log[len(s.log)-maxLogEntries/2:]...)
	}
	entry := Request{Seq: s.reqSeq, Time: s.now(), Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Host: r.Host, RawQuery: r.URL.RawQuery,
		Query: r.URL.Query(), Header: r.Header.Clone(), Body: body, RawBody: raw}
	s.log = append(s.log, entry)
	fault := s.takeFaultLocked(r.Method, r.URL.Path)
	s.mu.Unlock()

	setStatus := func(st int, f string) {
		s.mu.Lock()
		for i := len(s.log) - 1; i >= 0; i-- {
			if s.log[i].Seq == entry.Seq {
				s.log[i].Status, s.log[i].Fault = st, f
				break
			}
		}
		s.mu.Unlock()
	}
	if fault != nil {
		if fault.Latency > 0 {
			select {
			case <-time.After(fault.Latency):
			case <-r.Context().Done():
				setStatus(0, "latency")
				return
			}
		}
		switch {
		case fault.Reset:
			setStatus(0, "reset")
			resetConn(w)
			return
		case fault.ResetAfter:
			_, _ = s.dispatch(r, raw, body)
			s.flushNotify()
			setStatus(0, "reset_after")
			resetConn(w)
			return
		case fault.Status != 0:
			ct, b := fault.ContentType, fault.Body
			if b == "" && !fault.EmptyBody {
				ct = "application/json"
				b = fmt.Sprintf(`{"error":{"code":"INJECTED_FAULT","message":"injected fault (status %d)"}}`, fault.Status)
			}
			if ct == "" {
				ct = "text/plain; charset=utf-8"
			}
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(fault.Status)
			_, _ = io.WriteString(w, b)
			setStatus(fault.Status, "status")
			return
		}
	}
	status, out := s.dispatch(r, raw, body)
	defer s.flushNotify()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
	w.WriteHeader(status)
	_, _ = w.Write(out)
	f := ""
	if fault != nil {
		f = "latency"
	}
	setStatus(status, f)
}

func (s *Sim) dispatch(r *http.Request, raw []byte, body map[string]any) (int, []byte) {
	reply := func(status int, v any) (int, []byte) {
		b, _ := json.Marshal(v)
		return status, b
	}
	rt, ok, pathKnown := s.match(r.Method, r.URL.Path)
	if !ok {
		if pathKnown {
			return reply(405, errf(405, "METHOD_NOT_ALLOWED", "method %s not allowed on %s", r.Method, r.URL.Path).body())
		}
		return reply(404, errf(404, "NOT_FOUND", "no route for %s %s", r.Method, r.URL.Path).body())
	}
	tok := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	s.mu.Lock()
	scopes, known := s.tokens[tok]
	s.mu.Unlock()
	if tok == "" || !known || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return reply(401, errf(401, "UNAUTHENTICATED", "a valid agent token is required").body())
	}
	if !scopes[rt.scope] {
		return reply(403, errf(403, "INSUFFICIENT_SCOPE", "token lacks scope %s", rt.scope).with("required_scope", rt.scope).body())
	}
	if r.Method == http.MethodPost && (len(bytes.TrimSpace(raw)) == 0 || body == nil) {
		return reply(400, errf(400, "INVALID_ARGUMENT", "request body must be a JSON object").body())
	}
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	idemKey := ""
	sum := sha256.Sum256(raw)
	if key != "" && r.Method == http.MethodPost {
		idemKey = tok + "\x00" + r.URL.Path + "\x00" + key
		s.mu.Lock()
		prev, seen := s.idem[idemKey]
		s.mu.Unlock()
		if seen {
			if prev.bodyHash != hex.EncodeToString(sum[:]) {
				return reply(409, errf(409, "IDEMPOTENCY_KEY_REUSED", "Idempotency-Key was used with a different request body").body())
			}
			return prev.status, prev.body
		}
	}
	c := &call{r: r, body: body, token: tok, agentID: "agent_" + shortHash(tok), host: r.Host}
	status, out, aerr := rt.handle(c)
	if aerr != nil {
		status, out = aerr.status, aerr.body()
	}
	st, b := reply(status, out)
	if idemKey != "" && st < 500 {
		s.mu.Lock()
		s.idem[idemKey] = idemEntry{bodyHash: hex.EncodeToString(sum[:]), status: st, body: b}
		s.mu.Unlock()
	}
	return st, b
}

func (s *Sim) flushNotify() {
	s.mu.Lock()
	list := s.notify
	s.notify = nil
	s.mu.Unlock()
	if s.opts.OnPending != nil {
		for _, p := range list {
			s.opts.OnPending(p)
		}
	}
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func (s *Sim) takeFaultLocked(method, path string) *Fault {
	for i, f := range s.faults {
		if f.Path != path || (f.Method != "" && !strings.EqualFold(f.Method, method)) {
			continue
		}
		out := *f
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return &out
	}
	return nil
}

// resetConn drops the connection without an HTTP reply (RST on TCP).
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// helpers for decoded JSON

func getStr(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return strings.TrimSpace(v)
}

func getMap(m map[string]any, k string) map[string]any {
	v, _ := m[k].(map[string]any)
	return v
}

func deepCopy(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func copyMap(m map[string]any) map[string]any {
	out, _ := deepCopy(m).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

func unixMS(t time.Time) int64 { return t.UnixMilli() }

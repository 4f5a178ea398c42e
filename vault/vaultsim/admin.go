package vaultsim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// serveAdmin serves the admin (control) endpoints under AdminPrefix; adminMux
// lists them. Admin calls are not logged as Vault requests.
func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) { s.admin.ServeHTTP(w, r) }

// adminMux routes the admin endpoints under /_sim/. health and echo are
// open; every other path needs the admin token (when set) and an empty or
// JSON-object body. Unknown paths and methods get the JSON 404.
func (s *Sim) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/_sim/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"ok": true, "service": "vaultsim"})
	})
	mux.HandleFunc("/_sim/echo", adminEcho)
	for _, rt := range []struct {
		pattern string // a pattern without a method accepts any method
		h       func(a *adminCall)
	}{
		{"GET /_sim/requests", s.adminRequests},
		{"DELETE /_sim/requests", s.adminClearRequests},
		{"POST /_sim/faults", s.adminInjectFault},
		{"DELETE /_sim/faults", s.adminClearFaults},
		{"/_sim/approvals", s.adminApprovals},
		{"GET /_sim/approvals/{id}", s.adminApproval},
		{"POST /_sim/approvals/{id}/approve", s.adminDecide(s.Approve)},
		{"POST /_sim/approvals/{id}/deny", s.adminDecide(s.Deny)},
		{"GET /_sim/approval-rules", s.adminRules},
		{"PUT /_sim/approval-rules", s.adminSetRules},
		{"POST /_sim/approval-rules", s.adminSetRules},
		{"POST /_sim/tokens", s.adminAddToken},
		{"DELETE /_sim/tokens/{token}", s.adminRemoveToken},
		{"POST /_sim/secrets", s.adminPutSecret},
		{"GET /_sim/documents", s.adminDocuments},
		{"POST /_sim/documents", s.adminAddDocument},
		{"DELETE /_sim/documents/{id}", s.adminRemoveDocument},
		{"PUT /_sim/connectors/{id}/policy-hash", s.adminSetPolicyHash},
		{"POST /_sim/connectors/{id}/policy-hash", s.adminSetPolicyHash},
		{"/_sim/mailbox", s.adminMailbox},
		{"/_sim/kyc/{subject}", s.adminKYC},
	} {
		method := ""
		if m, _, ok := strings.Cut(rt.pattern, " "); ok {
			method = m
		}
		mux.Handle(rt.pattern, s.adminAuthed(method, rt.h))
	}
	mux.Handle(AdminPrefix, s.adminAuthed("", adminNotFound))
	return mux
}

// adminCall is one authorised admin request with its body read.
type adminCall struct {
	w   http.ResponseWriter
	r   *http.Request
	raw []byte
	in  map[string]any // the body when it is a JSON object
}

func (a *adminCall) ok(v any) { writeJSON(a.w, 200, v) }

func (a *adminCall) fail(status int, code, msg string) {
	writeJSON(a.w, status, errf(status, code, "%s", msg).body())
}

// adminAuthed checks token and body, then calls h; method "" is any
// (ServeMux lets GET answer HEAD, which the admin API does not).
func (s *Sim) adminAuthed(method string, h func(a *adminCall)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.AdminToken != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(AdminTokenHeader)), []byte(s.opts.AdminToken)) != 1 {
			writeJSON(w, 401, errf(401, "UNAUTHENTICATED", "admin token required in %s", AdminTokenHeader).body())
			return
		}
		a := &adminCall{w: w, r: r}
		a.raw, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if len(a.raw) > 0 {
			// faults and approval-rules decode their own body (checked by path).
			first, _, _ := strings.Cut(strings.Trim(strings.TrimPrefix(r.URL.Path, AdminPrefix), "/"), "/")
			if err := json.Unmarshal(a.raw, &a.in); err != nil && first != "approval-rules" && first != "faults" {
				a.fail(400, "INVALID_ARGUMENT", "body must be a JSON object")
				return
			}
		}
		if method != "" && r.Method != method {
			adminNotFound(a)
			return
		}
		h(a)
	})
}

func adminNotFound(a *adminCall) {
	a.fail(404, "NOT_FOUND", "no admin route "+a.r.Method+" "+a.r.URL.Path)
}

// adminEcho is a demo upstream for generic.http: it reflects the request,
// so an attached secret shows up (redacted in the simulator's output).
func adminEcho(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	h := map[string]any{}
	for k, v := range r.Header {
		h[k] = strings.Join(v, ", ")
	}
	writeJSON(w, 200, map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "headers": h, "body": string(raw)})
}

func (s *Sim) adminRequests(a *adminCall) {
	var list []any
	for _, q := range s.Requests() {
		h := map[string]any{}
		for k, v := range q.Header {
			if strings.EqualFold(k, "Authorization") {
				v = []string{"Bearer ***"} // the log endpoint never shows tokens
			}
			h[k] = strings.Join(v, ", ")
		}
		list = append(list, map[string]any{"seq": q.Seq, "time": q.Time, "method": q.Method, "path": q.Path, "query": q.RawQuery,
			"headers": h, "body": q.Body, "status": q.Status, "fault": q.Fault})
	}
	a.ok(map[string]any{"items": list})
}

func (s *Sim) adminClearRequests(a *adminCall) {
	s.ClearRequests()
	a.ok(map[string]any{"cleared": true})
}

func (s *Sim) adminInjectFault(a *adminCall) {
	var f Fault
	if err := json.Unmarshal(a.raw, &f); err != nil || f.Path == "" {
		a.fail(400, "INVALID_ARGUMENT", "fault needs at least a path")
		return
	}
	s.InjectFault(f)
	a.ok(map[string]any{"injected": true})
}

func (s *Sim) adminClearFaults(a *adminCall) {
	s.ClearFaults()
	a.ok(map[string]any{"cleared": true})
}

func (s *Sim) adminApprovals(a *adminCall) {
	var list []any
	for _, p := range s.PendingApprovals() {
		list = append(list, p)
	}
	a.ok(map[string]any{"items": list})
}

func (s *Sim) adminApproval(a *adminCall) {
	id := a.r.PathValue("id")
	for _, p := range s.PendingApprovals() {
		if p.PendingID == id {
			a.ok(p)
			return
		}
	}
	a.fail(404, "NOT_FOUND", "no pending approval "+id)
}

// adminDecide approves or denies: 404 for an unknown id, 409 for one no
// longer waiting, else the approval's new view.
func (s *Sim) adminDecide(decide func(pendingID string) error) func(a *adminCall) {
	return func(a *adminCall) {
		id := a.r.PathValue("id")
		err := decide(id)
		if nw, ok := errors.AsType[*ErrNotWaiting](err); ok {
			status := 409
			if nw.State == "" {
				status = 404
			}
			a.fail(status, "APPROVAL_NOT_WAITING", err.Error())
			return
		}
		for _, p := range s.PendingApprovals() {
			if p.PendingID == id {
				a.ok(p)
				return
			}
		}
	}
}

func (s *Sim) adminRules(a *adminCall) {
	a.ok(map[string]any{"rules": s.ApprovalRules()})
}

func (s *Sim) adminSetRules(a *adminCall) {
	var rules []ApprovalRule
	if err := json.Unmarshal(a.raw, &rules); err != nil {
		a.fail(400, "INVALID_ARGUMENT", "body must be an array of {connector_id, verb, action}")
		return
	}
	for _, rl := range rules {
		if rl.Action != ActionAllow && rl.Action != ActionDeny && rl.Action != ActionRequire {
			a.fail(400, "INVALID_ARGUMENT", "action must be allow, deny or require")
			return
		}
	}
	s.SetApprovalRules(rules...)
	a.ok(map[string]any{"rules": rules})
}

func (s *Sim) adminAddToken(a *adminCall) {
	tok := getStr(a.in, "token")
	if tok == "" {
		tok = "vc_tok_dev_" + randHex(12)
	}
	scopes := strList(a.in["scopes"])
	if _, given := a.in["scopes"]; !given {
		scopes = AllScopes
	}
	s.AddToken(tok, scopes...)
	a.ok(map[string]any{"token": tok, "scopes": scopes})
}

func (s *Sim) adminRemoveToken(a *adminCall) {
	s.RemoveToken(a.r.PathValue("token"))
	a.ok(map[string]any{"removed": true})
}

func (s *Sim) adminPutSecret(a *adminCall) {
	id, val := getStr(a.in, "secret_id"), getStr(a.in, "value")
	if id == "" || val == "" {
		a.fail(400, "INVALID_ARGUMENT", "secret_id and value are required")
		return
	}
	s.PutSecret(id, val)
	a.ok(map[string]any{"secret_id": id, "stored": true})
}

func (s *Sim) adminDocuments(a *adminCall) {
	var list []any
	for _, d := range s.Documents() {
		list = append(list, map[string]any{"document_id": d.DocumentID, "type_id": d.TypeID, "subject_id": d.SubjectID, "filename": d.Filename})
	}
	a.ok(map[string]any{"items": list})
}

func (s *Sim) adminAddDocument(a *adminCall) {
	fields := map[string]string{}
	for k, v := range getMap(a.in, "fields") {
		fields[k] = fmt.Sprint(v)
	}
	if getStr(a.in, "type_id") == "" {
		a.fail(400, "INVALID_ARGUMENT", "type_id is required")
		return
	}
	id := s.AddDocument(Document{DocumentID: getStr(a.in, "document_id"), TypeID: getStr(a.in, "type_id"), SubjectID: getStr(a.in, "subject_id"),
		Filename: getStr(a.in, "filename"), ContentType: getStr(a.in, "content_type"), Fields: fields})
	a.ok(map[string]any{"document_id": id})
}

func (s *Sim) adminRemoveDocument(a *adminCall) {
	id := a.r.PathValue("id")
	if !s.RemoveDocument(id) {
		a.fail(404, "NOT_FOUND", "no document "+id)
		return
	}
	a.ok(map[string]any{"removed": true})
}

func (s *Sim) adminSetPolicyHash(a *adminCall) {
	id := a.r.PathValue("id")
	if s.PolicyHash(id) == "" {
		a.fail(404, "CONNECTOR_NOT_FOUND", "no connector "+id)
		return
	}
	s.SetPolicyHash(id, getStr(a.in, "policy_hash"))
	a.ok(map[string]any{"connector_id": id, "policy_hash": s.PolicyHash(id)})
}

func (s *Sim) adminMailbox(a *adminCall) {
	a.ok(map[string]any{"sent": s.SentMessages(), "drafts": s.Drafts()})
}

func (s *Sim) adminKYC(a *adminCall) {
	subject := a.r.PathValue("subject")
	a.ok(map[string]any{"subject": subject, "values": s.KYC(subject)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Server is a running simulator.
type Server struct {
	*Sim
	// URL is the base URL for TCP servers ("http://localhost" for sockets).
	URL string
	// Socket is the Unix socket path, if any.
	Socket string
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}
}

// Start serves a new simulator on TCP addr ("127.0.0.1:0" when empty).
func Start(addr string, opts Options) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return serve(New(opts), ln, "http://"+ln.Addr().String(), ""), nil
}

// StartUnix serves a new simulator on a Unix socket (a stale socket file
// is replaced).
func StartUnix(path string, opts Options) (*Server, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(path, 0o600)
	return serve(New(opts), ln, "http://localhost", path), nil
}

func serve(sim *Sim, ln net.Listener, base, sock string) *Server {
	var h http.Handler = sim
	if sim.opts.Middleware != nil {
		h = sim.opts.Middleware(sim)
	}
	s := &Server{Sim: sim, URL: base, Socket: sock, ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// Addr is the listener address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// BaseURL is the base URL a client reaches the simulator at: its unix://
// socket when it listens on one, else its HTTP URL. Requests carry
// AgentToken.
func (s *Server) BaseURL() string {
	if s.Socket != "" {
		return "unix://" + s.Socket
	}
	return s.URL
}

// Close stops the server, dropping open connections.
func (s *Server) Close() error { return s.stopped(s.srv.Close()) }

// Shutdown stops gracefully within ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.stopped(s.srv.Shutdown(ctx)) }

// stopped waits for Serve to return and removes the socket file.
func (s *Server) stopped(err error) error {
	<-s.done
	if s.Socket != "" {
		_ = os.Remove(s.Socket)
	}
	return err
}

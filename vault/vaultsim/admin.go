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

	"github.com/accordsai/accords-mcp/domain/session"
)

// Admin (control) endpoints, all under /_sim/:
//
//	GET    /_sim/health              ANY    /_sim/echo (a demo upstream)
//	GET    /_sim/requests            DELETE /_sim/requests
//	POST   /_sim/faults  {Fault}     DELETE /_sim/faults
//	GET    /_sim/approvals           GET    /_sim/approvals/{id}
//	POST   /_sim/approvals/{id}/approve   POST /_sim/approvals/{id}/deny
//	GET    /_sim/approval-rules      PUT    /_sim/approval-rules  [rules]
//	POST   /_sim/tokens {token?, scopes[]}   DELETE /_sim/tokens/{token}
//	POST   /_sim/secrets {secret_id, value}
//	GET    /_sim/documents           POST   /_sim/documents {type_id, subject_id, filename, content_type, fields}
//	DELETE /_sim/documents/{id}
//	PUT    /_sim/connectors/{id}/policy-hash {policy_hash}
//	GET    /_sim/mailbox             GET    /_sim/kyc/{subject}
func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch strings.Trim(strings.TrimPrefix(r.URL.Path, AdminPrefix), "/") {
	case "health":
		writeJSON(w, 200, map[string]any{"ok": true, "service": "vaultsim"})
		return
	case "echo":
		// A demo upstream for generic.http: it reflects the request, so an
		// attached secret shows up (redacted in the simulator's output).
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h := map[string]any{}
		for k, v := range r.Header {
			h[k] = strings.Join(v, ", ")
		}
		writeJSON(w, 200, map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "headers": h, "body": string(raw)})
		return
	}
	if s.opts.AdminToken != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(AdminTokenHeader)), []byte(s.opts.AdminToken)) != 1 {
		writeJSON(w, 401, errf(401, "UNAUTHENTICATED", "admin token required in %s", AdminTokenHeader).body())
		return
	}
	path := strings.TrimPrefix(r.URL.Path, AdminPrefix)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var in map[string]any
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil && !(parts[0] == "approval-rules" || parts[0] == "faults") {
			writeJSON(w, 400, errf(400, "INVALID_ARGUMENT", "body must be a JSON object").body())
			return
		}
	}
	ok := func(v any) { writeJSON(w, 200, v) }
	bad := func(status int, code, msg string) { writeJSON(w, status, errf(status, code, "%s", msg).body()) }
	m := r.Method
	switch {
	case parts[0] == "requests" && m == "GET":
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
		ok(map[string]any{"items": list})
	case parts[0] == "requests" && m == "DELETE":
		s.ClearRequests()
		ok(map[string]any{"cleared": true})
	case parts[0] == "faults" && m == "POST":
		var f Fault
		if err := json.Unmarshal(raw, &f); err != nil || f.Path == "" {
			bad(400, "INVALID_ARGUMENT", "fault needs at least a path")
			return
		}
		s.InjectFault(f)
		ok(map[string]any{"injected": true})
	case parts[0] == "faults" && m == "DELETE":
		s.ClearFaults()
		ok(map[string]any{"cleared": true})
	case parts[0] == "approvals" && len(parts) == 1:
		var list []any
		for _, p := range s.PendingApprovals() {
			list = append(list, p)
		}
		ok(map[string]any{"items": list})
	case parts[0] == "approvals" && len(parts) == 2 && m == "GET":
		for _, p := range s.PendingApprovals() {
			if p.PendingID == parts[1] {
				ok(p)
				return
			}
		}
		bad(404, "NOT_FOUND", "no pending approval "+parts[1])
	case parts[0] == "approvals" && len(parts) == 3 && m == "POST" && (parts[2] == "approve" || parts[2] == "deny"):
		var err error
		if parts[2] == "approve" {
			err = s.Approve(parts[1])
		} else {
			err = s.Deny(parts[1])
		}
		var nw *ErrNotWaiting
		if errors.As(err, &nw) {
			status := 409
			if nw.State == "" {
				status = 404
			}
			bad(status, "APPROVAL_NOT_WAITING", err.Error())
			return
		}
		for _, p := range s.PendingApprovals() {
			if p.PendingID == parts[1] {
				ok(p)
				return
			}
		}
	case parts[0] == "approval-rules" && m == "GET":
		ok(map[string]any{"rules": s.ApprovalRules()})
	case parts[0] == "approval-rules" && (m == "PUT" || m == "POST"):
		var rules []ApprovalRule
		if err := json.Unmarshal(raw, &rules); err != nil {
			bad(400, "INVALID_ARGUMENT", "body must be an array of {connector_id, verb, action}")
			return
		}
		for _, rl := range rules {
			if rl.Action != ActionAllow && rl.Action != ActionDeny && rl.Action != ActionRequire {
				bad(400, "INVALID_ARGUMENT", "action must be allow, deny or require")
				return
			}
		}
		s.SetApprovalRules(rules...)
		ok(map[string]any{"rules": rules})
	case parts[0] == "tokens" && m == "POST":
		tok := getStr(in, "token")
		if tok == "" {
			tok = "vc_tok_dev_" + randHex(12)
		}
		scopes := strList(in["scopes"])
		if _, given := in["scopes"]; !given {
			scopes = AllScopes
		}
		s.AddToken(tok, scopes...)
		ok(map[string]any{"token": tok, "scopes": scopes})
	case parts[0] == "tokens" && len(parts) == 2 && m == "DELETE":
		s.RemoveToken(parts[1])
		ok(map[string]any{"removed": true})
	case parts[0] == "secrets" && m == "POST":
		id, val := getStr(in, "secret_id"), getStr(in, "value")
		if id == "" || val == "" {
			bad(400, "INVALID_ARGUMENT", "secret_id and value are required")
			return
		}
		s.PutSecret(id, val)
		ok(map[string]any{"secret_id": id, "stored": true})
	case parts[0] == "documents" && len(parts) == 1 && m == "GET":
		var list []any
		for _, d := range s.Documents() {
			list = append(list, map[string]any{"document_id": d.DocumentID, "type_id": d.TypeID, "subject_id": d.SubjectID, "filename": d.Filename})
		}
		ok(map[string]any{"items": list})
	case parts[0] == "documents" && len(parts) == 1 && m == "POST":
		fields := map[string]string{}
		for k, v := range getMap(in, "fields") {
			fields[k] = fmt.Sprint(v)
		}
		if getStr(in, "type_id") == "" {
			bad(400, "INVALID_ARGUMENT", "type_id is required")
			return
		}
		id := s.AddDocument(Document{DocumentID: getStr(in, "document_id"), TypeID: getStr(in, "type_id"), SubjectID: getStr(in, "subject_id"),
			Filename: getStr(in, "filename"), ContentType: getStr(in, "content_type"), Fields: fields})
		ok(map[string]any{"document_id": id})
	case parts[0] == "documents" && len(parts) == 2 && m == "DELETE":
		if !s.RemoveDocument(parts[1]) {
			bad(404, "NOT_FOUND", "no document "+parts[1])
			return
		}
		ok(map[string]any{"removed": true})
	case parts[0] == "connectors" && len(parts) == 3 && parts[2] == "policy-hash" && (m == "PUT" || m == "POST"):
		if s.PolicyHash(parts[1]) == "" {
			bad(404, "CONNECTOR_NOT_FOUND", "no connector "+parts[1])
			return
		}
		s.SetPolicyHash(parts[1], getStr(in, "policy_hash"))
		ok(map[string]any{"connector_id": parts[1], "policy_hash": s.PolicyHash(parts[1])})
	case parts[0] == "mailbox":
		ok(map[string]any{"sent": s.SentMessages(), "drafts": s.Drafts()})
	case parts[0] == "kyc" && len(parts) == 2:
		ok(map[string]any{"subject": parts[1], "values": s.KYC(parts[1])})
	default:
		bad(404, "NOT_FOUND", "no admin route "+m+" "+r.URL.Path)
	}
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

// Serve runs sim on an existing listener.
func Serve(sim *Sim, ln net.Listener) *Server {
	base := "http://" + ln.Addr().String()
	sock := ""
	if ln.Addr().Network() == "unix" {
		base, sock = "http://localhost", ln.Addr().String()
	}
	return serve(sim, ln, base, sock)
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

// Session returns an MCP session pointing at the simulator with the agent
// token and timeoutMS (20000 when <= 0).
func (s *Server) Session(timeoutMS int) session.Session {
	if timeoutMS <= 0 {
		timeoutMS = session.DefaultTimeoutMS
	}
	if s.Socket != "" {
		return session.Session{BaseURL: "unix://" + s.Socket, Token: s.AgentToken(), TimeoutMS: timeoutMS}
	}
	return session.Session{BaseURL: s.URL, Token: s.AgentToken(), TimeoutMS: timeoutMS}
}

// Close stops the server, dropping open connections.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	if s.Socket != "" {
		_ = os.Remove(s.Socket)
	}
	return err
}

// Shutdown stops gracefully within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	if s.Socket != "" {
		_ = os.Remove(s.Socket)
	}
	return err
}

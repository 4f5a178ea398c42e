package vaultsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

var executeEnvelope = schema{"type": "object", "properties": map[string]any{
	"connector_id": nonEmpty(), "verb": nonEmpty(), "policy_version": str(), "request": schema{"type": "object"},
	"usage": schema{"type": "object"}, "module_hash": str(), "query_ast_v1": schema{"type": "object"},
}, "required": []any{"connector_id", "verb"}, "additionalProperties": false}

// checked is a validated execute request.
type checked struct {
	conn    *connectorDef
	verb    *verbDef
	payload map[string]any
	ast     map[string]any
}

// checkExecute validates an execute request as E3 does. requireHash is
// false for plan steps (plans are pinned by policy_version, not a hash).
func (s *Sim) checkExecute(req map[string]any, requireHash bool) (*checked, *apiError) {
	var errs []FieldError
	validate(executeEnvelope, req, "", &errs)
	if len(errs) > 0 {
		return nil, invalid("request failed validation", errs)
	}
	s.mu.Lock()
	conn, ok := s.connectors[getStr(req, "connector_id")]
	var policyHash string
	if ok {
		policyHash = conn.policyHash
	}
	s.mu.Unlock()
	if !ok {
		return nil, invalid("request failed validation", []FieldError{{Path: "/connector_id", Code: "UNKNOWN_CONNECTOR", Message: "connector_id names no connector", Expected: "generic.http|google|identity", Actual: getStr(req, "connector_id")}})
	}
	verb, ok := conn.verb(getStr(req, "verb"))
	if !ok {
		return nil, invalid("request failed validation", []FieldError{{Path: "/verb", Code: "UNKNOWN_VERB", Message: fmt.Sprintf("verb is not defined by connector %s", conn.ID), Expected: strings.Join(slices.Sorted(maps.Keys(conn.Verbs)), "|"), Actual: getStr(req, "verb")}})
	}
	if pv := getStr(req, "policy_version"); pv != "" && pv != conn.Version {
		errs = append(errs, FieldError{Path: "/policy_version", Code: FieldEnumMismatch, Message: "policy_version does not match the connector policy", Expected: conn.Version, Actual: pv})
	}
	payload := getMap(req, "request")
	if payload == nil {
		payload = map[string]any{}
	}
	validate(verb.Input, payload, "", &errs)
	var ast map[string]any
	if verb.NeedsQueryAST {
		ast = getMap(req, "query_ast_v1")
		if ast == nil {
			errs = append(errs, FieldError{Path: "/query_ast_v1", Code: FieldRequired, Message: "query_ast_v1 is required for " + verb.Name, Expected: "object", Actual: "missing"})
		} else {
			checkAST(ast, "/query_ast_v1", &errs)
		}
	}
	if requireHash && (verb.Bounded || legacySecretFields(payload)) {
		got := getStr(req, "module_hash")
		switch {
		case got == "":
			errs = append(errs, FieldError{Path: "/module_hash", Code: FieldModuleHashMiss, Message: "module_hash is required for bounded verb " + verb.Name, Expected: "connector policy_hash", Actual: "missing"})
		case got != policyHash:
			errs = append(errs, FieldError{Path: "/module_hash", Code: FieldModuleHash, Message: "module_hash does not match the connector's current policy_hash", Expected: "connector policy_hash", Actual: got})
		}
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
		return nil, invalid("request failed validation", errs)
	}
	return &checked{conn: conn, verb: verb, payload: payload, ast: ast}, nil
}

func legacySecretFields(payload map[string]any) bool {
	if getStr(payload, "token_secret_id") != "" {
		return true
	}
	ids, _ := payload["required_secret_ids"].([]any)
	for _, id := range ids {
		if s, ok := id.(string); ok && strings.TrimSpace(s) != "" {
			return true
		}
	}
	return false
}

var astFields = []string{"label", "from", "to", "subject", "text", "after", "before", "has_attachment", "is_unread"}

func checkAST(node map[string]any, path string, errs *[]FieldError) {
	pred, hasPred := node["pred"].(map[string]any)
	b, hasBool := node["bool"].(map[string]any)
	switch {
	case hasPred && len(pred) > 0:
		f := getStr(pred, "field")
		if !slices.Contains(astFields, f) {
			*errs = append(*errs, FieldError{Path: path + "/pred/field", Code: FieldEnumMismatch, Message: "unsupported query field", Expected: strings.Join(astFields, "|"), Actual: f})
		}
		if op := getStr(pred, "op"); !slices.Contains([]string{"eq", "contains", "before", "after", "exists"}, op) {
			*errs = append(*errs, FieldError{Path: path + "/pred/op", Code: FieldEnumMismatch, Message: "unsupported query operator", Expected: "eq|contains|before|after|exists", Actual: op})
		}
	case hasBool && len(b) > 0:
		op := getStr(b, "op")
		if !slices.Contains([]string{"and", "or", "not"}, op) {
			*errs = append(*errs, FieldError{Path: path + "/bool/op", Code: FieldEnumMismatch, Message: "unsupported boolean operator", Expected: "and|or|not", Actual: op})
		}
		args, _ := b["args"].([]any)
		if len(args) == 0 {
			*errs = append(*errs, FieldError{Path: path + "/bool/args", Code: FieldRequired, Message: "bool.args must list sub-queries", Expected: "array", Actual: jsonscan.Type(b["args"])})
		}
		for i, a := range args {
			m, ok := a.(map[string]any)
			if !ok {
				*errs = append(*errs, FieldError{Path: fmt.Sprintf("%s/bool/args/%d", path, i), Code: FieldTypeMismatch, Message: "query node must be an object", Expected: "object", Actual: jsonscan.Type(a)})
				continue
			}
			checkAST(m, fmt.Sprintf("%s/bool/args/%d", path, i), errs)
		}
	default:
		*errs = append(*errs, FieldError{Path: path, Code: FieldRequired, Message: "query node needs a non-empty pred or bool object", Expected: "pred|bool", Actual: "neither"})
	}
}

// runVerb performs a validated request. It takes s.mu itself; callers
// must not hold it.
func (s *Sim) runVerb(ctx context.Context, c *checked) (map[string]any, *apiError) {
	switch c.conn.ID {
	case "generic.http":
		return s.runHTTP(ctx, c.payload)
	case "google":
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.runGmail(c.verb.Name, c.payload, c.ast)
	case "identity":
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.runIdentity(c.verb.Name, c.payload)
	}
	return nil, errf(500, "INTERNAL", "connector %s has no runner", c.conn.ID)
}

const maxUpstreamBody = 64 << 10

// runHTTP performs a generic.http.request.v1 request for real, attaching
// secrets through the profile and slot bindings; secrets never appear in
// the output.
func (s *Sim) runHTTP(ctx context.Context, p map[string]any) (map[string]any, *apiError) {
	target := getStr(p, "url")
	u, err := url.Parse(target)
	if err != nil {
		return nil, errf(400, "INVALID_ARGUMENT", "url is not valid")
	}
	if q, ok := p["query"].(map[string]any); ok {
		vals := u.Query()
		for k, v := range q {
			vals.Set(k, fmt.Sprint(v))
		}
		u.RawQuery = vals.Encode()
	}
	var body io.Reader
	contentType := ""
	hasBody := false
	if v, ok := p["json"]; ok && v != nil {
		raw, _ := json.Marshal(v)
		body, contentType, hasBody = bytes.NewReader(raw), "application/json", true
	} else if v, ok := p["body"]; ok && v != nil {
		if str, ok := v.(string); ok {
			body, contentType = strings.NewReader(str), "text/plain; charset=utf-8"
		} else {
			raw, _ := json.Marshal(v)
			body, contentType = bytes.NewReader(raw), "application/json"
		}
		hasBody = true
	}
	headers := map[string]string{}
	if h, ok := p["headers"].(map[string]any); ok {
		for k, v := range h {
			headers[k] = fmt.Sprint(v)
		}
	}
	attached, aerr := s.resolveAttachments(p, target, hasBody)
	if aerr != nil {
		return nil, aerr
	}
	maps.Copy(headers, attached)
	method := getStr(p, "method")
	if method == "" {
		method = http.MethodGet
	}
	timeout := 0
	if f, ok := p["timeout_ms"].(float64); ok {
		timeout = int(f)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, msDuration(timeout))
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, errf(400, "INVALID_ARGUMENT", "cannot build upstream request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "vaultsim-generic-http/1")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, errf(502, "UPSTREAM_REQUEST_FAILED", "upstream request failed: %s", redactURLError(err))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	truncated := len(raw) > maxUpstreamBody
	if truncated {
		raw = raw[:maxUpstreamBody]
	}
	// Never echo a secret the upstream reflects back.
	text := string(raw)
	for _, v := range attached {
		if v != "" {
			text = strings.ReplaceAll(text, v, "[REDACTED]")
			if i := strings.IndexByte(v, ' '); i > 0 {
				text = strings.ReplaceAll(text, v[i+1:], "[REDACTED]")
			}
		}
	}
	out := map[string]any{
		"status":      "SUCCEEDED",
		"http_status": resp.StatusCode,
		"headers":     map[string]any{"content-type": resp.Header.Get("Content-Type")},
		"truncated":   truncated,
	}
	if len(attached) > 0 {
		names := slices.Sorted(maps.Keys(attached))
		out["attached_headers"] = names
	}
	mode := getStr(p, "response_mode")
	var parsed any
	switch {
	case mode == "none":
	case mode != "text" && json.Unmarshal([]byte(text), &parsed) == nil:
		out["body_json"] = parsed
	default:
		out["body_text"] = text
	}
	return out, nil
}

func redactURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Op + " " + ue.URL + ": " + ue.Err.Error()
	}
	return err.Error()
}

// resolveAttachments checks secret_attachments against the request's
// unbounded profile and returns the headers carrying the bound secrets.
func (s *Sim) resolveAttachments(p map[string]any, target string, hasBody bool) (map[string]string, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if id := getStr(p, "token_secret_id"); id != "" {
		v, ok := s.secrets[id]
		if !ok {
			return nil, errf(409, "SECRET_SLOT_UNRESOLVED", "secret %s does not exist", id).with("secret_id", id)
		}
		out["Authorization"] = "Bearer " + v
	}
	atts, _ := p["secret_attachments"].([]any)
	if len(atts) == 0 {
		return out, nil
	}
	pid := getStr(p, "profile_id")
	if pid == "" {
		return nil, errf(400, "UNBOUNDED_PROFILE_REQUIRED_FIELDS_MISSING", "profile_id is required when secret_attachments are present").with("field", "profile_id")
	}
	prof, ok := s.profiles[pid]
	if !ok || getStr(prof, "state") == "REVOKED" {
		return nil, errf(404, "UNBOUNDED_PROFILE_NOT_FOUND", "unbounded profile %s not found", pid).with("profile_id", pid)
	}
	slots := profileSlots(prof)
	for i, a := range atts {
		att, _ := a.(map[string]any)
		name := getStr(att, "slot")
		slot, ok := slots[name]
		if !ok {
			return nil, errf(409, "UNBOUNDED_PROFILE_SLOT_UNRESOLVED", "profile %s has no slot %s", pid, name).with("slot", name).with("index", i)
		}
		if err := checkAttachment(i, pid, slot, att, target, hasBody); err != nil {
			return nil, err
		}
		val, ok := s.boundSecretLocked(name)
		if !ok {
			return nil, errf(409, "SECRET_SLOT_UNRESOLVED", "slot %s has no bound secret; bind one with /v0/connectors/secrets/slots/bind", name).with("slot", name)
		}
		header, value := attachmentHeader(att, val)
		out[header] = value
	}
	return out, nil
}

// profileSlots indexes a stored profile's slots by name.
func profileSlots(prof map[string]any) map[string]map[string]any {
	slots := map[string]map[string]any{}
	if list, ok := getMap(prof, "profile")["slots"].([]any); ok {
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				slots[getStr(m, "slot")] = m
			}
		}
	}
	return slots
}

// checkAttachment holds attachment i to its slot's mode, target, intent,
// URL and no read-mode secret on a request with a body.
func checkAttachment(i int, pid string, slot, att map[string]any, target string, hasBody bool) *apiError {
	name, mode, tgt, intent := getStr(att, "slot"), getStr(att, "mode"), getStr(att, "target"), getStr(att, "intent")
	violation := func(what string) *apiError {
		return errf(403, "UNBOUNDED_PROFILE_SLOT_VIOLATION", "secret_attachments[%d] violates profile %s slot %s: %s", i, pid, name, what).with("slot", name).with("constraint", what)
	}
	if !allows(slot["allowed_modes"], mode) {
		return violation("mode")
	}
	if !allows(slot["allowed_targets"], tgt) {
		return violation("target")
	}
	if intent != "" && !allows(slot["allowed_intents"], intent) {
		return violation("intent")
	}
	if !targetCovers(tgt, target) {
		return violation("url outside target")
	}
	if hasBody && mode == "read" {
		return errf(403, "ERR_GENERIC_HTTP_SECRET_ATTACHED_BODY_NOT_ALLOWED", "a read-mode secret cannot be attached to a request with a body").with("slot", name)
	}
	return nil
}

// allows reports whether a slot's allow-list (none: anything) holds v,
// ignoring case.
func allows(list any, v string) bool {
	l := strList(list)
	return len(l) == 0 || slices.ContainsFunc(l, func(x string) bool { return strings.EqualFold(x, v) })
}

// boundSecretLocked returns the secret bound to a generic.http slot; the
// last active binding wins. s.mu is held.
func (s *Sim) boundSecretLocked(slot string) (string, bool) {
	var secretID string
	for _, b := range s.bindings {
		if !b.Revoked && b.ConnectorID == "generic.http" && b.Verb == "generic.http.request.v1" && b.Slot == slot {
			secretID = b.SecretID
		}
	}
	val, ok := s.secrets[secretID]
	if secretID == "" || !ok {
		return "", false
	}
	return val, true
}

// attachmentHeader is the header an attachment sets: Authorization with
// the Bearer scheme unless it names others.
func attachmentHeader(att map[string]any, val string) (string, string) {
	header := getStr(att, "header")
	if header == "" {
		header = "Authorization"
	}
	scheme := getStr(att, "scheme")
	if scheme == "" && strings.EqualFold(header, "Authorization") {
		scheme = "Bearer"
	}
	if scheme != "" {
		val = scheme + " " + val
	}
	return header, val
}

// targetCovers reports whether url lies under target (same origin and
// path prefix).
func targetCovers(target, raw string) bool {
	t, err1 := url.Parse(target)
	u, err2 := url.Parse(raw)
	if err1 != nil || err2 != nil {
		return false
	}
	if !strings.EqualFold(t.Scheme, u.Scheme) || !strings.EqualFold(t.Host, u.Host) {
		return false
	}
	return strings.HasPrefix(u.Path, strings.TrimRight(t.Path, "/"))
}

func strList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// runIdentity handles identity verbs; s.mu is held.
func (s *Sim) runIdentity(verb string, p map[string]any) (map[string]any, *apiError) {
	subject := getStr(p, "subject_ref")
	if subject == "" {
		subject = "self"
	}
	slots := strList(p["slots"])
	switch verb {
	case "identity.extraction.run.v1":
		docID := getStr(p, "document_id")
		var doc *Document
		for _, d := range s.documents {
			if d.DocumentID == docID {
				doc = d
			}
		}
		if doc == nil {
			return nil, errf(404, "NOT_FOUND", "document %s not found", docID).with("document_id", docID)
		}
		if doc.FailExtraction != "" {
			return nil, errf(422, doc.FailExtraction, "extraction of document %s failed", docID).with("document_id", docID)
		}
		values := map[string]any{}
		for k, v := range doc.Fields {
			if len(slots) == 0 || slices.Contains(slots, k) {
				values[k] = v
			}
		}
		if ef, ok := p["extracted_fields"].(map[string]any); ok {
			for k, v := range ef {
				if sv, ok := v.(string); ok && strings.TrimSpace(sv) != "" {
					values[k] = strings.TrimSpace(sv)
				}
			}
		}
		var missing []any
		for _, sl := range slots {
			if _, ok := values[sl]; !ok {
				missing = append(missing, sl)
			}
		}
		saved := getStr(p, "mode") != "ANALYZE_ONLY"
		if saved {
			if s.kyc[subject] == nil {
				s.kyc[subject] = map[string]any{}
			}
			maps.Copy(s.kyc[subject], values)
		}
		return map[string]any{"status": "SUCCEEDED", "document_id": docID, "subject_ref": subject, "profile_kind": "KYC",
			"provider": getStr(p, "provider"), "values": values, "missing_slots": nonNil(missing), "saved": saved}, nil
	case "identity.profile.read.v1":
		values := map[string]any{}
		var missing []any
		for _, sl := range slots {
			if v, ok := s.kyc[subject][sl]; ok {
				values[sl] = v
			} else {
				missing = append(missing, sl)
			}
		}
		return map[string]any{"status": "SUCCEEDED", "subject_ref": subject, "profile_kind": "KYC", "values": values, "missing_slots": nonNil(missing)}, nil
	}
	return nil, errf(400, "INVALID_ARGUMENT", "unsupported identity verb %s", verb)
}

func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

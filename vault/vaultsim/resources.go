package vaultsim

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/ident"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// E1
func (s *Sim) handleListConnectors(c *call) (int, any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []any
	for _, id := range slices.Sorted(maps.Keys(s.connectors)) {
		items = append(items, s.connectors[id].summary())
	}
	return 200, map[string]any{"items": items}, nil
}

// E2
func (s *Sim) handleGetConnector(c *call) (int, any, *apiError) {
	id := strings.TrimPrefix(c.r.URL.Path, "/v0/connectors/")
	if raw := c.r.URL.RawPath; raw != "" {
		if u, err := url.PathUnescape(strings.TrimPrefix(raw, "/v0/connectors/")); err == nil {
			id = u
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, ok := s.connectors[id]
	if !ok {
		return 0, nil, errf(404, "CONNECTOR_NOT_FOUND", "connector %s not found", id).with("connector_id", id)
	}
	return 200, conn.detail(), nil
}

// DocType is a document type of the simulated document store.
type DocType struct {
	TypeID      string
	DisplayName string
	Aliases     []string
}

// Document is a stored document. Fields are what extraction yields.
type Document struct {
	DocumentID  string
	TypeID      string
	SubjectID   string
	Filename    string
	ContentType string
	Fields      map[string]string
	// FailExtraction, when set, makes identity extraction of this document
	// fail with that Vault error code (an unreadable scan).
	FailExtraction string
	CreatedAt      time.Time
	seq            int64
}

func defaultDocTypes() []DocType {
	return []DocType{
		{"identity.passport", "Passport", []string{"travel document", "passport copy"}},
		{"identity.drivers_license", "Driver's License", []string{"driving licence", "driver license", "drivers license"}},
		{"identity.national_id", "National ID Card", []string{"id card", "identity card"}},
		{"identity.residence_permit", "Residence Permit", []string{"green card", "visa"}},
		{"finance.bank_statement", "Bank Statement", []string{"account statement"}},
		{"finance.pay_stub", "Pay Stub", []string{"payslip", "salary slip"}},
		{"tax.w2", "W-2 Wage Statement", []string{"w2", "tax form"}},
		{"utility.bill", "Utility Bill", []string{"proof of address", "electricity bill"}},
		{"health.insurance_card", "Health Insurance Card", []string{"insurance card"}},
		{"education.diploma", "Diploma", []string{"degree certificate"}},
	}
}

// AddDocument stores a document (an id is generated when blank) and
// returns its id.
func (s *Sim) AddDocument(d Document) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.DocumentID == "" {
		d.DocumentID = s.newID("doc_")
	}
	if d.SubjectID == "" {
		d.SubjectID = "self"
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = s.now().UTC()
	}
	d.seq = s.nextSeq()
	s.documents = append(s.documents, &d)
	return d.DocumentID
}

// RemoveDocument deletes a document by id; it reports whether it existed.
func (s *Sim) RemoveDocument(documentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range s.documents {
		if d.DocumentID == documentID {
			s.documents = append(s.documents[:i], s.documents[i+1:]...)
			return true
		}
	}
	return false
}

// RemoveDocuments deletes every document of a type and subject ("" = any).
func (s *Sim) RemoveDocuments(typeID, subjectID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept, n := s.documents[:0], 0
	for _, d := range s.documents {
		if (typeID == "" || d.TypeID == typeID) && (subjectID == "" || d.SubjectID == subjectID) {
			n++
			continue
		}
		kept = append(kept, d)
	}
	s.documents = kept
	return n
}

// Documents lists stored documents, oldest first.
func (s *Sim) Documents() []Document {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Document, len(s.documents))
	for i, d := range s.documents {
		out[i] = *d
	}
	return out
}

func (s *Sim) latestDocLocked(typeID, subject string) *Document {
	var best *Document
	for _, d := range s.documents {
		if d.TypeID == typeID && d.SubjectID == subject && (best == nil || d.seq > best.seq) {
			best = d
		}
	}
	return best
}

var wordRE = regexp.MustCompile(`[a-z0-9]+`)

// E11: scores each type: +60 when a query word equals a type-id token,
// +20 when it appears in the display name, +40 for an alias phrase.
func (s *Sim) handleDocSuggest(c *call) (int, any, *apiError) {
	query := strings.ToLower(getStr(c.body, "query"))
	if query == "" {
		return 0, nil, invalid("request failed validation", []FieldError{{Path: "/query", Code: FieldRequired, Message: "query is required", Expected: "string", Actual: "missing"}})
	}
	topK := 5
	if f, ok := c.body["top_k"].(float64); ok && f >= 1 {
		topK = int(f)
	}
	if topK > 50 {
		topK = 50
	}
	words := map[string]bool{}
	for _, w := range wordRE.FindAllString(query, -1) {
		words[w] = true
	}
	type hit struct {
		t       DocType
		score   int
		reasons []any
	}
	var hits []hit
	s.mu.Lock()
	types := append([]DocType(nil), s.docTypes...)
	s.mu.Unlock()
	for _, t := range types {
		h := hit{t: t}
		for _, tok := range wordRE.FindAllString(strings.ToLower(strings.ReplaceAll(t.TypeID, "_", " ")), -1) {
			if words[tok] {
				h.score += 60
				h.reasons = append(h.reasons, "type_token_match")
				break
			}
		}
		for _, tok := range wordRE.FindAllString(strings.ToLower(t.DisplayName), -1) {
			if words[tok] {
				h.score += 20
				h.reasons = append(h.reasons, "display_name_match")
				break
			}
		}
		for _, a := range t.Aliases {
			if strings.Contains(query, a) {
				h.score += 40
				h.reasons = append(h.reasons, "alias_match")
				break
			}
		}
		if h.score > 100 {
			h.score = 100
		}
		if h.score > 0 {
			hits = append(hits, h)
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].t.TypeID < hits[j].t.TypeID
	})
	if len(hits) > topK {
		hits = hits[:topK]
	}
	out := make([]any, len(hits))
	for i, h := range hits {
		out[i] = map[string]any{"type_id": h.t.TypeID, "display_name": h.t.DisplayName, "score": h.score, "reasons": h.reasons}
	}
	return 200, map[string]any{"suggestions": out}, nil
}

// E12
func (s *Sim) handleDocLatest(c *call) (int, any, *apiError) {
	q := c.r.URL.Query()
	typeID, subject := strings.TrimSpace(q.Get("type_id")), strings.TrimSpace(q.Get("subject_id"))
	if typeID == "" {
		return 0, nil, invalid("invalid query", []FieldError{{Path: "/type_id", Code: FieldRequired, Message: "type_id is required", Expected: "string", Actual: "missing"}})
	}
	if subject == "" {
		subject = "self"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	known := false
	for _, t := range s.docTypes {
		known = known || t.TypeID == typeID
	}
	if !known {
		return 0, nil, errf(404, "NOT_FOUND", "unknown document type %s", typeID).with("type_id", typeID)
	}
	d := s.latestDocLocked(typeID, subject)
	if d == nil {
		return 0, nil, errf(409, "DOCUMENT_SLOT_UNRESOLVED", "no %s document on file for %s", typeID, subject).with("type_id", typeID).with("subject_id", subject)
	}
	item := map[string]any{"document_id": d.DocumentID, "type_id": d.TypeID, "subject_id": d.SubjectID, "filename": d.Filename,
		"content_type": d.ContentType, "created_at": d.CreatedAt.Format(time.RFC3339)}
	return 200, map[string]any{"type_id": typeID, "subject_id": subject, "document_id": d.DocumentID, "item": item}, nil
}

// Secrets, slot bindings

type binding struct {
	ID, ConnectorID, Verb, Slot, SecretID string
	Revoked                               bool
	CreatedAt, RevokedAt                  time.Time
}

func (b *binding) json() map[string]any {
	st := "ACTIVE"
	if b.Revoked {
		st = "REVOKED"
	}
	out := map[string]any{"binding_id": b.ID, "connector_id": b.ConnectorID, "verb": b.Verb, "slot": b.Slot, "secret_id": b.SecretID,
		"state": st, "created_at": b.CreatedAt.Format(time.RFC3339Nano)}
	if b.Revoked {
		out["revoked_at"] = b.RevokedAt.Format(time.RFC3339Nano)
	}
	return out
}

// PutSecret stores a secret value (values never leave the simulator).
func (s *Sim) PutSecret(secretID, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[secretID] = value
}

// E13
func (s *Sim) handleBindings(c *call) (int, any, *apiError) {
	q := c.r.URL.Query()
	connector, verb := strings.TrimSpace(q.Get("connector_id")), strings.TrimSpace(q.Get("verb"))
	var errs []FieldError
	if connector == "" {
		errs = append(errs, FieldError{Path: "/connector_id", Code: FieldRequired, Message: "connector_id is required", Expected: "string", Actual: "missing"})
	}
	if verb == "" {
		errs = append(errs, FieldError{Path: "/verb", Code: FieldRequired, Message: "verb is required", Expected: "string", Actual: "missing"})
	}
	if len(errs) > 0 {
		return 0, nil, invalid("invalid query", errs)
	}
	withRevoked := q.Get("include_revoked") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []any{}
	for _, b := range s.bindings {
		if b.ConnectorID == connector && b.Verb == verb && (withRevoked || !b.Revoked) {
			items = append(items, b.json())
		}
	}
	return 200, map[string]any{"items": items}, nil
}

// E14
func (s *Sim) handleBind(c *call) (int, any, *apiError) {
	var errs []FieldError
	validate(obj(map[string]any{"connector_id": nonEmpty(), "verb": nonEmpty(), "slot": nonEmpty(), "secret_id": nonEmpty()}, "connector_id", "verb", "slot", "secret_id"), c.body, "", &errs)
	if len(errs) > 0 {
		return 0, nil, invalid("request failed validation", errs)
	}
	connector, verbName, slot, secret := getStr(c.body, "connector_id"), getStr(c.body, "verb"), getStr(c.body, "slot"), getStr(c.body, "secret_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, ok := s.connectors[connector]
	if !ok {
		return 0, nil, invalid("request failed validation", []FieldError{{Path: "/connector_id", Code: "UNKNOWN_CONNECTOR", Message: "connector_id names no connector", Expected: "known connector", Actual: connector}})
	}
	verb, ok := conn.verb(verbName)
	if !ok {
		return 0, nil, invalid("request failed validation", []FieldError{{Path: "/verb", Code: "UNKNOWN_VERB", Message: "verb is not defined by connector " + connector, Expected: "known verb", Actual: verbName}})
	}
	if len(verb.Slots) > 0 && !slices.Contains(verb.Slots, slot) {
		return 0, nil, errf(400, "SECRET_SLOT_NOT_DEFINED", "verb %s defines no slot %s", verb.Name, slot).with("slot", slot).with("defined_slots", verb.Slots)
	}
	if _, ok := s.secrets[secret]; !ok {
		return 0, nil, errf(400, "SECRET_SLOT_BINDING_INVALID", "secret %s does not exist", secret).with("secret_id", secret)
	}
	now := s.now().UTC()
	replaced := ""
	for _, b := range s.bindings {
		if !b.Revoked && b.ConnectorID == conn.ID && b.Verb == verb.Name && b.Slot == slot {
			if b.SecretID == secret {
				return 200, map[string]any{"binding": b.json(), "created": false}, nil
			}
			b.Revoked, b.RevokedAt, replaced = true, now, b.ID
		}
	}
	b := &binding{ID: s.newID("sb_"), ConnectorID: conn.ID, Verb: verb.Name, Slot: slot, SecretID: secret, CreatedAt: now}
	s.bindings = append(s.bindings, b)
	out := map[string]any{"binding": b.json(), "created": true}
	if replaced != "" {
		out["replaced_binding_id"] = replaced
	}
	return 200, out, nil
}

// Unbounded profiles

const profileType = "connector.unbounded.profile.v1"

var profileIDRE = ident.ID

var profileSchema = obj(map[string]any{
	"type": enum(profileType), "profile_id": nonEmpty(), "connector_id": enum("generic.http"), "verb": enum("generic.http.request.v1"),
	"description": str(), "display_name": str(),
	"slots": schema{"type": "array", "minItems": 1.0, "items": obj(map[string]any{
		"slot": nonEmpty(), "required": boolean(), "allowed_intents": strArray(), "expected_secret_types": strArray(),
		"allowed_modes": schema{"type": "array", "items": enum("read", "write")}, "allowed_targets": schema{"type": "array", "items": schema{"type": "string", "format": "uri"}},
	}, "slot")},
}, "type", "profile_id", "connector_id", "verb", "slots")

// E15
func (s *Sim) handleProfilesList(c *call) (int, any, *apiError) {
	q := c.r.URL.Query()
	withRevoked := q.Get("include_revoked") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []any{}
	for _, id := range slices.Sorted(maps.Keys(s.profiles)) {
		rec := s.profiles[id]
		p := getMap(rec, "profile")
		if v := strings.TrimSpace(q.Get("connector_id")); v != "" && v != getStr(p, "connector_id") {
			continue
		}
		if v := strings.TrimSpace(q.Get("verb")); v != "" && v != getStr(p, "verb") {
			continue
		}
		if !withRevoked && getStr(rec, "state") == "REVOKED" {
			continue
		}
		items = append(items, map[string]any{"profile_id": id, "connector_id": getStr(p, "connector_id"), "verb": getStr(p, "verb"),
			"state": rec["state"], "version": rec["version"], "updated_at": rec["updated_at"]})
	}
	return 200, map[string]any{"items": items}, nil
}

// E16
func (s *Sim) handleProfileGet(c *call) (int, any, *apiError) {
	id := strings.TrimSpace(c.r.URL.Query().Get("profile_id"))
	if id == "" {
		return 0, nil, invalid("invalid query", []FieldError{{Path: "/profile_id", Code: FieldRequired, Message: "profile_id is required", Expected: "string", Actual: "missing"}})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.profiles[id]
	if !ok {
		return 0, nil, errf(404, "UNBOUNDED_PROFILE_NOT_FOUND", "unbounded profile %s not found", id).with("profile_id", id)
	}
	return 200, copyMap(rec), nil
}

// E17
func (s *Sim) handleProfileUpsert(c *call) (int, any, *apiError) {
	p := getMap(c.body, "profile")
	var errs []FieldError
	if p == nil {
		errs = append(errs, FieldError{Path: "/profile", Code: FieldRequired, Message: "profile object is required", Expected: "object", Actual: jsonscan.Type(c.body["profile"])})
	} else {
		validate(profileSchema, p, "/profile", &errs)
		if id := getStr(p, "profile_id"); id != "" && !profileIDRE.Valid(id) {
			errs = append(errs, FieldError{Path: "/profile/profile_id", Code: FieldFormatInvalid, Message: "profile_id must match " + profileIDRE.String(), Expected: "id", Actual: id})
		}
		seen := map[string]bool{}
		slots, _ := p["slots"].([]any)
		for i, sl := range slots {
			name := getStr(getMapAny(sl), "slot")
			if name != "" && seen[name] {
				errs = append(errs, FieldError{Path: "/profile/slots/" + itoa(i) + "/slot", Code: "DUPLICATE", Message: "slot names must be unique", Expected: "unique", Actual: name})
			}
			seen[name] = true
		}
	}
	if len(errs) > 0 {
		return 0, nil, invalid("profile failed validation", errs)
	}
	id := getStr(p, "profile_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, exists := s.profiles[id]
	version := 1
	if exists {
		if f, ok := prev["version"].(int); ok {
			version = f + 1
		}
	}
	rec := map[string]any{"profile": copyMap(p), "state": "ACTIVE", "version": version, "updated_at": s.now().UTC().Format(time.RFC3339Nano)}
	s.profiles[id] = rec
	out := copyMap(rec)
	out["created"] = !exists
	return 200, out, nil
}

// KYC returns the identity profile values of a subject.
func (s *Sim) KYC(subject string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyMap(s.kyc[subject])
}

func getMapAny(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func itoa(i int) string { return strconv.Itoa(i) }

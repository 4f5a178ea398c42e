package vaultsim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// MailMessage is one message in the simulated Gmail mailbox.
type MailMessage struct {
	ID          string           `json:"id"`
	ThreadID    string           `json:"thread_id"`
	From        string           `json:"from"`
	To          []string         `json:"to"`
	Cc          []string         `json:"cc,omitempty"`
	Bcc         []string         `json:"bcc,omitempty"`
	Subject     string           `json:"subject"`
	TextPlain   string           `json:"text_plain,omitempty"`
	TextHTML    string           `json:"text_html,omitempty"`
	LabelIDs    []string         `json:"label_ids"`
	Attachments []map[string]any `json:"attachments,omitempty"`
	Date        time.Time        `json:"date"`
}

// MailDraft is an unsent draft.
type MailDraft struct {
	ID      string      `json:"id"`
	Message MailMessage `json:"message"`
}

type mailbox struct {
	seq      int
	messages map[string]*MailMessage
	drafts   map[string]*MailDraft
	labels   []map[string]any
}

const mailUser = "me@vaultsim.local"

func newMailbox() *mailbox {
	mb := &mailbox{messages: map[string]*MailMessage{}, drafts: map[string]*MailDraft{}}
	for _, l := range []string{"INBOX", "SENT", "DRAFT", "TRASH", "SPAM", "UNREAD", "STARRED", "IMPORTANT"} {
		mb.labels = append(mb.labels, map[string]any{"id": l, "name": l, "type": "system"})
	}
	mb.labels = append(mb.labels, map[string]any{"id": "Label_TRIAGED", "name": "Triaged", "type": "user"},
		map[string]any{"id": "Label_REVIEW", "name": "Review", "type": "user"})
	base := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	seed := []MailMessage{
		{From: "alice@example.com", Subject: "Quarterly report", TextPlain: "Hi, the Q4 report is attached for review.", LabelIDs: []string{"INBOX", "UNREAD", "IMPORTANT"}},
		{From: "ops@example.com", Subject: "Deploy finished", TextPlain: "The deploy of build 412 finished without errors.", LabelIDs: []string{"INBOX"}},
		{From: "newsletter@example.org", Subject: "This week in Go", TextPlain: "Generics, iterators and more.", LabelIDs: []string{"INBOX", "UNREAD"}},
	}
	for i, m := range seed {
		mb.seq++
		m.ID = fmt.Sprintf("msg_%03d", mb.seq)
		m.ThreadID = fmt.Sprintf("thr_%03d", mb.seq)
		m.To = []string{mailUser}
		m.Date = base.Add(time.Duration(i) * time.Hour)
		mb.messages[m.ID] = &m
	}
	return mb
}

func (mb *mailbox) nextID(prefix string) string {
	mb.seq++
	return fmt.Sprintf("%s_%03d", prefix, mb.seq)
}

func addrs(v any) []string { return strList(v) }

func (mb *mailbox) list(label string) []*MailMessage {
	out := make([]*MailMessage, 0, len(mb.messages))
	for _, m := range mb.messages {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Date.Equal(out[j].Date) {
			return out[i].Date.After(out[j].Date)
		}
		return out[i].ID > out[j].ID
	})
	return out
}

func hasLabel(m *MailMessage, l string) bool {
	l = strings.TrimSpace(l)
	return slices.ContainsFunc(m.LabelIDs, func(x string) bool { return strings.EqualFold(x, l) })
}

func setLabels(m *MailMessage, add, remove []string) {
	for _, r := range remove {
		for i := 0; i < len(m.LabelIDs); i++ {
			if strings.EqualFold(m.LabelIDs[i], r) {
				m.LabelIDs = append(m.LabelIDs[:i], m.LabelIDs[i+1:]...)
				i--
			}
		}
	}
	for _, a := range add {
		if !hasLabel(m, a) {
			m.LabelIDs = append(m.LabelIDs, a)
		}
	}
}

// matchAST evaluates a query_ast_v1 node against a message.
func matchAST(node map[string]any, m *MailMessage) bool {
	if pred := getMap(node, "pred"); len(pred) > 0 {
		field, op := getStr(pred, "field"), getStr(pred, "op")
		val := pred["value"]
		sval := ""
		switch v := val.(type) {
		case string:
			sval = v
		case map[string]any:
			sval = getStr(v, "enum")
			if sval == "" {
				sval = getStr(v, "value")
			}
		case bool:
			sval = fmt.Sprint(v)
		}
		has := func(hay string) bool {
			if op == "contains" {
				return strings.Contains(strings.ToLower(hay), strings.ToLower(sval))
			}
			return strings.EqualFold(hay, sval)
		}
		switch field {
		case "label":
			return hasLabel(m, sval)
		case "from":
			return has(m.From)
		case "to":
			return slices.ContainsFunc(m.To, has)
		case "subject":
			return has(m.Subject)
		case "text":
			return has(m.Subject + "\n" + m.TextPlain)
		case "is_unread":
			return hasLabel(m, "UNREAD") == (sval != "false")
		case "has_attachment":
			return (len(m.Attachments) > 0) == (sval != "false")
		case "after", "before":
			t, err := time.Parse("2006-01-02", sval)
			if err != nil {
				return false
			}
			if field == "after" {
				return m.Date.After(t)
			}
			return m.Date.Before(t)
		}
		return false
	}
	b := getMap(node, "bool")
	args, _ := b["args"].([]any)
	switch getStr(b, "op") {
	case "and":
		for _, a := range args {
			if n, ok := a.(map[string]any); !ok || !matchAST(n, m) {
				return false
			}
		}
		return true
	case "or":
		for _, a := range args {
			if n, ok := a.(map[string]any); ok && matchAST(n, m) {
				return true
			}
		}
		return false
	case "not":
		for _, a := range args {
			if n, ok := a.(map[string]any); ok && matchAST(n, m) {
				return false
			}
		}
		return true
	}
	return false
}

func msgSummary(m *MailMessage) map[string]any {
	snippet := m.TextPlain
	if len(snippet) > 80 {
		snippet = snippet[:80]
	}
	return map[string]any{"id": m.ID, "message_id": m.ID, "thread_id": m.ThreadID, "from": m.From, "to": m.To, "subject": m.Subject,
		"snippet": snippet, "label_ids": m.LabelIDs, "date": m.Date.UTC().Format(time.RFC3339)}
}

func msgFull(m *MailMessage, format string) map[string]any {
	out := msgSummary(m)
	if m.Cc != nil {
		out["cc"] = m.Cc
	}
	if format != "metadata" && format != "minimal" {
		out["text_plain"] = m.TextPlain
		out["text_html"] = m.TextHTML
		if len(m.Attachments) > 0 {
			out["attachments"] = m.Attachments
		}
	}
	return out
}

// composeLocked builds a message from a send/draft payload, resolving
// document attachments against the document store.
func (s *Sim) composeLocked(p map[string]any) (MailMessage, *apiError) {
	m := MailMessage{From: mailUser, To: addrs(p["to"]), Cc: addrs(p["cc"]), Bcc: addrs(p["bcc"]), Subject: getStr(p, "subject"),
		TextPlain: getStr(p, "text_plain"), TextHTML: getStr(p, "text_html"), ThreadID: getStr(p, "thread_id"), Date: s.now().UTC()}
	atts, _ := p["document_attachments"].([]any)
	for i, a := range atts {
		am, _ := a.(map[string]any)
		typeID := getStr(am, "type_id")
		doc := s.latestDocLocked(typeID, "self")
		if doc == nil {
			return m, errf(409, "DOCUMENT_SLOT_UNRESOLVED", "no %s document on file for self (document_attachments[%d])", typeID, i).with("type_id", typeID).with("subject_id", "self")
		}
		filename := getStr(am, "filename")
		if filename == "" {
			filename = doc.Filename
		}
		ct := getStr(am, "content_type")
		if ct == "" {
			ct = doc.ContentType
		}
		m.Attachments = append(m.Attachments, map[string]any{"type_id": typeID, "document_id": doc.DocumentID, "filename": filename, "content_type": ct})
	}
	return m, nil
}

// gmailVerb runs one google.gmail.* verb; s.mu is held.
type gmailVerb func(s *Sim, verb string, p, ast map[string]any) (map[string]any, *apiError)

// gmailVerbs are the canonical Gmail verbs the simulator runs.
var gmailVerbs = map[string]gmailVerb{
	"google.gmail.send.v1":              (*Sim).gmailSend,
	"google.gmail.drafts.create":        (*Sim).gmailDraftCreate,
	"google.gmail.drafts.send":          (*Sim).gmailDraftSend,
	"google.gmail.messages.list":        (*Sim).gmailList,
	"google.gmail.messages.get":         (*Sim).gmailGet,
	"google.gmail.messages.get_content": (*Sim).gmailGetContent,
	"google.gmail.messages.modify":      (*Sim).gmailModify,
	"google.gmail.messages.trash":       (*Sim).gmailModify,
	"google.gmail.messages.untrash":     (*Sim).gmailModify,
	"google.gmail.labels.list":          (*Sim).gmailLabels,
	"google.gmail.thread.get.v1":        (*Sim).gmailThread,
	"google.gmail.thread.modify.v1":     (*Sim).gmailThread,
}

// runGmail handles google.gmail.* verbs; s.mu is held.
func (s *Sim) runGmail(verb string, p map[string]any, ast map[string]any) (map[string]any, *apiError) {
	if run, ok := gmailVerbs[verb]; ok {
		return run(s, verb, p, ast)
	}
	return nil, errf(400, "INVALID_ARGUMENT", "unsupported gmail verb %s", verb)
}

// messageLocked is the message named by the payload's message_id.
func (s *Sim) messageLocked(p map[string]any) (*MailMessage, *apiError) {
	id := getStr(p, "message_id")
	m, ok := s.mailbox.messages[id]
	if !ok {
		return nil, errf(404, "NOT_FOUND", "message %s not found", id).with("message_id", id)
	}
	return m, nil
}

// sendLocked stores m as sent, in a new thread unless it names one.
func (s *Sim) sendLocked(m MailMessage) map[string]any {
	mb := s.mailbox
	m.ID = mb.nextID("msg")
	if m.ThreadID == "" {
		m.ThreadID = mb.nextID("thr")
	}
	m.LabelIDs = []string{"SENT"}
	m.Date = s.now().UTC()
	mb.messages[m.ID] = &m
	return map[string]any{"status": "SENT", "message_id": m.ID, "thread_id": m.ThreadID, "label_ids": m.LabelIDs, "to": m.To, "attachments": len(m.Attachments)}
}

func (s *Sim) gmailSend(_ string, p, _ map[string]any) (map[string]any, *apiError) {
	m, err := s.composeLocked(p)
	if err != nil {
		return nil, err
	}
	return s.sendLocked(m), nil
}

func (s *Sim) gmailDraftCreate(_ string, p, _ map[string]any) (map[string]any, *apiError) {
	m, err := s.composeLocked(p)
	if err != nil {
		return nil, err
	}
	mb := s.mailbox
	d := &MailDraft{ID: mb.nextID("draft"), Message: m}
	d.Message.LabelIDs = []string{"DRAFT"}
	mb.drafts[d.ID] = d
	return map[string]any{"status": "CREATED", "draft_id": d.ID, "to": m.To, "subject": m.Subject, "attachments": len(m.Attachments)}, nil
}

func (s *Sim) gmailDraftSend(_ string, p, _ map[string]any) (map[string]any, *apiError) {
	id := getStr(p, "draft_id")
	d, ok := s.mailbox.drafts[id]
	if !ok {
		return nil, errf(404, "NOT_FOUND", "draft %s not found", id).with("draft_id", id)
	}
	delete(s.mailbox.drafts, id)
	out := s.sendLocked(d.Message)
	out["draft_id"] = id
	return out, nil
}

func (s *Sim) gmailList(_ string, p, ast map[string]any) (map[string]any, *apiError) {
	limit := 25
	if f, ok := p["page_limit"].(float64); ok && f > 0 {
		limit = int(f)
	}
	includeTrash, _ := p["include_spam_trash"].(bool)
	var items []any
	for _, m := range s.mailbox.list("") {
		if !includeTrash && (hasLabel(m, "TRASH") || hasLabel(m, "SPAM")) {
			continue
		}
		if ast != nil && !matchAST(ast, m) {
			continue
		}
		items = append(items, msgSummary(m))
	}
	total := len(items)
	if len(items) > limit {
		items = items[:limit]
	}
	return map[string]any{"messages": nonNil(items), "result_size_estimate": total}, nil
}

func (s *Sim) gmailGet(_ string, p, _ map[string]any) (map[string]any, *apiError) {
	m, err := s.messageLocked(p)
	if err != nil {
		return nil, err
	}
	return map[string]any{"message": msgFull(m, getStr(p, "format"))}, nil
}

func (s *Sim) gmailGetContent(_ string, p, _ map[string]any) (map[string]any, *apiError) {
	m, err := s.messageLocked(p)
	if err != nil {
		return nil, err
	}
	return map[string]any{"message_id": m.ID, "subject": m.Subject, "text_plain": m.TextPlain, "text_html": m.TextHTML}, nil
}

// gmailModify changes one message's labels: trash and untrash move it
// between TRASH and INBOX, modify applies the payload's lists.
func (s *Sim) gmailModify(verb string, p, _ map[string]any) (map[string]any, *apiError) {
	m, err := s.messageLocked(p)
	if err != nil {
		return nil, err
	}
	switch verb {
	case "google.gmail.messages.trash":
		setLabels(m, []string{"TRASH"}, []string{"INBOX"})
	case "google.gmail.messages.untrash":
		setLabels(m, []string{"INBOX"}, []string{"TRASH"})
	default:
		setLabels(m, strList(p["add_label_ids"]), strList(p["remove_label_ids"]))
	}
	return map[string]any{"message_id": m.ID, "label_ids": m.LabelIDs}, nil
}

func (s *Sim) gmailLabels(_ string, _, _ map[string]any) (map[string]any, *apiError) {
	out := make([]any, len(s.mailbox.labels))
	for i, l := range s.mailbox.labels {
		out[i] = l
	}
	return map[string]any{"labels": out}, nil
}

// gmailThread returns a thread's messages, relabelling each first for
// thread.modify.
func (s *Sim) gmailThread(verb string, p, _ map[string]any) (map[string]any, *apiError) {
	tid := getStr(p, "thread_id")
	var msgs []any
	for _, m := range s.mailbox.list("") {
		if m.ThreadID != tid {
			continue
		}
		if verb == "google.gmail.thread.modify.v1" {
			setLabels(m, strList(p["add_label_ids"]), strList(p["remove_label_ids"]))
		}
		msgs = append(msgs, msgSummary(m))
	}
	if len(msgs) == 0 {
		return nil, errf(404, "NOT_FOUND", "thread %s not found", tid).with("thread_id", tid)
	}
	return map[string]any{"thread": map[string]any{"id": tid, "messages": msgs}}, nil
}

// SentMessages returns the messages the simulated Gmail sent, oldest first.
func (s *Sim) SentMessages() []MailMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MailMessage
	for _, m := range s.mailbox.messages {
		if hasLabel(m, "SENT") {
			out = append(out, *m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Drafts returns the unsent drafts.
func (s *Sim) Drafts() []MailDraft {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MailDraft
	for _, d := range s.mailbox.drafts {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

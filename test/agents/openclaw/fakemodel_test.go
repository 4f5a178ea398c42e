//go:build agents

package openclaw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The two accords-mcp tools the fake model asks for, in this order.
const (
	statusTool  = "vaultclaw_session_status"
	searchTool  = "vaultclaw_recipes_search"
	searchQuery = "send email"
)

// fakeModel is an OpenAI-compatible chat-completions endpoint (the
// "openai-completions" adapter OpenClaw uses for a custom provider). It is
// a scripted model, not a canned reply: every request is answered from the
// conversation it carries. Without a result for the status tool it asks for
// that tool; then for the search; with both results it answers in text that
// quotes the search's first hit, so the reply proves the results came back.
// It records every request for the test's assertions.
type fakeModel struct {
	apiKey string

	mu       sync.Mutex
	requests []recordedRequest
	problems []string
}

type recordedRequest struct {
	body []byte
	req  chatRequest
	// offered is the exposed name of each wanted tool ("" when absent);
	// OpenClaw prefixes MCP tools with the server name.
	offered map[string]string
	// results maps a wanted tool to the text of its tool-result message.
	results map[string]string
}

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []toolCall      `json:"tool_calls,omitempty"`
}

type toolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// reply is what the model says next: tool calls or text.
type reply struct {
	calls []toolCall
	text  string
}

func newFakeModel(apiKey string) *fakeModel { return &fakeModel{apiKey: apiKey} }

func (m *fakeModel) problem(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		m.problem("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+m.apiKey {
		m.problem("request without the provider's API key (Authorization %q)", got)
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		m.problem("read body: %v", err)
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	rec := recordedRequest{body: body, offered: map[string]string{}}
	if err := json.Unmarshal(body, &rec.req); err != nil {
		m.problem("request is not a chat-completions body: %v", err)
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	for _, want := range []string{statusTool, searchTool} {
		rec.offered[want] = offeredName(rec.req, want)
	}
	rec.results = toolResults(rec.req.Messages, rec.offered)
	next := m.decide(rec)

	m.mu.Lock()
	m.requests = append(m.requests, rec)
	m.mu.Unlock()

	if rec.req.Stream {
		writeStream(w, rec.req.Model, next)
	} else {
		writeJSON(w, rec.req.Model, next)
	}
}

// decide is the script: status, then search, then text.
func (m *fakeModel) decide(rec recordedRequest) reply {
	for _, want := range []string{statusTool, searchTool} {
		if rec.offered[want] == "" {
			m.problem("request %d did not offer a tool named %s or <server>__%s", len(m.requests)+1, want, want)
			return reply{text: "accords-mcp tools are missing from this request."}
		}
	}
	switch {
	case rec.results[statusTool] == "":
		return reply{calls: []toolCall{newCall("call_accords_status", rec.offered[statusTool], `{}`)}}
	case rec.results[searchTool] == "":
		args, _ := json.Marshal(map[string]string{"query": searchQuery})
		return reply{calls: []toolCall{newCall("call_accords_search", rec.offered[searchTool], string(args))}}
	default:
		return reply{text: "Vaultclaw session checked; best recipe for \"" + searchQuery + "\": " + firstHitTitle(rec.results[searchTool])}
	}
}

func newCall(id, name, args string) toolCall {
	c := toolCall{ID: id, Type: "function"}
	c.Function.Name = name
	c.Function.Arguments = args
	return c
}

// offeredName finds want among the request's tools, bare or with a server
// prefix ("accords__vaultclaw_session_status").
func offeredName(req chatRequest, want string) string {
	for _, t := range req.Tools {
		if n := t.Function.Name; n == want || strings.HasSuffix(n, "__"+want) {
			return n
		}
	}
	return ""
}

// toolResults pairs each tool-result message with the assistant tool call
// it answers, by call id, and keeps those of the wanted tools. Pairing by
// id rather than trusting our own ids survives a runtime that rewrites them.
func toolResults(msgs []chatMessage, offered map[string]string) map[string]string {
	byID := map[string]string{}
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			byID[c.ID] = c.Function.Name
		}
	}
	out := map[string]string{}
	for _, msg := range msgs {
		if msg.Role != "tool" {
			continue
		}
		name := byID[msg.ToolCallID]
		for want, exposed := range offered {
			if exposed != "" && name == exposed {
				out[want] = contentText(msg.Content)
			}
		}
	}
	return out
}

// contentText flattens a message's content, a string or a list of parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// firstHitTitle reads the search envelope the model was given; an
// unreadable one yields a marker the test's assertion will not accept.
func firstHitTitle(result string) string {
	env, err := decodeEnvelope(result)
	if err != nil {
		return "(unreadable search result)"
	}
	var data struct {
		Items []struct {
			Title string `json:"title"`
		} `json:"items"`
	}
	if json.Unmarshal(env.Data, &data) != nil || len(data.Items) == 0 {
		return "(no hits)"
	}
	return data.Items[0].Title
}

// envelope is accords-mcp's tool result as the model sees it.
type envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data"`
	Error json.RawMessage `json:"error"`
	Meta  json.RawMessage `json:"meta"`
}

// decodeEnvelope reads the envelope from a tool result's text: its first
// JSON object. OpenClaw 2026.9 frames an MCP result as "structuredContent:"
// and the structured result, pretty-printed, followed by the text content.
func decodeEnvelope(text string) (envelope, error) {
	var env envelope
	i := strings.Index(text, "{")
	if i < 0 {
		return env, fmt.Errorf("no JSON object in tool result %q", text)
	}
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	if err := dec.Decode(&env); err != nil {
		return env, fmt.Errorf("tool result is not an envelope: %w (%.300q)", err, text)
	}
	if env.Data == nil && env.Error == nil {
		return env, fmt.Errorf("tool result has neither data nor error: %.300q", text)
	}
	return env, nil
}

func (m *fakeModel) snapshot() ([]recordedRequest, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]recordedRequest(nil), m.requests...), append([]string(nil), m.problems...)
}

// writeStream answers in server-sent events the way the chat-completions
// API streams: a role delta, the content or tool-call deltas, a finish
// chunk, a usage chunk (OpenClaw asks for include_usage), then [DONE].
func writeStream(w http.ResponseWriter, model string, next reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	id := fmt.Sprintf("chatcmpl-fake-%d", time.Now().UnixNano())
	send := func(choices any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		var buf bytes.Buffer
		buf.WriteString("data: ")
		_ = json.NewEncoder(&buf).Encode(chunk)
		buf.WriteString("\n")
		_, _ = w.Write(buf.Bytes())
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	finish := "stop"
	if len(next.calls) > 0 {
		finish = "tool_calls"
		for i, c := range next.calls {
			c.Index = i
			send(delta(map[string]any{"tool_calls": []toolCall{c}}, nil), nil)
		}
	} else {
		send(delta(map[string]any{"content": next.text}, nil), nil)
	}
	send(delta(map[string]any{}, finish), nil)
	send([]any{}, map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// writeJSON answers a non-streaming request with one chat.completion.
func writeJSON(w http.ResponseWriter, model string, next reply) {
	msg := map[string]any{"role": "assistant", "content": next.text}
	finish := "stop"
	if len(next.calls) > 0 {
		msg["content"] = nil
		msg["tool_calls"] = next.calls
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-fake-%d", time.Now().UnixNano()), "object": "chat.completion",
		"created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
}

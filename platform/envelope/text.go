package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The text content item of a tool result is what the model reads; the
// envelope itself goes to clients as structuredContent, unchanged. Text
// derives from the envelope alone (D22), so any client can check it:
//
//   - success: the data as compact JSON without empty values (null, "",
//     [] and {} are dropped, at every depth), then one "warnings:" line
//     when meta.warnings has any; "ok" when nothing is left;
//   - failure: "<code>: <message>" (the message ends with the next step),
//     " (retryable)" after the code when retryable, then "details:" with
//     error.details as compact JSON without empty values and without what
//     the text says already or only clients use: request_id,
//     vault_http_status, vault_error.code and vault_error.message,
//     pending_approval (Vault's raw approval record) and vault;
//   - approval handoff (details.approval with next_action): the code, the
//     kind and ids, the attestation link once, and the wait call with its
//     exact arguments; nothing else.
//
// Meta (request_id, vault_http_status, vault_code) never appears: the
// model acts on ids and next steps, not on correlation fields.

// MaxTextChars bounds a result's text, about 10,000 tokens; a longer text
// is cut and says how to ask for less.
const MaxTextChars = 40000

// dropInText are error.details keys the text leaves to structuredContent.
var dropInText = map[string]bool{"request_id": true, "vault_http_status": true, "pending_approval": true, "vault": true}

// Text is the text content of the envelope raw (its JSON).
func Text(raw []byte) string {
	var env struct {
		OK    bool `json:"ok"`
		Data  any  `json:"data"`
		Error *struct {
			Code      string         `json:"code"`
			Message   string         `json:"message"`
			Retryable bool           `json:"retryable"`
			Details   map[string]any `json:"details"`
		} `json:"error"`
		Meta struct {
			Warnings []string `json:"warnings"`
		} `json:"meta"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		return string(raw)
	}
	var b strings.Builder
	switch {
	case env.OK || env.Error == nil:
		if d := prune(env.Data); d != nil {
			b.WriteString(compactJSON(d))
		} else {
			b.WriteString("ok")
		}
	case approvalText(&b, env.Error.Code, env.Error.Details):
	default:
		e := env.Error
		b.WriteString(e.Code)
		if e.Retryable {
			b.WriteString(" (retryable)")
		}
		b.WriteString(": " + e.Message)
		details := map[string]any{}
		for k, v := range e.Details {
			if !dropInText[k] {
				details[k] = v
			}
		}
		if ve, ok := details["vault_error"].(map[string]any); ok {
			details["vault_error"] = map[string]any{"details": ve["details"]}
		}
		if d := prune(details); d != nil {
			b.WriteString("\ndetails: " + compactJSON(d))
		}
	}
	if len(env.Meta.Warnings) > 0 {
		b.WriteString("\nwarnings: " + strings.Join(env.Meta.Warnings, "; "))
	}
	return bound(b.String())
}

// approvalText writes the handoff of details, reporting whether there is
// one.
func approvalText(b *strings.Builder, code string, details map[string]any) bool {
	a, _ := details["approval"].(map[string]any)
	next, _ := a["next_action"].(map[string]any)
	if next == nil {
		return false
	}
	tool, _ := next["tool"].(string)
	fmt.Fprintf(b, "%s: a person must approve this %v in Vaultclaw before it runs.", code, a["kind"])
	ids := []string{}
	for _, k := range []string{"job_id", "run_id", "challenge_id", "pending_id"} {
		if v, _ := a[k].(string); v != "" {
			ids = append(ids, k+" "+v)
		}
	}
	if len(ids) > 0 {
		b.WriteString("\n" + strings.Join(ids, ", "))
	}
	url, _ := a["remote_attestation_url"].(string)
	if url == "" {
		pending, _ := a["pending_approval"].(map[string]any)
		url, _ = pending["remote_attestation_url"].(string)
	}
	if url != "" {
		b.WriteString("\nShow the user this link to approve: " + url)
	}
	fmt.Fprintf(b, "\nThen call %s with %s; do not retry the call.", tool, compactJSON(next["arguments"]))
	return true
}

// prune drops null, "", empty arrays and empty objects at every depth;
// nil when nothing is left.
func prune(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if p := prune(e); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// compactJSON is v without HTML escaping, keys sorted.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// bound cuts s to MaxTextChars on a character boundary.
func bound(s string) string {
	if len(s) <= MaxTextChars {
		return s
	}
	cut := MaxTextChars
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[cut at " + fmt.Sprint(MaxTextChars) + " characters: ask for less (limit, cursor, filters, an id); the whole result is in structuredContent]"
}

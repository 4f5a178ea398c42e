// Package audit keeps the verifiable log of tool calls: one receipt per
// call, chained by SHA-256 over the canonical receipt bytes, the leaves of
// an RFC 6962 Merkle tree whose heads are signed as checkpoints with a key
// kept outside the database folder. Parameters and results are recorded
// only as HMAC-SHA-256 digests under a key derived from that key, so
// low-entropy arguments cannot be guessed from the database.
package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// Receipt is one audited tool call. Field order is the canonical encoding:
// never reorder or rename fields, that would break verification of old logs.
type Receipt struct {
	Seq       uint64 `json:"seq"`
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Timestamp string `json:"timestamp"`
	Caller    string `json:"caller"`
	Transport string `json:"transport"`
	// Optional fields are omitempty so older receipts verify unchanged.
	Session        string  `json:"session,omitempty"` // the attached stdio client
	Scope          string  `json:"scope"`
	Tool           string  `json:"tool"`
	CapabilityUsed string  `json:"capability_used"`
	ParamsHash     string  `json:"params_hash"`
	ResultHash     string  `json:"result_hash"`
	Outcome        string  `json:"outcome"`
	DurationMS     float64 `json:"duration_ms"`
	// The pre-execution rules that applied to the tool and those that matched.
	RulesEvaluated []string `json:"rules_evaluated,omitempty"`
	RulesMatched   []string `json:"rules_matched,omitempty"`
	// Note is the text of acknowledgement, restore and refusal receipts.
	Note string `json:"note,omitempty"`
	// Count is how many refused calls a TypeRefusals receipt stands for.
	Count uint64 `json:"count,omitempty"`
	// TaskRef (a keyed digest of the task id) and ParentCallID tie a task
	// receipt to the call that created the task.
	TaskRef      string `json:"task_ref,omitempty"`
	ParentCallID string `json:"parent_call_id,omitempty"`
	// Client is the MCP client's name/version from initialize; Tags are
	// the call's toolset, effect, "mcp" and "tool-call".
	Client string   `json:"client,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	// EventType, Scroll and BodyHash describe a TypeExternal receipt.
	EventType string `json:"event_type,omitempty"`
	Scroll    string `json:"scroll,omitempty"`
	BodyHash  string `json:"body_hash,omitempty"`
	// Params, Result and Body are logged data, redacted (Redact), present
	// only when the policy's [audit] section asks for them.
	Params   json.RawMessage `json:"params,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Body     json.RawMessage `json:"body,omitempty"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash,omitempty"`
}

// Receipt types and outcomes.
const (
	TypeToolCall = "mcp_tool_call"
	// TypeAcknowledgement: an operator accepts a stretch that failed verification.
	TypeAcknowledgement = "audit_acknowledgement"
	// TypeTask: a task finished or was cancelled by its owner.
	TypeTask = "mcp_task"
	// TypeRefusals stands for Count refused calls of one window, caller,
	// tenant, tool and reason beyond those receipted one by one.
	TypeRefusals = "mcp_refusals"
	// TypeRestore: a backup was restored into the database.
	TypeRestore = "audit_restore"
	// TypeExternal: an event another system reported (vaultclaw_receipt_emit).
	TypeExternal        = "external_event"
	OutcomeAcknowledged = "acknowledged"
	OutcomeRestored     = "restored"
	OutcomeOK           = "ok"
	// OutcomeProtocolError marks calls the protocol layer rejected.
	OutcomeProtocolError = "protocol_error"
)

// Algorithm prefixes.
const (
	PrefixSHA256 = "sha256:"
	PrefixHMAC   = "hmac-sha256:"
)

// Genesis is the prev_hash of the first receipt ever written.
var Genesis = PrefixSHA256 + hex.EncodeToString(make([]byte, sha256.Size))

// digest is a receipt's chain hash: SHA-256 over json.Marshal's encoding
// of r without its hash (seq and prev_hash bind it to its position).
func digest(r Receipt) (string, error) {
	r.Hash = ""
	body, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	return PrefixSHA256 + hex.EncodeToString(sum[:]), nil
}

// digestMatches reports whether r.Hash is r's digest.
func digestMatches(r Receipt) bool {
	h, err := digest(r)
	return err == nil && h == r.Hash
}

// seal sets r.Hash to r's digest and returns the stored bytes:
// json.Marshal's encoding of the sealed receipt.
func seal(r *Receipt) ([]byte, error) {
	h, err := digest(*r)
	if err != nil {
		return nil, err
	}
	r.Hash = h
	return json.Marshal(r)
}

// decodeStrict decodes stored bytes and reports whether they are exactly
// json.Marshal's encoding of the decoded receipt: any other spelling of
// the same receipt counts as an alteration.
func decodeStrict(raw []byte) (Receipt, bool, error) {
	var r Receipt
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, false, err
	}
	again, err := json.Marshal(r)
	if err != nil {
		return r, false, err
	}
	return r, bytes.Equal(again, raw), nil
}

// Hasher computes the keyed digests of parameters and results.
type Hasher struct{ key []byte }

// NewHasher returns a hasher for key (at least 32 bytes).
func NewHasher(key []byte) (*Hasher, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("audit HMAC key must be at least 32 bytes")
	}
	return &Hasher{key: append([]byte(nil), key...)}, nil
}

// Sum returns "hmac-sha256:<hex>" of b.
func (h *Hasher) Sum(b []byte) string {
	m := hmac.New(sha256.New, h.key)
	m.Write(b)
	return PrefixHMAC + hex.EncodeToString(m.Sum(nil))
}

// maxCanonicalValues bounds the arguments SumArgs canonicalizes; it
// matches the tool layer's limit on argument values.
const maxCanonicalValues = 200_000

// SumArgs digests tool arguments canonically: decoded (numbers as
// written) and encoded again by encoding/json, so equal arguments give
// equal digests whatever the key order or whitespace. Arguments that are
// not valid JSON, or too large to canonicalize, are digested as sent.
func (h *Hasher) SumArgs(raw json.RawMessage) string {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return h.Sum([]byte("{}"))
	}
	if jsonscan.Scan(trimmed).Values > maxCanonicalValues {
		return h.Sum(trimmed) // refused by the tool layer anyway
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return h.Sum(trimmed)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return h.Sum(trimmed)
	}
	return h.Sum(canon)
}

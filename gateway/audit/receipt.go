// Package audit keeps the verifiable log of tool calls: one receipt per call
// in completion order, chained by SHA-256 over the canonical receipt bytes
// (prev_hash keeps the order), the leaves of an RFC 6962 Merkle tree whose
// heads are signed as checkpoints with a key kept outside the database
// folder, in the bbolt bucket "audit". Parameters and results are recorded
// only as HMAC-SHA-256 digests under a key derived from that same outside
// key, so low-entropy arguments (e-mail addresses, tokens) cannot be
// recovered or guessed from the database. The trust model is in
// docs/gateway.md.
package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sync"

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
	// Session is the attached stdio client the call came from (omitted
	// otherwise, so receipts written before it existed verify unchanged).
	Session        string  `json:"session,omitempty"`
	Scope          string  `json:"scope"`
	Tool           string  `json:"tool"`
	CapabilityUsed string  `json:"capability_used"`
	ParamsHash     string  `json:"params_hash"`
	ResultHash     string  `json:"result_hash"`
	Outcome        string  `json:"outcome"`
	DurationMS     float64 `json:"duration_ms"`
	// The pre-execution rules that applied to the tool and those that
	// matched (omitted when none, so older receipts verify unchanged).
	RulesEvaluated []string `json:"rules_evaluated,omitempty"`
	RulesMatched   []string `json:"rules_matched,omitempty"`
	// Note is the text of receipts the log writes about itself (an
	// operator's acknowledgement, a restore) and of refusal summaries.
	Note string `json:"note,omitempty"`
	// Count is how many refused calls a refusal summary (TypeRefusals)
	// stands for; omitted on every other receipt.
	Count uint64 `json:"count,omitempty"`
	// TaskRef (a keyed digest of the task id) and ParentCallID (the
	// tools/call that created the task) tie a task receipt to its call;
	// omitted on other receipts.
	TaskRef      string `json:"task_ref,omitempty"`
	ParentCallID string `json:"parent_call_id,omitempty"`
	PrevHash     string `json:"prev_hash"`
	Hash         string `json:"hash,omitempty"`
}

// Receipt types and outcomes.
const (
	TypeToolCall = "mcp_tool_call"
	// TypeAcknowledgement records an operator accepting a stretch of the
	// log that failed verification.
	TypeAcknowledgement = "audit_acknowledgement"
	// TypeTask records a task of the Tasks extension finishing (completed,
	// failed) or being cancelled by its owner.
	TypeTask = "mcp_task"
	// TypeRefusals stands for calls the gateway refused in one window for
	// one caller, tenant, tool and reason beyond those receipted one by
	// one (Count says how many).
	TypeRefusals = "mcp_refusals"
	// TypeRestore records a backup restored into the database; its note
	// says how many receipts of the previous log were discarded.
	TypeRestore         = "audit_restore"
	OutcomeAcknowledged = "acknowledged"
	OutcomeRestored     = "restored"
	OutcomeOK           = "ok"
	// OutcomeProtocolError marks calls the protocol layer rejected (for
	// example an unknown tool name).
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
// of r without its hash (prev_hash and seq included, so the receipt is
// bound to its position). The writer and every check compute it here.
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
// json.Marshal's encoding of the decoded receipt: any byte-level edit,
// added, repeated or differently spelled field or reformatting counts as
// an alteration (encoding the decoded receipt again cannot give those
// bytes back).
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
type Hasher struct {
	pool sync.Pool
}

// NewHasher returns a hasher for key (at least 32 bytes).
func NewHasher(key []byte) (*Hasher, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("audit HMAC key must be at least 32 bytes")
	}
	k := append([]byte(nil), key...)
	return &Hasher{pool: sync.Pool{New: func() any { return hmac.New(sha256.New, k) }}}, nil
}

// Sum returns "hmac-sha256:<hex>" of b.
func (h *Hasher) Sum(b []byte) string {
	m := h.pool.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	var out [sha256.Size]byte
	sum := m.Sum(out[:0])
	h.pool.Put(m)
	return PrefixHMAC + hex.EncodeToString(sum)
}

// maxCanonicalValues bounds the arguments SumArgs canonicalizes; it
// matches the tool layer's limit on argument values.
const maxCanonicalValues = 200_000

// SumArgs digests tool arguments canonically: decoded (numbers as
// written) and encoded again by encoding/json, so objects have sorted keys
// and equal arguments give equal digests whatever the client's key order
// or whitespace. Arguments that are not valid JSON are digested as sent.
func (h *Hasher) SumArgs(raw json.RawMessage) string {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return h.Sum([]byte("{}"))
	}
	if jsonscan.Scan(trimmed).Values > maxCanonicalValues {
		// Refused by the tool layer anyway; canonicalizing would cost
		// tens of bytes per value.
		return h.Sum(trimmed)
	}
	canon, ok := canonicalArgs(trimmed)
	if !ok {
		return h.Sum(trimmed)
	}
	return h.Sum(canon)
}

// canonicalArgs is the canonical form of arguments: decoded (UseNumber)
// and encoded again.
func canonicalArgs(trimmed []byte) ([]byte, bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return canon, true
}

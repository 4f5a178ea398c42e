package audit

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// parseCanonical decodes stored receipt bytes in one pass, without
// reflection, when they are exactly json.Marshal's encoding of the receipt
// they decode to: the fields in struct order, an omitempty field only when
// set, strings json.Marshal writes as they stand, numbers as it formats
// them, nothing else. It declines (false) anything else, and decodeStrict
// then judges those bytes the slow way. Verification checks every stored
// receipt this way (the newest stretch at every start, all of them in
// `audit verify`); decoding and re-encoding each through encoding/json was
// most of that time. A fuzz target holds it to decodeStrict's answers.
func parseCanonical(raw []byte) (Receipt, bool) {
	p := receiptScanner{b: raw}
	var r Receipt
	if !p.lit(`{`) {
		return Receipt{}, false
	}
	for i, f := range receiptFields {
		if !p.key(i > 0, f.key) {
			if f.omit {
				continue
			}
			return Receipt{}, false
		}
		if !f.read(&p, &r) {
			return Receipt{}, false
		}
	}
	if !p.lit(`}`) || p.i != len(p.b) {
		return Receipt{}, false
	}
	return r, true
}

// receiptFields is Receipt's encoding, field by field in struct order (a
// test holds it to the struct's tags). An omitempty field is absent, or
// present and not empty.
var receiptFields = []struct {
	key  string
	omit bool
	read func(*receiptScanner, *Receipt) bool
}{
	{`"seq":`, false, func(p *receiptScanner, r *Receipt) bool { return p.uint(&r.Seq) }},
	{`"type":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Type) }},
	{`"call_id":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.CallID) }},
	{`"timestamp":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Timestamp) }},
	{`"caller":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Caller) }},
	{`"transport":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Transport) }},
	{`"session":`, true, func(p *receiptScanner, r *Receipt) bool { return p.set(&r.Session) }},
	{`"scope":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Scope) }},
	{`"tool":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Tool) }},
	{`"capability_used":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.CapabilityUsed) }},
	{`"params_hash":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.ParamsHash) }},
	{`"result_hash":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.ResultHash) }},
	{`"outcome":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.Outcome) }},
	{`"duration_ms":`, false, func(p *receiptScanner, r *Receipt) bool { return p.float(&r.DurationMS) }},
	{`"rules_evaluated":`, true, func(p *receiptScanner, r *Receipt) bool { return p.list(&r.RulesEvaluated) }},
	{`"rules_matched":`, true, func(p *receiptScanner, r *Receipt) bool { return p.list(&r.RulesMatched) }},
	{`"note":`, true, func(p *receiptScanner, r *Receipt) bool { return p.set(&r.Note) }},
	{`"task_ref":`, true, func(p *receiptScanner, r *Receipt) bool { return p.set(&r.TaskRef) }},
	{`"parent_call_id":`, true, func(p *receiptScanner, r *Receipt) bool { return p.set(&r.ParentCallID) }},
	{`"prev_hash":`, false, func(p *receiptScanner, r *Receipt) bool { return p.str(&r.PrevHash) }},
	{`"hash":`, true, func(p *receiptScanner, r *Receipt) bool { return p.set(&r.Hash) }},
}

type receiptScanner struct {
	b []byte
	i int
}

// lit consumes s when the input continues with it.
func (p *receiptScanner) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// key consumes the comma before a field (when not the first) and its key,
// or nothing when the input does not continue with both.
func (p *receiptScanner) key(comma bool, key string) bool {
	at := p.i
	if (comma && !p.lit(`,`)) || !p.lit(key) {
		p.i = at
		return false
	}
	return true
}

// set reads an omitempty string that is present: not empty.
func (p *receiptScanner) set(v *string) bool { return p.str(v) && *v != "" }

// list reads an omitempty list of strings that is present: at least one
// element.
func (p *receiptScanner) list(v *[]string) bool {
	if !p.lit(`[`) {
		return false
	}
	for {
		var s string
		if !p.str(&s) {
			return false
		}
		*v = append(*v, s)
		if p.lit(`]`) {
			return true
		}
		if !p.lit(`,`) {
			return false
		}
	}
}

// str reads a string that json.Marshal writes without escapes: printable
// ASCII other than the quote, the backslash and the HTML characters it
// escapes (< > &), and valid UTF-8 other than U+2028 and U+2029.
func (p *receiptScanner) str(v *string) bool {
	if !p.lit(`"`) {
		return false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			*v = string(p.b[start:p.i])
			p.i++
			return true
		case c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return false
			}
			p.i += size
		}
	}
	return false
}

// uint reads an unsigned integer as strconv formats it: no sign, no
// leading zero.
func (p *receiptScanner) uint(v *uint64) bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	tok := p.b[start:p.i]
	if len(tok) == 0 || (len(tok) > 1 && tok[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return false
	}
	*v = n
	return true
}

// float reads a number and accepts it only when json.Marshal writes the
// float64 it denotes the same way.
func (p *receiptScanner) float(v *float64) bool {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		p.i++
	}
	tok := p.b[start:p.i]
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	var buf [32]byte
	if string(appendJSONFloat(buf[:0], f)) != string(tok) {
		return false
	}
	*v = f
	return true
}

// appendJSONFloat formats f as encoding/json does: the shortest decimal
// that reads back as f, in exponent form below 1e-6 and from 1e21, with a
// one-digit negative exponent written without its leading zero.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

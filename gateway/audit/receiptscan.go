package audit

import "github.com/accordsai/accords-mcp/platform/canonjson"

// parseCanonical decodes stored receipt bytes in one pass, without
// reflection, when they are exactly json.Marshal's encoding of the receipt
// they decode to: the fields in struct order, an omitempty field only when
// set, strings json.Marshal writes as they stand, numbers as it formats
// them, nothing else. It declines (false) anything else, and decodeStrict
// then judges those bytes the slow way. Verification checks every stored
// receipt this way (the newest stretch at every start, all of them in
// `audit verify`); decoding and re-encoding each through encoding/json was
// most of that time. A fuzz target holds it to decodeStrict's answers.
func parseCanonical(raw []byte) (Receipt, bool) { return canonjson.Parse(raw, receiptFields) }

// receiptFields is Receipt's encoding, field by field in struct order (a
// test holds it to the struct's tags). An omitempty field is absent, or
// present and not empty.
var receiptFields = []canonjson.Field[Receipt]{
	field(`"seq":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Uint(&r.Seq) }),
	field(`"type":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Type) }),
	field(`"call_id":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.CallID) }),
	field(`"timestamp":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Timestamp) }),
	field(`"caller":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Caller) }),
	field(`"transport":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Transport) }),
	field(`"session":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Session) }),
	field(`"scope":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Scope) }),
	field(`"tool":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Tool) }),
	field(`"capability_used":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.CapabilityUsed) }),
	field(`"params_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.ParamsHash) }),
	field(`"result_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.ResultHash) }),
	field(`"outcome":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Outcome) }),
	field(`"duration_ms":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Float(&r.DurationMS) }),
	field(`"rules_evaluated":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.List(&r.RulesEvaluated) }),
	field(`"rules_matched":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.List(&r.RulesMatched) }),
	field(`"note":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Note) }),
	field(`"task_ref":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.TaskRef) }),
	field(`"parent_call_id":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.ParentCallID) }),
	field(`"prev_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.PrevHash) }),
	field(`"hash":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Hash) }),
}

func field(key string, omit bool, read func(*canonjson.Scanner, *Receipt) bool) canonjson.Field[Receipt] {
	return canonjson.Field[Receipt]{Key: key, Omit: omit, Read: read}
}

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
	canonjson.NewField(`"seq":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Uint(&r.Seq) }),
	canonjson.NewField(`"type":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Type) }),
	canonjson.NewField(`"call_id":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.CallID) }),
	canonjson.NewField(`"timestamp":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Timestamp) }),
	canonjson.NewField(`"caller":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Caller) }),
	canonjson.NewField(`"transport":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Transport) }),
	canonjson.NewField(`"session":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Session) }),
	canonjson.NewField(`"scope":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Scope) }),
	canonjson.NewField(`"tool":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Tool) }),
	canonjson.NewField(`"capability_used":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.CapabilityUsed) }),
	canonjson.NewField(`"params_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.ParamsHash) }),
	canonjson.NewField(`"result_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.ResultHash) }),
	canonjson.NewField(`"outcome":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.Outcome) }),
	canonjson.NewField(`"duration_ms":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Float(&r.DurationMS) }),
	canonjson.NewField(`"rules_evaluated":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.List(&r.RulesEvaluated) }),
	canonjson.NewField(`"rules_matched":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.List(&r.RulesMatched) }),
	canonjson.NewField(`"note":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Note) }),
	canonjson.NewField(`"count":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Uint(&r.Count) && r.Count != 0 }),
	canonjson.NewField(`"task_ref":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.TaskRef) }),
	canonjson.NewField(`"parent_call_id":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.ParentCallID) }),
	canonjson.NewField(`"prev_hash":`, false, func(p *canonjson.Scanner, r *Receipt) bool { return p.Str(&r.PrevHash) }),
	canonjson.NewField(`"hash":`, true, func(p *canonjson.Scanner, r *Receipt) bool { return p.Set(&r.Hash) }),
}

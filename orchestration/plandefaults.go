package orchestration

import "strings"

// ModuleHashNote is the plan module-hash preflight note (spec §6.4): plan
// tools never inject module_hash into step payloads.
const ModuleHashNote = "module_hash is not injected into plan step request payloads"

// DefaultGmailQueryAST is the query AST given to Gmail list verbs that lack a
// valid one.
func DefaultGmailQueryAST() map[string]any {
	return map[string]any{"pred": map[string]any{"field": "label", "op": "eq", "value": map[string]any{"kind": "enum", "enum": "inbox"}}}
}

// IsGmailListVerb reports the verbs that get a default query AST (connector
// id is deliberately ignored, as in the reference).
func IsGmailListVerb(verb string) bool {
	v := strings.ToLower(strings.TrimSpace(verb))
	return v == "google.gmail.messages.list" || v == "google.gmail.messages.list.v1"
}

func validAST(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if p, ok := m["pred"].(map[string]any); ok && len(p) > 0 {
		return true
	}
	if b, ok := m["bool"].(map[string]any); ok && len(b) > 0 {
		return true
	}
	return false
}

// ApplyPlanDefaults mutates plan in place: every object step with both
// connector_id and verb gets request_base {} when missing, and Gmail list
// steps get the default query_ast_base when theirs is missing or invalid. It
// returns the plan module-hash preflight object; nothing is ever injected.
func ApplyPlanDefaults(plan map[string]any) map[string]any {
	steps, _ := plan["steps"].([]any)
	for _, s := range steps {
		step, ok := s.(map[string]any)
		if !ok || str(step["connector_id"]) == "" || str(step["verb"]) == "" {
			continue
		}
		if rb, present := step["request_base"]; !present || rb == nil {
			step["request_base"] = map[string]any{}
		}
		if IsGmailListVerb(str(step["verb"])) && !validAST(step["query_ast_base"]) {
			step["query_ast_base"] = DefaultGmailQueryAST()
		}
	}
	if len(steps) == 0 {
		return map[string]any{"applied_count": 0, "applied": []any{}}
	}
	return map[string]any{"note": ModuleHashNote, "applied_count": 0, "applied": []any{}}
}

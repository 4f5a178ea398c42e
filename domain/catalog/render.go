package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/suggest"
	"github.com/google/jsonschema-go/jsonschema"
)

// Output kinds of a render.
const (
	OutputAuto        = "AUTO"
	OutputVerbRequest = "VERB_REQUEST"
	OutputPlan        = "PLAN"
)

// NormalizeOutputKind trims and upper-cases k ("" is AUTO); anything else is
// a validation error naming the field (decision D2).
func NormalizeOutputKind(k string) (string, error) {
	k = strings.ToUpper(strings.TrimSpace(k))
	switch k {
	case "":
		return OutputAuto, nil
	case OutputAuto, OutputVerbRequest, OutputPlan:
		return k, nil
	}
	return "", apperr.Validation("output_kind", "output_kind must be one of AUTO, VERB_REQUEST, PLAN").With("allowed", []string{OutputAuto, OutputVerbRequest, OutputPlan}).With("output_kind", clip(k))
}

// InputRef names one binding in render reports.
type InputRef struct {
	InputKey   string `json:"input_key"`
	TargetPath string `json:"target_path"`
}

// SourceRef says what was rendered.
type SourceRef struct {
	CookbookID string `json:"cookbook_id"`
	Version    string `json:"version"`
	TemplateID string `json:"template_id"`
	EntryType  string `json:"entry_type"`
	OutputKind string `json:"output_kind"`
}

// RenderResult is a successful render's data. MissingInputs is always empty
// (missing required inputs are an error); SkippedOptional lists optional
// bindings without a default the caller did not supply.
type RenderResult struct {
	Rendered        map[string]any `json:"rendered"`
	MissingInputs   []InputRef     `json:"missing_inputs"`
	UsedDefaults    []InputRef     `json:"used_defaults"`
	SkippedOptional []InputRef     `json:"skipped_optional"`
	SourceRef       SourceRef      `json:"source_ref"`
	// Warnings name inputs the template does not know; they are ignored and
	// reported in meta.warnings (as D21 does for unknown arguments).
	Warnings []string `json:"-"`
}

// RenderEntry renders a template entry of bundle b with inputs. It is
// pure: nothing is executed or stored.
func RenderEntry(b *Bundle, e *Entry, inputs map[string]any, outputKind string) (res *RenderResult, err error) {
	warnings := unknownInputs(e, inputs)
	defer func() {
		switch {
		case len(warnings) == 0:
		case err != nil:
			// A typo'd input often is why a required one is missing.
			if ae, ok := err.(*apperr.Error); ok {
				ae.Warnings = append(ae.Warnings, warnings...)
			}
		case res != nil:
			res.Warnings = warnings
		}
	}()
	if !IsTemplate(e.EntryType) {
		return nil, apperr.New(apperr.CodeTemplateNotFound, "entry is not a template").With("template_id", e.EntryID).With("entry_type", e.EntryType)
	}
	kind, err := NormalizeOutputKind(outputKind)
	if err != nil {
		return nil, err
	}
	natural := OutputVerbRequest
	base := e.BaseRequest
	if e.EntryType == TypeTemplatePlan {
		natural, base = OutputPlan, e.BasePlan
	}
	if kind == OutputAuto {
		kind = natural
	}
	if kind != natural {
		return nil, apperr.New(apperr.CodeTemplateInputInvalid, "%s requires output_kind %s or AUTO", e.EntryType, natural).
			With("template_id", e.EntryID).With("output_kind", kind)
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	rendered, err := deepCopyObject(base)
	if err != nil {
		return nil, apperr.Internal("copy template base", err)
	}
	res = &RenderResult{MissingInputs: []InputRef{}, UsedDefaults: []InputRef{}, SkippedOptional: []InputRef{}}
	var missing []InputRef
	effective := map[string]any{}
	maps.Copy(effective, inputs)
	for _, bd := range e.Bindings {
		ref := InputRef{InputKey: bd.InputKey, TargetPath: bd.TargetPath}
		val, provided := inputs[bd.InputKey]
		switch {
		case provided:
		case bd.HasDefault():
			val = bd.Default
			res.UsedDefaults = append(res.UsedDefaults, ref)
			if _, ok := effective[bd.InputKey]; !ok {
				effective[bd.InputKey] = bd.Default
			}
		case bd.IsRequired():
			missing = append(missing, ref)
			continue
		default:
			res.SkippedOptional = append(res.SkippedOptional, ref)
			continue
		}
		cp, err := deepCopy(val)
		if err != nil {
			return nil, apperr.New(apperr.CodeTemplateInputInvalid, "input value is not JSON").With("input_key", bd.InputKey).With("cause", err.Error())
		}
		out, err := SetPointer(rendered, bd.TargetPath, cp)
		if err != nil {
			return nil, apperr.New(apperr.CodeTemplateInputInvalid, "failed setting rendered value by json pointer").
				With("input_key", bd.InputKey).With("target_path", bd.TargetPath).With("cause", err.Error())
		}
		rendered = out.(map[string]any)
	}
	if len(missing) > 0 {
		return nil, apperr.New(apperr.CodeTemplateRenderUnresolved, "required template inputs are missing").
			With("cookbook_id", b.CookbookID).With("version", b.Version).With("template_id", e.EntryID).With("missing_inputs", missing)
	}
	if e.InputSchema != nil {
		rs, err := compileInputSchema(e.InputSchema)
		if err == nil {
			err = rs.Validate(effective)
		}
		if err != nil {
			return nil, apperr.New(apperr.CodeTemplateInputInvalid, "inputs do not match the template's input_schema").
				With("template_id", e.EntryID).With("cause", err.Error())
		}
	}
	if err := checkShape(kind, rendered); err != nil {
		return nil, err
	}
	res.Rendered = rendered
	res.SourceRef = SourceRef{CookbookID: b.CookbookID, Version: b.Version, TemplateID: e.EntryID, EntryType: e.EntryType, OutputKind: kind}
	return res, nil
}

// Bounds of one render's unknown-input warnings.
const (
	maxInputWarnings = 10
	maxWarnedInput   = 64
)

// unknownInputs warns, in name order, of inputs that are neither a binding's
// input_key nor an input_schema property; they are never set in the
// rendered request.
func unknownInputs(e *Entry, inputs map[string]any) []string {
	if len(inputs) == 0 {
		return nil
	}
	knownSet := map[string]bool{}
	for _, bd := range e.Bindings {
		knownSet[bd.InputKey] = true
	}
	if props, ok := e.InputSchema["properties"].(map[string]any); ok {
		for k := range props {
			knownSet[k] = true
		}
	}
	known := slices.Sorted(maps.Keys(knownSet))
	var out []string
	total := 0
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if knownSet[name] {
			continue
		}
		total++
		if len(out) < maxInputWarnings {
			out = append(out, inputWarning(name, known))
		}
	}
	if total > maxInputWarnings {
		out = append(out, fmt.Sprintf("%d more unknown template inputs not listed", total-maxInputWarnings))
	}
	return out
}

// inputWarning is `unknown template input "urll" is ignored; did you mean
// "url"?`, or lists the template's inputs when none is close.
func inputWarning(name string, known []string) string {
	shown := name
	if len(shown) > maxWarnedInput {
		shown = shown[:maxWarnedInput] + "..."
	}
	if best := suggest.Closest(name, known); best != "" {
		return fmt.Sprintf("unknown template input %q is ignored; did you mean %q?", shown, best)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown template input %q is ignored; this template takes no inputs", shown)
	}
	return fmt.Sprintf("unknown template input %q is ignored; its inputs: %s", shown, strings.Join(known, ", "))
}

func checkShape(kind string, r map[string]any) error {
	if kind == OutputVerbRequest {
		c, _ := r["connector_id"].(string)
		v, _ := r["verb"].(string)
		// A blank id is as useless to Vault as a missing one.
		if strings.TrimSpace(c) == "" || strings.TrimSpace(v) == "" {
			return apperr.New(apperr.CodeTemplateInputInvalid, "rendered VERB_REQUEST must include connector_id and verb")
		}
		if _, ok := r["request"].(map[string]any); !ok {
			return apperr.New(apperr.CodeTemplateInputInvalid, "rendered VERB_REQUEST must include request object")
		}
		return nil
	}
	steps, _ := r["steps"].([]any)
	if len(steps) == 0 {
		return apperr.New(apperr.CodeTemplateInputInvalid, "rendered PLAN must include non-empty steps array")
	}
	return nil
}

// deepCopy copies a JSON value; anything not decoded from JSON goes through
// an encode/decode round trip (a json.Number or int becomes a float64).
func deepCopy(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, float64, bool:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := deepCopy(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := deepCopy(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(raw, &out)
	return out, err
}

func deepCopyObject(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	out, err := deepCopy(m)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// Binding paths: JSON-pointer-like; digit-only segments address array
// elements.

// MaxArrayIndex bounds array growth so a hostile path such as /a/999999999
// cannot allocate without limit.
const MaxArrayIndex = 10000

func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, errors.New("path must start with /")
	}
	parts := strings.Split(p[1:], "/")
	for i, seg := range parts {
		if !strings.Contains(seg, "~") {
			continue
		}
		var sb strings.Builder
		for j := 0; j < len(seg); j++ {
			if seg[j] != '~' {
				sb.WriteByte(seg[j])
				continue
			}
			if j+1 >= len(seg) || (seg[j+1] != '0' && seg[j+1] != '1') {
				return nil, fmt.Errorf("invalid json pointer escape in segment %q", seg)
			}
			if seg[j+1] == '0' {
				sb.WriteByte('~')
			} else {
				sb.WriteByte('/')
			}
			j++
		}
		parts[i] = sb.String()
	}
	return parts, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SetPointer sets val at path inside root, creating missing containers, and
// returns the (possibly new) root.
func SetPointer(root any, path string, val any) (any, error) {
	segs, err := parsePointer(path)
	if err != nil {
		return nil, err
	}
	return setAt(root, segs, val)
}

func setAt(node any, segs []string, val any) (any, error) {
	if len(segs) == 0 {
		return val, nil
	}
	seg := segs[0]
	if isDigits(seg) {
		idx, err := strconv.Atoi(seg)
		if err != nil || idx > MaxArrayIndex {
			return nil, fmt.Errorf("path segment %q is not an array index up to %d", seg, MaxArrayIndex)
		}
		var arr []any
		switch n := node.(type) {
		case nil:
		case []any:
			arr = n
		default:
			return nil, fmt.Errorf("path segment %q expects array", seg)
		}
		for len(arr) <= idx {
			arr = append(arr, nil)
		}
		child, err := setAt(arr[idx], segs[1:], val)
		if err != nil {
			return nil, err
		}
		arr[idx] = child
		return arr, nil
	}
	var obj map[string]any
	switch n := node.(type) {
	case nil:
		obj = map[string]any{}
	case map[string]any:
		obj = n
	default:
		return nil, fmt.Errorf("path segment %q expects object", seg)
	}
	child, err := setAt(obj[seg], segs[1:], val)
	if err != nil {
		return nil, err
	}
	obj[seg] = child
	return obj, nil
}

// ---------------------------------------------------------------------------
// input_schema

// compileInputSchema compiles an entry's input schema.
func compileInputSchema(m map[string]any) (*jsonschema.Resolved, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

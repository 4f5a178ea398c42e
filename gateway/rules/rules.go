// Package rules evaluates the policy file's pre-execution rules: CEL
// expressions, compiled when the policy is loaded, that deny a tool call
// before anything reaches Vault. It knows nothing of MCP.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// Spec is one [[rules]] entry as written in the policy file.
type Spec struct {
	ID      string   `toml:"id" json:"id"`
	Tools   []string `toml:"tools" json:"tools"`
	DenyIf  string   `toml:"deny_if" json:"deny_if"`
	Message string   `toml:"message" json:"message"`
	// OnError decides for an expression that fails to evaluate: "deny"
	// (default) or "allow".
	OnError string `toml:"on_error" json:"on_error"`
}

// Variables an expression sees.
const (
	VarTool       = "tool"
	VarCaller     = "caller"
	VarTenant     = "tenant"
	VarCapability = "capability"
	VarArgs       = "args"
	VarRendered   = "rendered"
	VarNow        = "now"
)

// Rule is one compiled rule.
type Rule struct {
	ID      string
	Message string
	Tools   []string
	// Rendered: the expression reads `rendered`, so it runs once the
	// request to Vault is built rather than before the tool starts.
	Rendered   bool
	allowOnErr bool
	prg        cel.Program
}

// Set is a compiled, immutable rule set.
type Set struct {
	rules []*Rule
}

// Violation names a rule that denied a call.
type Violation struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}

// Decision is the outcome of evaluating rules for one call.
type Decision struct {
	// Evaluated are the ids of the rules that ran, in file order.
	Evaluated []string
	// Matched are the rules that denied.
	Matched []Violation
}

// Denied reports whether any rule matched.
func (d Decision) Denied() bool { return len(d.Matched) > 0 }

// MatchedIDs are the ids of the rules that matched.
func (d Decision) MatchedIDs() []string {
	ids := make([]string, len(d.Matched))
	for i, v := range d.Matched {
		ids[i] = v.ID
	}
	return ids
}

// Merge adds a later phase's decision.
func (d *Decision) Merge(o Decision) {
	d.Evaluated = append(d.Evaluated, o.Evaluated...)
	d.Matched = append(d.Matched, o.Matched...)
}

// Input is what the expressions see.
type Input struct {
	Tool       string
	Caller     string
	Tenant     string
	Capability string
	// Args are the call's arguments as given (JSON).
	Args json.RawMessage
	// Rendered is the request that would be sent to Vault (rendered phase).
	Rendered any
	Now      time.Time
}

// Phase selects which rules run.
type Phase int

// Phases: before the tool (rules that do not read `rendered`), when the
// request to Vault is built (rules that do), or every rule at once (tools
// that build no request: `rendered` is then empty).
const (
	PhaseArgs Phase = iota
	PhaseRendered
	PhaseAll
)

func (r *Rule) inPhase(p Phase) bool {
	return p == PhaseAll || r.Rendered == (p == PhaseRendered)
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// Env is the CEL environment of rules: the variables above, the strings
// extension, url_host(string) and email_domain(string) (a URL's lowercase
// host name, an address's lowercase domain), and local_hour(timestamp,
// zone) / local_weekday(timestamp, zone) (0 is Sunday).
func Env() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable(VarTool, cel.StringType),
			cel.Variable(VarCaller, cel.StringType),
			cel.Variable(VarTenant, cel.StringType),
			cel.Variable(VarCapability, cel.StringType),
			cel.Variable(VarArgs, cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable(VarRendered, cel.DynType),
			cel.Variable(VarNow, cel.TimestampType),
			ext.Strings(),
			cel.CrossTypeNumericComparisons(true),
			stringFunc("url_host", urlHost),
			stringFunc("email_domain", emailDomain),
			zoneFunc("local_hour", func(t time.Time) int64 { return int64(t.Hour()) }),
			zoneFunc("local_weekday", func(t time.Time) int64 { return int64(t.Weekday()) }),
		)
	})
	return env, envErr
}

func stringFunc(name string, f func(string) string) cel.EnvOption {
	return cel.Function(name, cel.Overload(name+"_string", []*cel.Type{cel.StringType}, cel.StringType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.NewErr("%s: not a string", name)
			}
			return types.String(f(s))
		})))
}

func zoneFunc(name string, f func(time.Time) int64) cel.EnvOption {
	return cel.Function(name, cel.Overload(name+"_timestamp_string", []*cel.Type{cel.TimestampType, cel.StringType}, cel.IntType,
		cel.BinaryBinding(func(ts, tz ref.Val) ref.Val {
			t, ok := ts.Value().(time.Time)
			zone, ok2 := tz.Value().(string)
			if !ok || !ok2 {
				return types.NewErr("expects a timestamp and a time zone name")
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return types.NewErr("unknown time zone %q", zone)
			}
			return types.Int(f(t.In(loc)))
		})))
}

func urlHost(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func emailDomain(s string) string {
	s = strings.TrimSpace(s)
	// "Name <a@b>" forms: keep the address.
	if i := strings.LastIndexByte(s, '<'); i >= 0 {
		s = strings.TrimSuffix(s[i+1:], ">")
	}
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(s[i+1:]))
}

var idPattern = ident.New("A-Za-z0-9", "A-Za-z0-9._:-", 64)

// Compile validates and compiles specs. known lists every tool name (a glob
// must name at least one); lines[i], when given, is the file line of rule
// i for error messages.
func Compile(specs []Spec, known []string, lines []int) (*Set, error) {
	if len(specs) == 0 {
		return &Set{}, nil
	}
	e, err := Env()
	if err != nil {
		return nil, fmt.Errorf("rules: CEL environment: %w", err)
	}
	s := &Set{}
	seen := map[string]bool{}
	for i, sp := range specs {
		where := fmt.Sprintf("rules[%d]", i)
		if sp.ID != "" {
			where += fmt.Sprintf(" (%s)", sp.ID)
		}
		if i < len(lines) && lines[i] > 0 {
			where = fmt.Sprintf("line %d: %s", lines[i], where)
		}
		r, err := compileOne(e, sp, known)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", where, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%s.id: duplicate rule id %q", where, r.ID)
		}
		seen[r.ID] = true
		s.rules = append(s.rules, r)
	}
	return s, nil
}

func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf(field+": "+format, args...)
}

func compileOne(e *cel.Env, sp Spec, known []string) (*Rule, error) {
	if !idPattern.Valid(sp.ID) {
		return nil, fieldErr("id", "%q must match %s", sp.ID, idPattern)
	}
	if len(sp.Tools) == 0 {
		return nil, fieldErr("tools", "required: tool names or globs (\"*\" for every tool)")
	}
	for _, g := range sp.Tools {
		if _, err := path.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
			return nil, fieldErr("tools", "%q is not a valid name or glob", g)
		}
		if len(known) > 0 && !slices.ContainsFunc(known, func(t string) bool { ok, _ := path.Match(g, t); return ok }) {
			return nil, fieldErr("tools", "%q names no tool of this server", g)
		}
	}
	if strings.TrimSpace(sp.DenyIf) == "" {
		return nil, fieldErr("deny_if", "required: a CEL expression that is true when the call must be refused")
	}
	r := &Rule{ID: sp.ID, Message: strings.TrimSpace(sp.Message), Tools: slices.Clone(sp.Tools)}
	switch strings.ToLower(strings.TrimSpace(sp.OnError)) {
	case "", "deny":
	case "allow":
		r.allowOnErr = true
	default:
		return nil, fieldErr("on_error", "%q: use deny or allow", sp.OnError)
	}
	if r.Message == "" {
		r.Message = "denied by rule " + sp.ID
	}
	ast, iss := e.Compile(sp.DenyIf)
	if iss != nil && iss.Err() != nil {
		return nil, fieldErr("deny_if", "%s", strings.TrimSpace(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) && !ast.OutputType().IsExactType(cel.DynType) {
		return nil, fieldErr("deny_if", "must be a boolean expression, this one is %s", ast.OutputType())
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == VarRendered {
			r.Rendered = true
		}
	}
	prg, err := e.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fieldErr("deny_if", "%v", err)
	}
	r.prg = prg
	return r, nil
}

// forTool lists the rules whose globs name tool.
func (s *Set) forTool(tool string) []*Rule {
	if s == nil {
		return nil
	}
	var out []*Rule
	for _, r := range s.rules {
		for _, g := range r.Tools {
			if ok, _ := path.Match(g, tool); ok {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Rules lists the compiled rules in file order.
func (s *Set) Rules() []*Rule {
	if s == nil {
		return nil
	}
	return s.rules
}

// Applies reports whether any rule names tool in phase.
func (s *Set) Applies(tool string, phase Phase) bool {
	for _, r := range s.forTool(tool) {
		if r.inPhase(phase) {
			return true
		}
	}
	return false
}

// Evaluate runs the rules of in.Tool for phase. Every matching rule is
// reported, not only the first, so one refusal names all it broke.
func (s *Set) Evaluate(in Input, phase Phase) Decision {
	var d Decision
	rs := s.forTool(in.Tool)
	if len(rs) == 0 {
		return d
	}
	act := activation(in)
	for _, r := range rs {
		if !r.inPhase(phase) {
			continue
		}
		d.Evaluated = append(d.Evaluated, r.ID)
		out, _, err := r.prg.Eval(act)
		if err == nil {
			if b, ok := out.Value().(bool); ok {
				if b {
					d.Matched = append(d.Matched, Violation{ID: r.ID, Message: r.Message})
				}
				continue
			}
			err = fmt.Errorf("the expression gave %v, not a boolean", out.Type())
		}
		if !r.allowOnErr {
			d.Matched = append(d.Matched, Violation{ID: r.ID, Message: fmt.Sprintf("%s (the rule could not be evaluated, and denies on error: %v)", r.Message, err)})
		}
	}
	return d
}

// activation is what the expressions of one call see; the arguments and
// the rendered request are decoded only when an expression reads them, once
// per call (cel's lazy bindings keep their first value).
func activation(in Input) interpreter.Activation {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	act, _ := interpreter.NewActivation(map[string]any{ // a map is always accepted
		VarTool:       in.Tool,
		VarCaller:     in.Caller,
		VarTenant:     in.Tenant,
		VarCapability: in.Capability,
		VarNow:        now.UTC(),
		VarArgs:       func() any { return decodeArgs(in.Args) },
		VarRendered: func() any {
			if r := normalize(in.Rendered); r != nil {
				return r
			}
			return map[string]any{}
		},
	})
	return act
}

// decodeArgs decodes the arguments as given; anything but an object is an
// empty object (the tool's own validation reports it).
func decodeArgs(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return map[string]any{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return map[string]any{}
	}
	return normalize(m)
}

// normalize gives CEL integers where JSON has whole numbers (so
// `args.limit == 5` and `size(x) > 3` compare as written) and doubles
// otherwise.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case float64:
		if x == float64(int64(x)) && x < 1<<53 && x > -(1<<53) {
			return int64(x)
		}
		return x
	case int:
		return int64(x)
	}
	return v
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/rules"
	"github.com/accordsai/accords-mcp/tools"
)

func init() {
	register("policy", "policy file helpers: policy hash-token (token on stdin), policy check FILE, policy test FILE --tool T --args JSON", runPolicy)
}

const policyUsage = `usage: accords-mcp policy hash-token < token-file
       accords-mcp policy check FILE
       accords-mcp policy test FILE --tool TOOL [--args JSON] [--rendered JSON] [--caller ID] [--tenant T] [--now RFC3339]`

func runPolicy(_ context.Context, env *environment, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(env.stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "hash-token":
		if len(args) != 1 {
			break
		}
		return policyHashToken(env)
	case "check":
		if len(args) != 2 {
			break
		}
		return policyCheck(env, args[1])
	case "test":
		return policyTest(env, args[1:])
	}
	fmt.Fprintln(env.stderr, policyUsage)
	return 2
}

func policyHashToken(env *environment) int {
	// Read from stdin, never argv: command lines are visible to other users.
	line, err := bufio.NewReader(env.stdin).ReadString('\n')
	token := strings.TrimSpace(line)
	if token == "" {
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp policy hash-token: no token on stdin")
		}
		return 1
	}
	fmt.Fprintln(env.stdout, policy.HashToken(token))
	return 0
}

// policyCheck validates a policy file as the server would load it.
func policyCheck(env *environment, file string) int {
	p, err := policy.Load(file, gateway.KnownNames())
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp policy check:", err)
		return 1
	}
	rs := p.Rules.Rules()
	fmt.Fprintf(env.stdout, "policy OK: %s (%d callers, %d rules)\n", file, len(p.CallerIDs()), len(rs))
	for _, r := range rs {
		when := "before the call"
		if r.Rendered {
			when = "when the request is rendered"
		}
		fmt.Fprintf(env.stdout, "  rule %s: tools %s, evaluated %s\n", r.ID, strings.Join(r.Tools, ", "), when)
	}
	return 0
}

// policyDecision is what `policy test` prints.
type policyDecision struct {
	Decision        string            `json:"decision"`
	Tool            string            `json:"tool"`
	Caller          string            `json:"caller"`
	Tenant          string            `json:"tenant"`
	Capability      string            `json:"capability"`
	CapabilityHeld  bool              `json:"capability_held"`
	RulesEvaluated  []string          `json:"rules_evaluated"`
	ViolatedRules   []rules.Violation `json:"violated_rules"`
	RenderedSkipped []string          `json:"rules_needing_rendered,omitempty"`
}

// policyTest shows the decision the policy makes for one call: exit 0
// allow, 1 deny.
func policyTest(env *environment, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(env.stderr, policyUsage)
		return 2
	}
	file := args[0]
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	tool := fs.String("tool", "", "tool name")
	argsJSON := fs.String("args", "{}", "the call's arguments, a JSON object")
	renderedJSON := fs.String("rendered", "", "the request the call would send (plan and template paths), a JSON object")
	callerID := fs.String("caller", policy.LocalID, "caller id from the policy (local = stdio)")
	tenant := fs.String("tenant", "", "tenant (default: the caller's)")
	nowFlag := fs.String("now", "", "the time the rules see (RFC 3339; default now)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	p, err := policy.Load(file, gateway.KnownNames())
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp policy test:", err)
		return 1
	}
	var def *tools.Tool
	for _, t := range tools.Definitions() {
		if t.Name == *tool {
			def = &t
		}
	}
	if def == nil {
		fmt.Fprintf(env.stderr, "accords-mcp policy test: --tool %q is not a tool of this server\n", *tool)
		return 2
	}
	c, ok := p.Lookup(*callerID)
	if !ok {
		fmt.Fprintf(env.stderr, "accords-mcp policy test: --caller %q is not in the policy (known: local, anonymous, %s)\n", *callerID, strings.Join(p.CallerIDs(), ", "))
		return 2
	}
	if *tenant == "" {
		*tenant = c.Tenant
		if *tenant == "" {
			*tenant = "default"
		}
	}
	var probe any
	if err := json.Unmarshal([]byte(*argsJSON), &probe); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp policy test: --args is not JSON:", err)
		return 2
	}
	now := time.Now()
	if *nowFlag != "" {
		if now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp policy test: --now:", err)
			return 2
		}
	}
	in := rules.Input{Tool: def.Name, Caller: c.ID, Tenant: *tenant, Capability: def.Capability, Args: json.RawMessage(*argsJSON), Now: now}
	phase := rules.PhaseArgs
	if !def.Renders {
		phase = rules.PhaseAll
	}
	d := p.Rules.Evaluate(in, phase)
	out := policyDecision{Tool: def.Name, Caller: c.ID, Tenant: *tenant, Capability: def.Capability, CapabilityHeld: c.Allows(def.Capability) && !(c.ReadOnly && def.Writes())}
	if def.Renders && p.Rules.Applies(def.Name, rules.PhaseRendered) {
		if *renderedJSON == "" {
			for _, r := range p.Rules.Rules() {
				if r.Rendered {
					out.RenderedSkipped = append(out.RenderedSkipped, r.ID)
				}
			}
		} else {
			var rendered map[string]any
			if err := json.Unmarshal([]byte(*renderedJSON), &rendered); err != nil {
				fmt.Fprintln(env.stderr, "accords-mcp policy test: --rendered is not a JSON object:", err)
				return 2
			}
			in.Rendered = rendered
			d.Merge(p.Rules.Evaluate(in, rules.PhaseRendered))
		}
	}
	out.RulesEvaluated, out.ViolatedRules = d.Evaluated, d.Matched
	if out.RulesEvaluated == nil {
		out.RulesEvaluated = []string{}
	}
	if out.ViolatedRules == nil {
		out.ViolatedRules = []rules.Violation{}
	}
	out.Decision = "allow"
	if d.Denied() || !out.CapabilityHeld {
		out.Decision = "deny"
	}
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	if out.Decision == "deny" {
		return 1
	}
	return 0
}

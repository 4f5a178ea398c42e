package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/gateway/policy"
	"github.com/accordsai/accords-mcp/gateway/rules"
	"github.com/accordsai/accords-mcp/tools"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "policy",
			Short: "policy file helpers: hash-token (token on stdin), check FILE, test FILE --tool T --args JSON",
		}
		c.AddCommand(&cobra.Command{
			Use:     "hash-token",
			Short:   "print the digest of a caller token (read from stdin) for the policy file",
			Example: "  accords-mcp policy hash-token < token-file",
			RunE:    func(*cobra.Command, []string) error { return exit(policyHashToken(env)) },
		}, &cobra.Command{
			Use:   "check FILE",
			Short: "validate a policy file as the server would load it",
			Args:  cobra.ExactArgs(1),
			RunE:  func(_ *cobra.Command, args []string) error { return exit(policyCheck(env, args[0])) },
		})
		var o policyTestOptions
		test := &cobra.Command{
			Use:   "test FILE --tool TOOL",
			Short: "show the decision the policy makes for one call (exit 0 allow, 1 deny)",
			Example: `  accords-mcp policy test policy.toml --tool vaultclaw_cookbook_delete --caller ci \
    --args '{"cookbook_id":"weather.tools"}'`,
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if o.tool == "" {
					return usageErrorf(cmd, "--tool is required")
				}
				o.file = args[0]
				return exit(policyTest(env, o))
			},
		}
		f := test.Flags()
		f.StringVar(&o.tool, "tool", "", "tool name (required)")
		f.StringVar(&o.args, "args", "{}", "the call's arguments, a JSON object")
		f.StringVar(&o.rendered, "rendered", "", "the request the call would send (plan and template paths), a JSON object")
		f.StringVar(&o.caller, "caller", policy.LocalID, "caller id from the policy (local = stdio)")
		f.StringVar(&o.tenant, "tenant", "", "tenant (default: the caller's)")
		f.StringVar(&o.now, "now", "", "the time the rules see (RFC 3339; default now)")
		_ = test.RegisterFlagCompletionFunc("tool", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, t := range tools.Definitions() {
				names = append(names, t.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		})
		c.AddCommand(test)
		return c
	})
}

type policyTestOptions struct {
	file, tool, args, rendered, caller, tenant, now string
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
	if o := p.OAuth; o != nil {
		fmt.Fprintf(env.stdout, "  oauth: issuer %s, audience %s, scopes %s\n", o.Issuer, o.Audience, strings.Join(o.ScopesSupported(), " "))
	}
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
func policyTest(env *environment, o policyTestOptions) int {
	p, err := policy.Load(o.file, gateway.KnownNames())
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp policy test:", err)
		return 1
	}
	var def *tools.Tool
	for _, t := range tools.Definitions() {
		if t.Name == o.tool {
			def = &t
		}
	}
	if def == nil {
		fmt.Fprintf(env.stderr, "accords-mcp policy test: --tool %q is not a tool of this server\n", o.tool)
		return 2
	}
	c, ok := p.Lookup(o.caller)
	if !ok {
		fmt.Fprintf(env.stderr, "accords-mcp policy test: --caller %q is not in the policy (known: local, anonymous, %s)\n", o.caller, strings.Join(p.CallerIDs(), ", "))
		return 2
	}
	if o.tenant == "" {
		o.tenant = c.Tenant
		if o.tenant == "" {
			o.tenant = "default"
		}
	}
	var probe any
	if err := json.Unmarshal([]byte(o.args), &probe); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp policy test: --args is not JSON:", err)
		return 2
	}
	now := time.Now()
	if o.now != "" {
		if now, err = time.Parse(time.RFC3339, o.now); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp policy test: --now:", err)
			return 2
		}
	}
	in := rules.Input{Tool: def.Name, Caller: c.ID, Tenant: o.tenant, Capability: def.Capability, Args: json.RawMessage(o.args), Now: now}
	phase := rules.PhaseArgs
	if !def.Renders {
		phase = rules.PhaseAll
	}
	d := p.Rules.Evaluate(in, phase)
	out := policyDecision{Tool: def.Name, Caller: c.ID, Tenant: o.tenant, Capability: def.Capability, CapabilityHeld: c.Allows(def.Capability) && !(c.ReadOnly && def.Writes())}
	if def.Renders && p.Rules.Applies(def.Name, rules.PhaseRendered) {
		if o.rendered == "" {
			for _, r := range p.Rules.Rules() {
				if r.Rendered {
					out.RenderedSkipped = append(out.RenderedSkipped, r.ID)
				}
			}
		} else {
			var rendered map[string]any
			if err := json.Unmarshal([]byte(o.rendered), &rendered); err != nil {
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
	printJSON(env, out)
	if out.Decision == "deny" {
		return 1
	}
	return 0
}

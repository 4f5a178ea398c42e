package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/ops/admin"
)

func init() {
	register("audit", "verify the audit receipt chain (audit verify) or show recent receipts (audit tail [-n N] [--json])", runAudit)
}

func runAudit(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(env.stderr, "usage: accords-mcp audit verify [--json] | audit tail [-n N] [--json]")
		return 2
	}
	switch args[0] {
	case "verify":
		return auditVerify(ctx, env, args[1:])
	case "tail":
		return auditTail(ctx, env, args[1:])
	}
	fmt.Fprintf(env.stderr, "accords-mcp audit: unknown subcommand %q (verify, tail)\n", args[0])
	return 2
}

func auditVerify(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return withBackend(ctx, env, func(b admin.Backend, _ where) int { return verifyChain(ctx, env, b, *asJSON) })
}

// verifyChain checks the receipt chain and prints the report.
func verifyChain(ctx context.Context, env *environment, log admin.Audit, asJSON bool) int {
	rep, err := log.AuditVerify(ctx)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp: audit verify:", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else if rep.OK {
		fmt.Fprintf(env.stdout, "audit chain OK: %d receipts", rep.Count)
		if rep.Count > 0 {
			fmt.Fprintf(env.stdout, " (seq %d..%d)", rep.FirstSeq, rep.LastSeq)
		}
		if rep.Checkpoint != nil {
			fmt.Fprintf(env.stdout, ", continuing from retention checkpoint at seq %d (%d pruned)", rep.Checkpoint.Seq, rep.Checkpoint.Pruned)
		}
		fmt.Fprintln(env.stdout)
		if rep.Head != nil {
			fmt.Fprintf(env.stdout, "head: seq %d %s\n", rep.Head.Seq, rep.Head.Hash)
		}
	} else {
		fmt.Fprintf(env.stdout, "audit chain FAILED (%s at receipt %d): %s\n", rep.Problem.Kind, rep.Problem.Seq, rep.Problem.Message)
		fmt.Fprintf(env.stdout, "%d receipts verified before the problem\n", rep.Count)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func auditTail(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit tail", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	n := fs.Int("n", 20, "number of receipts")
	asJSON := fs.Bool("json", false, "print one JSON receipt per line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n <= 0 {
		fmt.Fprintln(env.stderr, "accords-mcp audit tail: -n must be positive")
		return 2
	}
	return withBackend(ctx, env, func(b admin.Backend, _ where) int { return tailReceipts(ctx, env, b, *n, *asJSON) })
}

// tailReceipts prints the newest n receipts, oldest first like tail(1).
func tailReceipts(ctx context.Context, env *environment, log admin.Audit, n int, asJSON bool) int {
	rs, err := log.AuditTail(ctx, n)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp: audit tail:", err)
		return 1
	}
	slices.Reverse(rs)
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		for _, r := range rs {
			_ = enc.Encode(r)
		}
		return 0
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCALLER\tSESSION\tSCOPE\tTOOL\tOUTCOME\tMS\tCALL_ID")
	for _, r := range rs {
		sess := r.Session
		if sess == "" {
			sess = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", r.Seq, r.Timestamp, r.Caller, sess, r.Scope, r.Tool, r.Outcome, r.DurationMS, r.CallID)
	}
	_ = tw.Flush()
	return 0
}

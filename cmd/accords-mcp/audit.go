package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
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
		return auditVerify(env, args[1:])
	case "tail":
		return auditTail(env, args[1:])
	}
	fmt.Fprintf(env.stderr, "accords-mcp audit: unknown subcommand %q (verify, tail)\n", args[0])
	return 2
}

func openAuditDB(env *environment) (*store.DB, int) {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return nil, 1
	}
	db, err := store.Open(cfg.DBPath, store.Options{ReadOnly: true})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return nil, 1
	}
	return db, 0
}

func auditVerify(env *environment, args []string) int {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	db, code := openAuditDB(env)
	if db == nil {
		return code
	}
	defer db.Close()
	rep, err := audit.Verify(db)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp: audit verify:", err)
		return 1
	}
	if *asJSON {
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

func auditTail(env *environment, args []string) int {
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
	db, code := openAuditDB(env)
	if db == nil {
		return code
	}
	defer db.Close()
	rs, err := audit.List(db, audit.Filter{Limit: *n})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp: audit tail:", err)
		return 1
	}
	// Oldest first, like tail(1).
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		for _, r := range rs {
			_ = enc.Encode(r)
		}
		return 0
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tCALLER\tSCOPE\tTOOL\tOUTCOME\tMS\tCALL_ID")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\n", r.Seq, r.Timestamp, r.Caller, r.Scope, r.Tool, r.Outcome, r.DurationMS, r.CallID)
	}
	_ = tw.Flush()
	return 0
}

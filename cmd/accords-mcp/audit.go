package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/platform/config"
	"golang.org/x/mod/sumdb/note"
)

func init() {
	register("audit", "the signed audit log: verify, tail, key, checkpoint, prove SEQ, export, acknowledge (accords-mcp audit help)", runAudit)
}

const auditUsage = `usage: accords-mcp audit COMMAND
  verify [--json] [--checkpoint FILE]... [--key PUB] [--export FILE]
                  check the chain, the tree, every checkpoint's signature, and consistency with
                  saved checkpoints (an anchor file works); --export verifies an export with no database
  tail [-n N] [--json]   the newest receipts
  key             print the audit public key (signed-note verifier form)
  checkpoint      print the newest signed checkpoint
  prove SEQ [--tlog]     receipt SEQ with its inclusion proof in the newest checkpoint
  export [--out FILE]    NDJSON: receipts, checkpoints, base notes
  acknowledge --note TEXT [--operator NAME]
                  accept a log that failed verification (writes a receipt saying so)`

func runAudit(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(env.stderr, auditUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub := map[string]func(context.Context, *environment, []string) int{
		"verify": auditVerify, "tail": auditTail, "key": auditKey, "checkpoint": auditCheckpoint,
		"prove": auditProve, "export": auditExport, "acknowledge": auditAcknowledge,
	}
	run, ok := sub[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "accords-mcp audit: unknown subcommand %q\n%s\n", args[0], auditUsage)
		return 2
	}
	return run(ctx, env, args[1:])
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// publicKeyText is --key (a verifier key, or a file holding one), else
// the configured audit key's, in verifier form.
func publicKeyText(cfg config.Config, flagKey string) (string, error) {
	if flagKey != "" {
		text := flagKey
		if b, err := os.ReadFile(flagKey); err == nil {
			text = string(b)
		}
		if _, err := audit.ParseVerifierKey(text); err != nil {
			return "", err
		}
		return strings.TrimSpace(text), nil
	}
	k, err := audit.LoadKey(app.AuditKeySpec(cfg), false)
	if err != nil {
		return "", fmt.Errorf("%w; pass the public key with --key (accords-mcp audit key prints it)", err)
	}
	return k.VerifierKey, nil
}

func readSaved(files []string) ([][]byte, error) {
	var out [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--checkpoint: %w", err)
		}
		notes := audit.SplitNotes(raw)
		if len(notes) == 0 {
			return nil, fmt.Errorf("--checkpoint %s: no signed checkpoint in the file", f)
		}
		out = append(out, notes...)
	}
	return out, nil
}

func auditVerify(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	keyFlag := fs.String("key", "", "audit public key (the output of accords-mcp audit key, or a file holding it); default: the configured key")
	export := fs.String("export", "", "verify this export file (accords-mcp audit export) instead of the database")
	var saved stringList
	fs.Var(&saved, "checkpoint", "a saved checkpoint or anchor file the log must be consistent with (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	notes, err := readSaved(saved)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	keyText, kerr := publicKeyText(cfg, *keyFlag)
	if *export != "" {
		if kerr != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", kerr)
			return 1
		}
		pub, err := audit.ParseVerifierKey(keyText)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
		f, err := os.Open(*export)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
		rep, err := audit.VerifyExport(f, audit.VerifyOptions{Verifier: pub, Saved: notes})
		f.Close()
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
		return printReport(env, rep, pub, *asJSON)
	}
	return withBackend(ctx, env, func(b admin.Backend, w where) int {
		// A daemon knows its own key; offline the command must have it.
		if kerr != nil && !w.remote {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", kerr)
			return 1
		}
		if !w.remote && storeIsNew(cfg) {
			fmt.Fprintf(env.stderr, "accords-mcp: no database at %s yet\n", cfg.DBPath)
			return 1
		}
		return verifyChain(ctx, env, b, admin.AuditVerifyRequest{Key: keyText, Saved: notes}, *asJSON)
	})
}

// verifyChain checks the signed log through log and prints the report.
func verifyChain(ctx context.Context, env *environment, log admin.Audit, req admin.AuditVerifyRequest, asJSON bool) int {
	res, err := log.AuditVerify(ctx, req)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	pub, err := audit.ParseVerifierKey(res.Key)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	return printReport(env, res.Report, pub, asJSON)
}

func printReport(env *environment, rep audit.Report, pub note.Verifier, asJSON bool) int {
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		writeReport(env.stdout, rep, pub)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// writeReport prints a verification report for people.
func writeReport(w io.Writer, rep audit.Report, pub note.Verifier) {
	if !rep.OK {
		fmt.Fprintf(w, "audit chain FAILED (%s at receipt %d): %s\n", rep.Problem.Kind, rep.Problem.Seq, rep.Problem.Message)
		fmt.Fprintf(w, "%d receipts verified before the problem\n", rep.Count)
		return
	}
	fmt.Fprintf(w, "audit chain OK: %d receipts", rep.Count)
	if rep.Count > 0 {
		fmt.Fprintf(w, " (seq %d..%d)", rep.FirstSeq, rep.LastSeq)
	}
	fmt.Fprintf(w, "; tree size %d, root %s\n", rep.TreeSize, rep.Root)
	fmt.Fprintf(w, "log: %s\n", rep.Origin)
	if rep.Newest != nil {
		fmt.Fprintf(w, "signed: %d checkpoints match, the newest covers %d receipts (%d receipts after it, signed at the next checkpoint); signatures %s with %s\n",
			rep.Checkpoints, rep.Newest.Size, rep.Unsigned, rep.Signatures, pub.Name())
	}
	if rep.Base != nil {
		fmt.Fprintf(w, "starts after receipt %d: signed %s base of %s (%s)\n", rep.Base.Size, rep.Base.Kind, rep.Base.Time, rep.Base.Note)
	}
	for _, a := range rep.Acknowledged {
		fmt.Fprintf(w, "acknowledged up to receipt %d on %s: %s\n", a.Size, a.Time, a.Note)
	}
	if len(rep.Saved) > 0 {
		counts := map[string]int{}
		for _, s := range rep.Saved {
			counts[s.Status]++
		}
		fmt.Fprintf(w, "saved checkpoints: %d consistent with the log", counts["consistent"])
		if n := counts["before_retention"]; n > 0 {
			fmt.Fprintf(w, ", %d older than the retention base (their receipts were pruned under a signed base)", n)
		}
		if n := counts["acknowledged"]; n > 0 {
			fmt.Fprintf(w, ", %d inside an acknowledged stretch", n)
		}
		fmt.Fprintln(w)
	}
	if rep.Head != nil {
		fmt.Fprintf(w, "head: seq %d %s\n", rep.Head.Seq, rep.Head.Hash)
	}
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
	return auditBackend(ctx, env, func(b admin.Backend) int { return tailReceipts(ctx, env, b, *n, *asJSON) })
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

// auditBackend runs fn against the daemon, or against the database
// (read-only) when none runs, which must exist then.
func auditBackend(ctx context.Context, env *environment, fn func(b admin.Backend) int) int {
	return withBackend(ctx, env, func(b admin.Backend, w where) int {
		if !w.remote {
			cfg, _ := env.config()
			if storeIsNew(cfg) {
				fmt.Fprintf(env.stderr, "accords-mcp: no database at %s yet\n", cfg.DBPath)
				return 1
			}
		}
		return fn(b)
	})
}

func auditKey(ctx context.Context, env *environment, args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(env.stderr, "usage: accords-mcp audit key")
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	// The key is created on first use, as the server would at its start.
	k, err := audit.LoadKey(app.AuditKeySpec(cfg), true)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit key:", err)
		return 1
	}
	fmt.Fprintln(env.stdout, k.VerifierKey)
	return 0
}

func auditCheckpoint(ctx context.Context, env *environment, args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(env.stderr, "usage: accords-mcp audit checkpoint")
		return 2
	}
	return auditBackend(ctx, env, func(b admin.Backend) int {
		cp, err := b.AuditCheckpoint(ctx)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit checkpoint:", err)
			return 1
		}
		_, _ = env.stdout.Write(cp)
		return 0
	})
}

func auditProve(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit prove", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	tlog := fs.Bool("tlog", false, "print the C2SP tlog-proof text instead of JSON")
	// SEQ may come before or after the flags.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintln(env.stderr, "usage: accords-mcp audit prove SEQ [--tlog]")
		return 2
	}
	seq, err := strconv.ParseUint(positional[0], 10, 64)
	if err != nil || seq == 0 {
		fmt.Fprintf(env.stderr, "accords-mcp audit prove: SEQ must be a receipt sequence number (1, 2, …), got %q\n", positional[0])
		return 2
	}
	return auditBackend(ctx, env, func(b admin.Backend) int {
		p, err := b.AuditProve(ctx, seq)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit prove:", err)
			return 1
		}
		if *tlog {
			fmt.Fprint(env.stdout, p.TLogProof)
			return 0
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p)
		return 0
	})
}

func auditExport(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	out := fs.String("out", "", "write to this file (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return auditBackend(ctx, env, func(b admin.Backend) int { return exportLog(ctx, env, b, *out) })
}

// exportLog writes the NDJSON export to out (a new 0600 file) or stdout.
func exportLog(ctx context.Context, env *environment, log admin.Audit, out string) int {
	w := env.stdout
	var f *os.File
	if out != "" {
		var err error
		if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit export:", err)
			return 1
		}
		w = f
	}
	n, err := log.AuditExport(ctx, w)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit export:", err)
		return 1
	}
	if out != "" {
		fmt.Fprintf(env.stderr, "audit export: %d receipts written to %s\n", n, out)
	}
	return 0
}

func auditAcknowledge(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("audit acknowledge", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	text := fs.String("note", "", "why the log is accepted as it is (required; recorded in the receipt)")
	operator := fs.String("operator", "", "who acknowledges (default: the OS user)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if strings.TrimSpace(*text) == "" {
		fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge: --note is required: say why the log is accepted as it is")
		return 2
	}
	if *operator == "" {
		*operator = "operator"
		if u, err := user.Current(); err == nil {
			*operator = "operator:" + u.Username
		}
	}
	return withBackend(ctx, env, func(b admin.Backend, _ where) int {
		msg, err := b.AuditAcknowledge(ctx, *operator, *text)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge:", err)
			return 1
		}
		fmt.Fprintln(env.stdout, msg)
		return 0
	})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
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
	sub := map[string]func(*environment, []string) int{
		"verify": auditVerify, "tail": auditTail, "key": auditKey, "checkpoint": auditCheckpoint,
		"prove": auditProve, "export": auditExport, "acknowledge": auditAcknowledge,
	}
	run, ok := sub[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "accords-mcp audit: unknown subcommand %q\n%s\n", args[0], auditUsage)
		return 2
	}
	return run(env, args[1:])
}

func openAuditDB(env *environment, readOnly bool) (*store.DB, config.Config, int) {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return nil, cfg, 1
	}
	if readOnly && dbIsNew(cfg.DBPath) {
		fmt.Fprintf(env.stderr, "accords-mcp: no database at %s yet\n", cfg.DBPath)
		return nil, cfg, 1
	}
	db, err := store.Open(cfg.DBPath, store.Options{ReadOnly: readOnly})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return nil, cfg, 1
	}
	return db, cfg, 0
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// publicKey is --key (a verifier key, or a file holding one), else the
// configured audit key.
func publicKey(cfg config.Config, flagKey string) (note.Verifier, error) {
	if flagKey != "" {
		text := flagKey
		if b, err := os.ReadFile(flagKey); err == nil {
			text = string(b)
		}
		return audit.ParseVerifierKey(text)
	}
	k, err := audit.LoadKey(app.AuditKeySpec(cfg), false)
	if err != nil {
		return nil, fmt.Errorf("%w; pass the public key with --key (accords-mcp audit key prints it)", err)
	}
	return k.Verifier(), nil
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

func auditVerify(env *environment, args []string) int {
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
	pub, err := publicKey(cfg, *keyFlag)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	notes, err := readSaved(saved)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	opts := audit.VerifyOptions{Verifier: pub, Saved: notes}
	var rep audit.Report
	if *export != "" {
		f, err := os.Open(*export)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
		rep, err = audit.VerifyExport(f, opts)
		f.Close()
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
	} else {
		db, _, code := openAuditDB(env, true)
		if db == nil {
			return code
		}
		rep, err = verifyLog(db, opts)
		db.Close()
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
	}
	if *asJSON {
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

// verifyLog is the verification behind `audit verify`, on an open
// database (in this process or in the daemon that holds it).
func verifyLog(db *store.DB, opts audit.VerifyOptions) (audit.Report, error) {
	return audit.Verify(db, opts)
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
	db, _, code := openAuditDB(env, true)
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

func auditKey(env *environment, args []string) int {
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

func auditCheckpoint(env *environment, args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(env.stderr, "usage: accords-mcp audit checkpoint")
		return 2
	}
	db, _, code := openAuditDB(env, true)
	if db == nil {
		return code
	}
	defer db.Close()
	cp, err := audit.NewestCheckpoint(db)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit checkpoint:", err)
		return 1
	}
	_, _ = env.stdout.Write(cp)
	return 0
}

func auditProve(env *environment, args []string) int {
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
	db, _, code := openAuditDB(env, true)
	if db == nil {
		return code
	}
	defer db.Close()
	p, err := audit.Prove(db, seq)
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
}

func auditExport(env *environment, args []string) int {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	out := fs.String("out", "", "write to this file (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	db, _, code := openAuditDB(env, true)
	if db == nil {
		return code
	}
	defer db.Close()
	w := env.stdout
	var f *os.File
	if *out != "" {
		var err error
		if f, err = os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit export:", err)
			return 1
		}
		w = f
	}
	n, err := audit.Export(db, w)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit export:", err)
		return 1
	}
	if *out != "" {
		fmt.Fprintf(env.stderr, "audit export: %d receipts written to %s\n", n, *out)
	}
	return 0
}

func auditAcknowledge(env *environment, args []string) int {
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
	db, cfg, code := openAuditDB(env, false)
	if db == nil {
		return code
	}
	defer db.Close()
	key, err := audit.LoadKey(app.AuditKeySpec(cfg), false)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge: the audit key is needed to sign the acknowledgement:", err)
		return 1
	}
	l, err := audit.Open(db, audit.Options{Key: key})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge:", err)
		return 1
	}
	defer l.Close()
	msg, err := acknowledge(l, *operator, *text)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge:", err)
		return 1
	}
	fmt.Fprintln(env.stdout, msg)
	return 0
}

// errNothingToAcknowledge means the log verifies.
var errNothingToAcknowledge = errors.New("the audit log verifies: nothing to acknowledge")

// acknowledge verifies the whole log with l's key and, when it fails,
// records the operator's acceptance (on an open log: here or in a daemon).
func acknowledge(l *audit.Log, operator, text string) (string, error) {
	rep, err := audit.Verify(l.DB(), audit.VerifyOptions{Verifier: l.Key().Verifier()})
	if err != nil {
		return "", err
	}
	p := rep.Problem
	if p == nil {
		p = l.Integrity()
	}
	if p == nil {
		return "", errNothingToAcknowledge
	}
	ref, err := l.Acknowledge(operator, text, p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("acknowledged: %s at receipt %d (%s); recorded as receipt %d; verification restarts after receipt %d and write tools are allowed again",
		p.Kind, p.Seq, p.Message, ref.Seq, ref.Seq-1), nil
}

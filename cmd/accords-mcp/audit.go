package main

import (
	"context"
	"encoding/json"
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
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "audit",
			Short: "the signed audit log: verify, tail, key, checkpoint, prove SEQ, export, acknowledge",
		}
		var vo auditVerifyOptions
		verify := &cobra.Command{
			Use:   "verify",
			Short: "check the chain, the tree, every checkpoint's signature, and consistency with saved checkpoints",
			Long: `Check the receipt chain, the Merkle tree, every checkpoint's signature, and consistency with
saved checkpoints (an anchor file works). With --export it verifies an export file and needs no
database. Exits 1 when the log does not verify.`,
			RunE: func(cmd *cobra.Command, _ []string) error { return exit(auditVerify(cmd.Context(), env, vo)) },
		}
		verify.Flags().BoolVar(&vo.asJSON, "json", false, "print the report as JSON")
		verify.Flags().StringVar(&vo.key, "key", "", "audit public key (the output of accords-mcp audit key, or a file holding it); default: the configured key")
		verify.Flags().StringVar(&vo.export, "export", "", "verify this export file (accords-mcp audit export) instead of the database")
		verify.Flags().StringArrayVar(&vo.saved, "checkpoint", nil, "a saved checkpoint or anchor file the log must be consistent with (repeatable)")
		verify.Flags().StringVar(&vo.policy, "policy", "", "a C2SP tlog-policy file: the newest checkpoint must be signed by its log and cosigned by its witness quorum")

		var n int
		var tailJSON bool
		var tailCall string
		tail := &cobra.Command{
			Use:   "tail",
			Short: "print the newest receipts, oldest first (or one call's with --call-id)",
			RunE: func(cmd *cobra.Command, _ []string) error {
				if n <= 0 {
					return usageErrorf(cmd, "--limit must be positive, got %d", n)
				}
				return exit(auditBackend(cmd.Context(), env, func(b admin.Backend) int {
					return tailReceipts(cmd.Context(), env, b, n, tailCall, tailJSON)
				}))
			},
		}
		tail.Flags().IntVarP(&n, "limit", "n", 20, "number of receipts")
		tail.Flags().BoolVar(&tailJSON, "json", false, "print one JSON receipt per line")
		tail.Flags().StringVar(&tailCall, "call-id", "", `print only the receipt of this call (the _meta["accords/call_id"] of its result)`)

		key := &cobra.Command{
			Use:   "key",
			Short: "print the audit public key (signed-note verifier form); creates the key on first use",
			RunE:  func(cmd *cobra.Command, _ []string) error { return exit(auditKey(env)) },
		}
		checkpoint := &cobra.Command{
			Use:   "checkpoint",
			Short: "print the newest signed checkpoint",
			RunE:  func(cmd *cobra.Command, _ []string) error { return exit(auditCheckpoint(cmd.Context(), env)) },
		}
		var tlog bool
		var proveCall string
		prove := &cobra.Command{
			Use:   "prove SEQ | --call-id ID",
			Short: "print a receipt (by number, or by call id) with its inclusion proof in the newest checkpoint",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				switch {
				case len(args) == 0 && proveCall == "":
					return usageErrorf(cmd, "name the receipt: its number (SEQ) or --call-id ID")
				case len(args) == 1 && proveCall != "":
					return usageErrorf(cmd, "name the receipt by its number (SEQ) or by --call-id, not both")
				}
				var seq uint64
				if len(args) == 1 {
					var err error
					seq, err = strconv.ParseUint(args[0], 10, 64)
					if err != nil || seq == 0 {
						return usageErrorf(cmd, "SEQ must be a receipt sequence number (1, 2, …), got %q", args[0])
					}
				}
				return exit(auditProve(cmd.Context(), env, seq, proveCall, tlog))
			},
		}
		prove.Flags().BoolVar(&tlog, "tlog", false, "print the C2SP tlog-proof text instead of JSON")
		prove.Flags().StringVar(&proveCall, "call-id", "", `the receipt of this call (the _meta["accords/call_id"] of its result; on replicas sharing etcd, read calls carry only this)`)
		var out string
		export := &cobra.Command{
			Use:   "export",
			Short: "write the log as NDJSON: receipts, checkpoints, base notes",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return exit(auditBackend(cmd.Context(), env, func(b admin.Backend) int { return exportLog(cmd.Context(), env, b, out) }))
			},
		}
		export.Flags().StringVar(&out, "out", "", "write to this new file, 0600 (default: standard output)")
		var note, operator string
		ack := &cobra.Command{
			Use:   "acknowledge --note TEXT",
			Short: "accept a log that failed verification (writes a signed receipt saying so)",
			RunE: func(cmd *cobra.Command, _ []string) error {
				if strings.TrimSpace(note) == "" {
					return usageErrorf(cmd, "--note is required: say why the log is accepted as it is")
				}
				return exit(auditAcknowledge(cmd.Context(), env, operator, note))
			},
		}
		ack.Flags().StringVar(&note, "note", "", "why the log is accepted as it is (required; recorded in the receipt)")
		ack.Flags().StringVar(&operator, "operator", "", "who acknowledges (default: the OS user)")
		c.AddCommand(verify, tail, key, checkpoint, prove, export, ack)
		return c
	})
}

type auditVerifyOptions struct {
	asJSON bool
	key    string
	export string
	saved  []string
	policy string
}

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

func auditVerify(ctx context.Context, env *environment, o auditVerifyOptions) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	notes, err := readSaved(o.saved)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
		return 1
	}
	keyText, kerr := publicKeyText(cfg, o.key)
	if o.export != "" {
		if kerr != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", kerr)
			return 1
		}
		pub, err := audit.ParseVerifierKey(keyText)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit verify:", err)
			return 1
		}
		f, err := os.Open(o.export)
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
		rc := printReport(env, rep, pub, o.asJSON)
		if rc == 0 && o.policy != "" {
			rc = policyOnExport(env, o.policy, o.export, pub)
		}
		return rc
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
		rc := verifyChain(ctx, env, b, admin.AuditVerifyRequest{Key: keyText, Saved: notes}, o.asJSON)
		if rc == 0 && o.policy != "" {
			pub, _ := audit.ParseVerifierKey(keyText)
			rc = policyOnBackend(ctx, env, b, o.policy, pub)
		}
		return rc
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
		printJSON(env, rep)
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
	if rep.Kept > 0 {
		fmt.Fprintf(w, "kept below the base under the tenant floor: %d receipts, each proven against the signed base\n", rep.Kept)
	}
	for _, r := range rep.Restores {
		text, _, _ := strings.Cut(r.Note, " [replaced ")
		fmt.Fprintf(w, "restored at receipt %d on %s: %s\n", r.Size, r.Time, text)
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
		if n := counts[audit.SavedReplaced]; n > 0 {
			fmt.Fprintf(w, ", %d of the history a recorded restore replaced", n)
		}
		fmt.Fprintln(w)
	}
	if rep.Head != nil {
		fmt.Fprintf(w, "head: seq %d %s\n", rep.Head.Seq, rep.Head.Hash)
	}
}

// tailReceipts prints the newest n receipts, oldest first like tail(1),
// or the receipt of the call callID.
func tailReceipts(ctx context.Context, env *environment, log admin.Audit, n int, callID string, asJSON bool) int {
	var rs []audit.Receipt
	var err error
	if callID != "" {
		var r audit.Receipt
		r, err = log.AuditFind(ctx, callID)
		rs = []audit.Receipt{r}
	} else {
		rs, err = log.AuditTail(ctx, n)
	}
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

func auditKey(env *environment) int {
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

func auditCheckpoint(ctx context.Context, env *environment) int {
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

func auditProve(ctx context.Context, env *environment, seq uint64, callID string, tlogOut bool) int {
	return auditBackend(ctx, env, func(b admin.Backend) int {
		if callID != "" {
			r, err := b.AuditFind(ctx, callID)
			if err != nil {
				fmt.Fprintln(env.stderr, "accords-mcp audit prove:", err)
				return 1
			}
			seq = r.Seq
		}
		p, err := b.AuditProve(ctx, seq)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit prove:", err)
			return 1
		}
		if tlogOut {
			fmt.Fprint(env.stdout, p.TLogProof)
			return 0
		}
		return printJSON(env, p)
	})
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

// operatorName is op, or "operator:<OS user>" when op is empty.
func operatorName(op string) string {
	if op != "" {
		return op
	}
	if u, err := user.Current(); err == nil {
		return "operator:" + u.Username
	}
	return "operator"
}

func auditAcknowledge(ctx context.Context, env *environment, op, text string) int {
	operator := operatorName(op)
	return withBackend(ctx, env, func(b admin.Backend, _ where) int {
		msg, err := b.AuditAcknowledge(ctx, operator, text)
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp audit acknowledge:", err)
			return 1
		}
		fmt.Fprintln(env.stdout, msg)
		return 0
	})
}

// Package doctor checks an installation: one OK, FAIL or SKIP line per
// check with a hint for every failure. Database checks run where the
// database is open (the command, or the daemon over its socket).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/keyring"
	redactpkg "github.com/accordsai/accords-mcp/platform/redact"
	"github.com/accordsai/accords-mcp/store"
)

// Statuses. WARN is worth an operator's look but does not fail doctor.
const (
	OK   = "OK"
	WARN = "WARN"
	FAIL = "FAIL"
	SKIP = "SKIP"
)

// Result is one check.
type Result struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

func ok(check, format string, a ...any) Result {
	return Result{Check: check, Status: OK, Detail: fmt.Sprintf(format, a...)}
}

func fail(check, hint, format string, a ...any) Result {
	return Result{Check: check, Status: FAIL, Detail: fmt.Sprintf(format, a...), Hint: hint}
}

func warn(check, hint, format string, a ...any) Result {
	return Result{Check: check, Status: WARN, Detail: fmt.Sprintf(format, a...), Hint: hint}
}

func skip(check, format string, a ...any) Result {
	return Result{Check: check, Status: SKIP, Detail: fmt.Sprintf(format, a...)}
}

// Failed reports whether any result is a FAIL.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == FAIL {
			return true
		}
	}
	return false
}

// Write prints one line per result: status, check, detail, and the hint.
func Write(w io.Writer, rs []Result) {
	for _, r := range rs {
		line := fmt.Sprintf("%-4s  %-16s %s", r.Status, r.Check, r.Detail)
		if r.Hint != "" {
			line += " — hint: " + r.Hint
		}
		fmt.Fprintln(w, line)
	}
}

// Files checks the database path and the permissions of its folder, file,
// key file and control socket; it creates nothing.
func Files(cfg config.Config, socketPath string) []Result {
	var rs []Result
	dbFi, dbErr := os.Stat(cfg.DBPath)
	switch {
	case cfg.Store != nil:
		rs = append(rs, ok("db path", "state in %s; this replica's index and socket beside %s", cfg.Store, cfg.DBPath))
	case dbErr == nil && !dbFi.Mode().IsRegular():
		rs = append(rs, fail("db path", "point ACCORDS_MCP_DB at a file", "%s is not a regular file", cfg.DBPath))
	case dbErr == nil:
		rs = append(rs, ok("db path", "%s (%s)", cfg.DBPath, humanBytes(dbFi.Size())))
	case errors.Is(dbErr, fs.ErrNotExist):
		rs = append(rs, ok("db path", "%s does not exist yet; it is created on first start", cfg.DBPath))
	default:
		rs = append(rs, fail("db path", "check ACCORDS_MCP_DB and the folder permissions", "%s: %v", cfg.DBPath, dbErr))
	}
	dir := filepath.Dir(cfg.DBPath)
	rs = append(rs, perm("db folder", dir, 0o700, true, "chmod 700 "+shellQuote(dir)))
	if dbErr == nil && dbFi.Mode().IsRegular() {
		rs = append(rs, perm("db file", cfg.DBPath, 0o600, false, "chmod 600 "+shellQuote(cfg.DBPath)))
	}
	if strings.TrimSpace(cfg.SecretKey) != "" {
		if _, err := keyring.Load(cfg.SecretKey, ""); err != nil {
			rs = append(rs, fail("secret key", "set ACCORDS_MCP_SECRET_KEY to 32 bytes in hex or base64, or unset it to use the key file", "%v", err))
		} else {
			rs = append(rs, ok("secret key", "from ACCORDS_MCP_SECRET_KEY (the key file is not used)"))
		}
	} else {
		kf := cfg.KeyFile()
		if _, err := os.Stat(kf); errors.Is(err, fs.ErrNotExist) {
			rs = append(rs, ok("key file", "%s does not exist yet; it is created on first start", kf))
		} else if r := perm("key file", kf, 0o600, false, "chmod 600 "+shellQuote(kf)); r.Status != OK {
			rs = append(rs, r)
		} else if _, err := keyring.Load("", kf); err != nil {
			rs = append(rs, fail("key file", "restore the key file from a backup of it; sessions sealed with it cannot be read otherwise", "%v", err))
		} else {
			rs = append(rs, r)
		}
	}
	rs = append(rs, auditKeyCheck(cfg))
	if fi, err := os.Lstat(socketPath); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		rs = append(rs, perm("control socket", socketPath, 0o600, false, "restart the daemon; it recreates the socket 0600"))
	}
	return append(rs, leftovers(dir))
}

// leftovers reports temporary copies a killed backup or restore left in
// the database folder.
func leftovers(dir string) Result {
	list, err := backup.Leftovers(dir)
	if err != nil {
		return fail("leftovers", "check the folder permissions", "cannot list %s: %v", dir, err)
	}
	if len(list) == 0 {
		return ok("leftovers", "no temporary files left by a killed backup or restore")
	}
	var total int64
	names := make([]string, len(list))
	for i, l := range list {
		total += l.Size
		names[i] = shellQuote(l.Path)
	}
	return fail("leftovers", "the next start removes them; or now: rm -r "+strings.Join(names, " "),
		"%d temporary file(s) of a killed backup or restore, %s", len(list), humanBytes(total))
}

// SealedWithoutKey reports sessions sealed with a key that is gone (no
// ACCORDS_MCP_SECRET_KEY, no key file): the server refuses to start.
func SealedWithoutKey(cfg config.Config, db *store.DB) (r Result, failed bool) {
	if strings.TrimSpace(cfg.SecretKey) != "" {
		return Result{}, false
	}
	kf := cfg.KeyFile()
	if _, err := os.Stat(kf); !errors.Is(err, fs.ErrNotExist) {
		return Result{}, false
	}
	n, err := session.SealedCount(db)
	if err != nil || n == 0 {
		return Result{}, false
	}
	return fail("key file", "put the key file back (backups do not contain it), or set ACCORDS_MCP_SECRET_KEY to the same key; "+
		"if the key is lost, stop the server and run accords-mcp doctor --forget-sealed-sessions, then configure those sessions again",
		"%s is missing but %d stored session(s) are sealed with it; the server refuses to start", kf, n), true
}

func auditKeyCheck(cfg config.Config) Result {
	if strings.TrimSpace(cfg.AuditKey) != "" {
		if _, err := audit.LoadKey(audit.KeySpec{Env: cfg.AuditKey}, false); err != nil {
			return fail("audit key", "set ACCORDS_MCP_AUDIT_KEY to 32 bytes in hex or base64, or unset it to use the key file", "%v", err)
		}
		return ok("audit key", "from ACCORDS_MCP_AUDIT_KEY (the key file is not used)")
	}
	kf := cfg.AuditKeyFile
	if _, err := os.Stat(kf); errors.Is(err, fs.ErrNotExist) {
		return ok("audit key", "%s does not exist yet; it is created on first start", kf)
	}
	if r := perm("audit key", kf, 0o600, false, "chmod 600 "+shellQuote(kf)); r.Status != OK {
		return r
	}
	k, err := audit.LoadKey(audit.KeySpec{File: kf, DataDir: cfg.DataDir()}, false)
	if err != nil {
		return fail("audit key", "move the key out of the database folder (ACCORDS_MCP_AUDIT_KEY_FILE) or restore it from where you keep it", "%v", err)
	}
	return ok("audit key", "%s (outside the database folder); public key %s", kf, k.VerifierKey)
}

// perm fails when path is not private to this user: see private for what
// that means on this system.
func perm(check, path string, want fs.FileMode, isDir bool, hint string) Result {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if isDir {
			return ok(check, "%s does not exist yet; it is created 0700 on first start", path)
		}
		return skip(check, "%s does not exist", path)
	}
	if err != nil {
		return fail(check, "check the path and its parents", "%s: %v", path, err)
	}
	return private(check, path, fi, want, hint)
}

// Inputs are what the database checks need.
type Inputs struct {
	DB       *store.DB
	Sessions *session.Service
	// Scope whose session is probed (default "default").
	Scope string
	// Index reports the search index's consistency with the store; nil
	// when this build has no index.
	Index func(ctx context.Context) IndexState
	// SessionsUnavailable, when set, says why sessions cannot be read.
	SessionsUnavailable string
	// AuditKey checks the log's signatures; AuditKeyProblem says why it
	// could not be loaded.
	AuditKey        *audit.Key
	AuditKeyProblem string
	// Probe contacts Vaultclaw (HTTPProbe when nil).
	Probe func(ctx context.Context, s session.Session) (int, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// IndexState is the index's view of its consistency with the store.
type IndexState struct {
	Documents int
	// StoreRev and IndexRev are the catalog revision in bbolt and the one
	// the index was built at; they must match.
	StoreRev, IndexRev uint64
	// Rebuilding says the daemon is rebuilding the index in the background
	// (it started without a usable one).
	Rebuilding bool
	Err        error
}

// Database runs the checks that read the open database.
func Database(ctx context.Context, in Inputs) []Result {
	var rs []Result
	v, err := in.DB.SchemaVersion()
	latest := migrations.Latest()
	switch {
	case err != nil:
		rs = append(rs, fail("schema version", "restore a backup (accords-mcp restore FILE)", "cannot read: %v", err))
	case v > latest:
		rs = append(rs, fail("schema version", "upgrade accords-mcp, or restore a backup taken by this version", "%d is newer than this binary (supports %d)", v, latest))
	case v < latest:
		rs = append(rs, ok("schema version", "%d; migrated to %d on the next start (a copy is kept aside)", v, latest))
	default:
		rs = append(rs, ok("schema version", "%d (latest)", v))
	}
	if r, ok := storeCheck(ctx, in); ok {
		rs = append(rs, r)
	}
	rs = append(rs, indexCheck(ctx, in))
	chain, retention := auditCheck(in)
	rs = append(rs, chain)
	if retention != nil {
		rs = append(rs, *retention)
	}
	if r, ok := witnessCheck(in); ok {
		rs = append(rs, r)
	}
	rs = append(rs, vaultCheck(ctx, in))
	return rs
}

// storeCheck reports the etcd cluster behind an etcd store (false on bbolt).
func storeCheck(ctx context.Context, in Inputs) (Result, bool) {
	if in.DB.Kind() != store.KindEtcd {
		return Result{}, false
	}
	st, err := in.DB.EtcdStatus(ctx)
	if err != nil {
		return fail("store", "check that etcd runs and ACCORDS_MCP_STORE, ACCORDS_MCP_ETCD_* point at it", "%s: %v", in.DB.Path(), err), true
	}
	if !st.Leader {
		return fail("store", "the cluster has no leader: check that a majority of its members run", "%s: no leader", in.DB.Path()), true
	}
	return ok("store", "%s: etcd %s, revision %d, %d keys of this deployment, %d replica(s) live, cluster db %s",
		in.DB.Path(), st.ServerVer, st.Revision, st.Keys, st.Replicas, humanBytes(st.DBSize)), true
}

func indexCheck(ctx context.Context, in Inputs) Result {
	if in.Index == nil {
		return skip("index", "this build has no search index")
	}
	st := in.Index(ctx)
	switch {
	case st.Rebuilding:
		return ok("index", "being rebuilt in the background from the store (revision %d); searches wait until it is done", st.StoreRev)
	case st.Err != nil:
		return fail("index", "run accords-mcp reindex (the index is derived from the store and safe to rebuild)", "%v", st.Err)
	case st.StoreRev != st.IndexRev:
		return fail("index", "run accords-mcp reindex, or restart: the daemon rebuilds an index that is behind", "index is at catalog revision %d, store is at %d", st.IndexRev, st.StoreRev)
	}
	return ok("index", "%d documents, consistent with the store (revision %d)", st.Documents, st.StoreRev)
}

// countPruneWindow is how recent a retention pass the count bound drove
// must be for doctor to warn of it.
const countPruneWindow = 24 * time.Hour

// retentionCheck WARNs when a recent retention pass was driven by the count
// bound: receipts left before they aged out.
func retentionCheck(in Inputs, rep audit.Report) Result {
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	b := rep.Base
	if b == nil || b.Kind != audit.BaseRetention {
		return ok("audit retention", "no receipt removed by retention")
	}
	at, _ := time.Parse(time.RFC3339, b.Time)
	what := fmt.Sprintf("the newest retention pass (%s) removed receipts up to %d: %d by the count bound, %d by the age bound; %d kept under the tenant floor",
		b.Time, b.Size, b.RemovedByCount, b.RemovedByAge, b.Kept)
	if b.RemovedByCount > 0 && now().Sub(at) < countPruneWindow {
		return warn("audit retention", "a burst of receipts filled the count of ACCORDS_MCP_AUDIT_RETENTION: see who wrote them with accords-mcp audit tail, and raise the count if the volume is legitimate (each tenant's newest ACCORDS_MCP_AUDIT_TENANT_FLOOR receipts stayed)",
			"%s", what)
	}
	return ok("audit retention", "%s", what)
}

func auditCheck(in Inputs) (Result, *Result) {
	opts := audit.VerifyOptions{}
	if in.AuditKey != nil {
		opts.Verifier = in.AuditKey.Verifier()
	}
	rep, err := audit.Verify(in.DB, opts)
	if err != nil {
		return fail("audit chain", "restore a backup whose log verifies", "cannot read the audit log: %v", err), nil
	}
	retention := retentionCheck(in, rep)
	res := auditChainCheck(in, rep)
	if res.Status != FAIL {
		// A failure stored at start stands until acknowledged.
		if p, err := audit.RecordedProblem(in.DB); err == nil && p != nil {
			res = fail("audit chain", "keep a copy of the database, look into it (accords-mcp audit verify --checkpoint ANCHOR), then restore a backup or accept it with accords-mcp audit acknowledge --note TEXT",
				"the server recorded a verification failure at start (%s at receipt %d): %s; write tools are refused until acknowledged", p.Kind, p.Seq, p.Message)
		}
	}
	return res, &retention
}

func auditChainCheck(in Inputs, rep audit.Report) Result {
	if !rep.OK {
		detail := "does not verify"
		if rep.Problem != nil {
			detail = fmt.Sprintf("receipt %d %s: %s", rep.Problem.Seq, rep.Problem.Kind, rep.Problem.Message)
		}
		hint := "the log was altered outside accords-mcp: keep this file for investigation, then restore a backup or accept it with accords-mcp audit acknowledge --note TEXT"
		if rep.Legacy {
			hint = "start the server once: it signs the log written by the older version"
		}
		return fail("audit chain", hint, "%s", detail)
	}
	if in.AuditKey == nil {
		why := in.AuditKeyProblem
		if why == "" {
			why = "no audit key"
		}
		return fail("audit chain", "restore the audit key (ACCORDS_MCP_AUDIT_KEY_FILE) from where you keep it, or acknowledge the log under a new key",
			"chain and tree verify (%d receipts) but checkpoint signatures cannot be checked: %s", rep.Count, why)
	}
	if rep.Count == 0 {
		return ok("audit chain", "empty (no tool calls recorded yet)")
	}
	detail := fmt.Sprintf("%d receipts verify (seq %d..%d); %d signed checkpoints match", rep.Count, rep.FirstSeq, rep.LastSeq, rep.Checkpoints)
	if rep.Kept > 0 {
		detail += fmt.Sprintf("; %d kept below the retention base under the tenant floor verify against it", rep.Kept)
	}
	if n := len(rep.Restores); n > 0 {
		newest, _, _ := strings.Cut(rep.Restores[n-1].Note, " [replaced ")
		detail += fmt.Sprintf("; restored %d time(s), the newest: %s", n, newest)
	}
	if rep.Newest != nil {
		detail += fmt.Sprintf(", newest covers %d", rep.Newest.Size)
	}
	if len(rep.Acknowledged) > 0 {
		detail += fmt.Sprintf("; %d acknowledged break(s)", len(rep.Acknowledged))
	}
	return ok("audit chain", "%s", detail)
}

func vaultCheck(ctx context.Context, in Inputs) Result {
	scope := in.Scope
	if scope == "" {
		scope = "default"
	}
	name := "vault"
	if in.Sessions == nil {
		why := in.SessionsUnavailable
		if why == "" {
			why = "no session service"
		}
		return skip(name, "not checked: %s", why)
	}
	s, err := in.Sessions.Resolve(ctx, scope)
	if err != nil {
		ae := apperr.As(err)
		if ae.Code == apperr.CodeSessionNotConfigured && ae.Details["reason"] == nil {
			if ae.Details["cleared"] == true {
				return skip(name, "the session of scope %q was cleared (vaultclaw_session_clear or accords-mcp session clear); it stays cleared, VC_AGENT_TOKEN included, until the next configure", scope)
			}
			return skip(name, "no session configured for scope %q and VC_AGENT_TOKEN is not set", scope)
		}
		return fail(name, "set the original ACCORDS_MCP_SECRET_KEY / key file, or configure the session again (vaultclaw_session_configure)", "session of scope %q: %s", scope, ae.Message)
	}
	probe := in.Probe
	if probe == nil {
		probe = HTTPProbe
	}
	start := time.Now()
	status, err := probe(ctx, s)
	d := time.Since(start).Round(time.Millisecond)
	where := fmt.Sprintf("%s (%s session, token %s)", s.BaseURL, s.Source, session.Mask(s.Token))
	switch {
	case err != nil:
		return fail(name, "is Vaultclaw running and the base URL / socket right? (VC_BASE_URL, VC_UNIX_SOCKET, or vaultclaw_session_configure)", "GET /v0/connectors on %s failed after %s: %s", where, d, redact(err.Error(), s.Token))
	case status == 401 || status == 403:
		return fail(name, "the agent token was rejected; mint a new one and configure the session again", "GET /v0/connectors on %s: HTTP %d", where, status)
	case status >= 400:
		return fail(name, "check the Vaultclaw logs", "GET /v0/connectors on %s: HTTP %d", where, status)
	}
	return ok(name, "GET /v0/connectors on %s: HTTP %d in %s", where, status, d)
}

// redact removes the token from a message, should a transport error ever
// echo a header.
func redact(msg, token string) string {
	return redactpkg.Token(msg, token, session.Mask(token))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " '\"$`\\") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/caller"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register("doctor", "check the installation (paths, permissions, daemon, schema, index, audit chain, Vaultclaw); exit 1 on any FAIL", runDoctor)
}

func runDoctor(ctx context.Context, env *environment, args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	scope := fs.String("scope", caller.DefaultScope, "tenant scope whose Vaultclaw session is probed")
	asJSON := fs.Bool("json", false, "print the results as a JSON array")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp doctor:", err)
		return 1
	}
	rs := doctorResults(ctx, env, cfg, *scope)
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rs)
	} else {
		doctor.Write(env.stdout, rs)
	}
	if doctor.Failed(rs) {
		return 1
	}
	return 0
}

// doctorResults are the file checks, the daemon line, and the database
// checks: run inside the daemon when one owns the database (with this
// command's Vault session when it has a token), else on the file opened
// read-only.
func doctorResults(ctx context.Context, env *environment, cfg config.Config, scope string) []doctor.Result {
	sock := control.SocketPath(cfg.DBPath)
	rs := doctor.Files(cfg, sock)
	b, w, closeFn, err := openBackend(ctx, env, cfg)
	if err != nil {
		return append(rs, doctor.Result{Check: "daemon", Status: doctor.FAIL, Detail: err.Error(),
			Hint: "run doctor as the user the daemon runs as"})
	}
	defer closeFn()
	if w.remote {
		st := w.daemon
		rs = append(rs, doctor.Result{Check: "daemon", Status: doctor.OK,
			Detail: fmt.Sprintf("running: pid %d, version %s, %s, %s, since %s, %d client(s) attached; database checks run inside it", st.PID, st.Version, st.Mode, describeTransports(st), st.StartedAt.Format(time.RFC3339), len(st.Clients))})
		dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		remote, err := b.Doctor(dctx, scope, commandEnv(cfg))
		if err != nil {
			return append(rs, doctor.Result{Check: "database", Status: doctor.FAIL, Detail: err.Error(), Hint: "check the daemon's log"})
		}
		return append(rs, remote...)
	}
	if dbIsNew(cfg.DBPath) {
		return append(rs, doctor.Result{Check: "daemon", Status: doctor.SKIP, Detail: "no database yet"})
	}
	local, err := b.Doctor(ctx, scope, commandEnv(cfg))
	switch {
	case err == nil:
		detail := "not running (the database is not locked)"
		if fi, serr := os.Lstat(sock); serr == nil && fi.Mode()&fs.ModeSocket != 0 {
			detail += "; a stale control socket is left over and is replaced on the next start"
		}
		rs = append(rs, doctor.Result{Check: "daemon", Status: doctor.OK, Detail: detail})
		return append(rs, local...)
	case errors.Is(err, store.ErrLocked):
		return append(rs, doctor.Result{Check: "daemon", Status: doctor.FAIL,
			Detail: fmt.Sprintf("the database is locked by a process that does not answer on %s", sock),
			Hint:   "another program holds the file (an accords-mcp command in progress, or an older accords-mcp without a control socket?); find it with: fuser " + cfg.DBPath + " (or lsof)"})
	case errors.Is(err, store.ErrNewerSchema):
		return append(rs, doctor.Result{Check: "schema version", Status: doctor.FAIL, Detail: err.Error(), Hint: "upgrade accords-mcp, or restore a backup taken by this version"})
	default:
		return append(rs, doctor.Result{Check: "database", Status: doctor.FAIL, Detail: err.Error(), Hint: "restore the last good backup: accords-mcp restore FILE"})
	}
}

// localSessions builds the session service for doctor without creating a
// key file: with no key at all, stored sessions are reported as unreadable;
// nil when the configured key itself is unusable.
func localSessions(cfg config.Config, db *store.DB) *session.Service {
	var keys *keyring.Keyring
	var err error
	if strings.TrimSpace(cfg.SecretKey) == "" {
		if _, serr := os.Stat(cfg.KeyFile()); errors.Is(serr, fs.ErrNotExist) {
			k := make([]byte, keyring.KeySize)
			_, _ = rand.Read(k)
			keys, err = keyring.New(k)
		}
	}
	if keys == nil && err == nil {
		keys, err = keyring.Load(cfg.SecretKey, cfg.KeyFile())
	}
	if err != nil {
		return nil
	}
	return session.New(db, keys, session.Defaults{Token: cfg.VaultToken, BaseURL: cfg.VaultBaseURL, TimeoutMS: cfg.VaultTimeoutMS, UnixSocket: cfg.VaultUnixSocket})
}

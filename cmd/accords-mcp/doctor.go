package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/ops/doctor"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var scope string
		var asJSON, forget bool
		c := &cobra.Command{
			Use:   "doctor",
			Short: "check the installation (paths, permissions, daemon, schema, index, audit chain, Vaultclaw); exit 1 on any FAIL",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return exit(runDoctor(cmd.Context(), env, scope, asJSON, forget))
			},
		}
		c.Flags().StringVar(&scope, "scope", caller.DefaultScope, "tenant scope whose Vaultclaw session is probed")
		c.Flags().BoolVar(&asJSON, "json", false, "print the results as a JSON array")
		c.Flags().BoolVar(&forget, "forget-sealed-sessions", false, "delete the stored sessions sealed with a secret key that is lost (the server must be stopped), then check")
		return c
	})
}

func runDoctor(ctx context.Context, env *environment, scope string, asJSON, forget bool) int {
	cfg, err := env.config()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp doctor:", err)
		return 1
	}
	if forget {
		if code := forgetSealedSessions(env, cfg); code != 0 {
			return code
		}
	}
	rs := doctorResults(ctx, env, cfg, scope)
	if asJSON {
		printJSON(env, rs)
	} else {
		doctor.Write(env.stdout, rs)
	}
	if doctor.Failed(rs) {
		return 1
	}
	return 0
}

// doctorResults are the file, daemon and database checks: inside the daemon
// when one owns the database, else on the file opened read-only.
func doctorResults(ctx context.Context, env *environment, cfg config.Config, scope string) []doctor.Result {
	sock := control.SocketPath(cfg.DBPath)
	rs := doctor.Files(cfg, sock)
	b, w, closeFn, err := openBackend(ctx, env, cfg)
	if err != nil {
		hint := "run doctor as the user the daemon runs as"
		if errors.Is(err, control.ErrUntrusted) {
			hint = "the socket or its folder may be another user's: keep the database in a folder of your own (ACCORDS_MCP_DB)"
		}
		return append(rs, doctor.Result{Check: "daemon", Status: doctor.FAIL, Detail: err.Error(), Hint: hint})
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
	if storeIsNew(cfg) {
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
		if db, err := app.OpenStore(cfg, store.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond}); err == nil {
			if r, bad := doctor.SealedWithoutKey(cfg, db); bad {
				// It replaces the file check's "created on first start".
				for i := range rs {
					if rs[i].Check == r.Check {
						rs[i] = r
					}
				}
			}
			db.Close()
		}
		return append(rs, local...)
	case errors.Is(err, store.ErrLocked):
		return append(rs, doctor.Result{Check: "daemon", Status: doctor.FAIL,
			Detail: fmt.Sprintf("the database is locked by a process that does not answer on %s", sock),
			Hint:   "another program holds the file (an accords-mcp command in progress, or an older accords-mcp without a control socket?); find it with: fuser " + cfg.DBPath + " (or lsof)"})
	case errors.Is(err, store.ErrDamaged):
		return append(rs, doctor.Result{Check: "database", Status: doctor.FAIL, Detail: err.Error(),
			Hint: "check a backup with accords-mcp restore --check FILE, then restore it with accords-mcp restore FILE (the damaged file is kept aside)"})
	case errors.Is(err, store.ErrNewerSchema):
		return append(rs, doctor.Result{Check: "schema version", Status: doctor.FAIL, Detail: err.Error(), Hint: "upgrade accords-mcp, or restore a backup taken by this version"})
	default:
		return append(rs, doctor.Result{Check: "database", Status: doctor.FAIL, Detail: err.Error(), Hint: "restore the last good backup: accords-mcp restore FILE"})
	}
}

// doctorKeys loads the configured key without creating a key file: with no
// key at all it is a random one, which opens nothing.
func doctorKeys(cfg config.Config) (*keyring.Keyring, error) {
	if strings.TrimSpace(cfg.SecretKey) == "" {
		if _, err := os.Stat(cfg.KeyFile()); errors.Is(err, fs.ErrNotExist) {
			k := make([]byte, keyring.KeySize)
			_, _ = rand.Read(k)
			return keyring.New(k)
		}
	}
	return keyring.Load(cfg.SecretKey, cfg.KeyFile())
}

// localSessions builds doctor's session service without creating a key
// file; nil when the configured key is unusable.
func localSessions(cfg config.Config, db *store.DB) *session.Service {
	keys, err := doctorKeys(cfg)
	if err != nil {
		return nil
	}
	return session.New(db, keys, commandEnv(cfg))
}

// forgetSealedSessions deletes the sessions the configured key cannot open;
// it refuses while the server runs.
func forgetSealedSessions(env *environment, cfg config.Config) int {
	db, err := app.OpenStore(cfg, store.Options{LockTimeout: 300 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp doctor: --forget-sealed-sessions needs the server stopped:", err)
		return 1
	}
	defer db.Close()
	keys, err := doctorKeys(cfg)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp doctor: the secret key cannot be loaded, so nothing is forgotten:", err)
		return 1
	}
	n, err := session.ForgetUnreadable(db, keys)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp doctor:", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "doctor: forgot %d session(s) the secret key cannot open; configure them again (vaultclaw_session_configure)\n", n)
	return 0
}
